"""The share-group side of the group coordinator, as Kafka 4.3's `GroupMetadataManager`
(KIP-932).

`heartbeat()` is ShareGroupHeartbeat: a member joins with epoch 0 and its subscribed topic
names, heartbeats with its epoch, and leaves with -1. A member joining, leaving or changing
its subscription, or a change of the subscribed topics (created, deleted, grown: seen at the
next heartbeat, as Kafka's metadata refresh), bumps the group epoch; the target assignment is
then recomputed by the simple assignor (`assignor.py`) and each member takes its target at
its next heartbeat, with the assignment epoch as its member epoch (no revocation: partitions
are shared). Members that miss their session timeout (`share.session.timeout.ms`, a GROUP
config over `group.share.session.timeout.ms`, which the handler passes in) are fenced:
removed, and the group epoch bumped.

`member_assignment()` tells ShareFetch/ShareAcknowledge which partitions a member may read.

What changed is written to `__consumer_offsets` as Kafka's share-group records (records.py:
ShareGroupMetadata, ShareGroupMemberMetadata, ShareGroupTargetAssignment*,
ShareGroupCurrentMemberAssignment) through `persist`, after each heartbeat and fencing; the
coordinator loads them back with the group's partition (after a restart, or on the new leader
of that partition), members going on at their epochs. Errors are raised as `ShareGroupError`
(Kafka's code and message) and answered by the handler. Nothing here awaits.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.consumer.model import Assignment, TopicInfo, copy_assignment
from minibroker.groups.record_codec import StoredRecord
from minibroker.groups.settings import ShareSettings
from minibroker.groups.share.assignor import ShareMemberSpec, assign
from minibroker.groups.share.model import LEAVE_GROUP_MEMBER_EPOCH, ShareGroup, ShareMember
from minibroker.groups.share.records import changes, metadata_hash
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class ShareGroupError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass(frozen=True, slots=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str
    client_host: str
    # The group's `share.session.timeout.ms` and `share.heartbeat.interval.ms` (its GROUP
    # config over the broker's `group.share.*` settings).
    session_timeout_ms: int
    heartbeat_interval_ms: int


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _invalid(message: str) -> ShareGroupError:
    return ShareGroupError(ErrorCode.INVALID_REQUEST, message)


def _empty_string(value: str | None) -> bool:
    return value is not None and not value.strip()


def check_request(request: ShareHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
    if _empty_string(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if _empty_string(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if _empty_string(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise _invalid("SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")


def check_member_epoch(member: ShareMember, received: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid: the current epoch, or the previous one
    (the answer with the new epoch may have been lost)."""
    if received > member.member_epoch:
        raise ShareGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise ShareGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The share group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}), and it does not match "
            f"the previous member epoch ({member.previous_member_epoch}). The member must "
            "abandon all its partitions and rejoin.",
        )


def _unknown_member(group: ShareGroup, member_id: str) -> ShareGroupError:
    return ShareGroupError(
        ErrorCode.UNKNOWN_MEMBER_ID,
        f"Member {member_id} is not a member of group {group.group_id}.",
    )


class ShareGroups:
    """The share groups' protocol logic. `lookup(group_id, create)` gives the group (the
    coordinator keeps them): a new one when `create`, None when there is none, and raises
    GROUP_ID_NOT_FOUND when the id belongs to another kind of group."""

    def __init__(
        self,
        config: BrokerConfig,
        cluster: Cluster,
        lookup: Callable[[str, bool], ShareGroup | None],
    ) -> None:
        self.settings = ShareSettings.from_config(config)
        self.cluster = cluster
        self._lookup = lookup
        # Told (group id, member id) when a member is fenced (its session timed out): the
        # broker releases the records it holds and closes its share sessions. A member that
        # leaves does that itself with its last ShareFetch/ShareAcknowledge (epoch -1), which
        # clients may send after the leaving heartbeat.
        self.member_fenced: Callable[[str, str], None] = lambda group_id, member_id: None
        # Appends a group's records to `__consumer_offsets`; the error if that fails.
        self.append: Callable[[str, list[StoredRecord]], ErrorCode] = lambda group_id, records: (
            ErrorCode.NO_ERROR
        )

    # ---- persistence -----------------------------------------------------------------------

    def persist(self, group: ShareGroup) -> ErrorCode:
        """Write what changed in the group since its records were last written."""
        records = changes(group)
        if not records:
            return ErrorCode.NO_ERROR
        error = self.append(group.group_id, records)
        if error != ErrorCode.NO_ERROR:
            group.written = {}  # unknown: the next write rewrites every record
            log.warning("share group %s: records not written: %s", group.group_id, error.name)
        return error

    def _persist_or_raise(self, group: ShareGroup) -> None:
        error = self.persist(group)
        if error != ErrorCode.NO_ERROR:
            raise ShareGroupError(error)

    def loaded(self, group: ShareGroup, written_hash: int) -> None:
        """A group restored from its records: its subscribed topics as they are now (changed
        since: the next heartbeat bumps the epoch), and each member's session armed with the
        broker's `group.share.session.timeout.ms` until its next heartbeat."""
        group.subscription_metadata = self._subscription_metadata(group)
        if metadata_hash(group.subscription_metadata) != written_hash:
            group.subscription_metadata = {}
        for member in group.members.values():
            self._arm_session(group, member, self.settings.session_timeout_ms)

    # ---- for ShareFetch / ShareAcknowledge -------------------------------------------------

    def member_assignment(self, group_id: str, member_id: str) -> set[tuple[uuid.UUID, int]] | None:
        """The partitions (topic id, partition) the member of the share group may fetch from
        now: its current assignment, as its last heartbeat answered it. None when there is no
        such share group or no such member in it (unknown, left or fenced: ShareFetch answers
        UNKNOWN_MEMBER_ID, as Kafka). An empty set is a member with nothing assigned."""
        group = self._lookup_quietly(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return None
        return {(topic_id, p) for topic_id, parts in member.assigned.items() for p in parts}

    def _lookup_quietly(self, group_id: str) -> ShareGroup | None:
        try:
            return self._lookup(group_id, False)
        except ShareGroupError:
            return None

    # ---- ShareGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(self, request: ShareHeartbeatRequest) -> ShareHeartbeatResult:
        check_request(request)
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(request.group_id, request.member_id)
        joining = request.member_epoch == 0
        group = self._lookup(request.group_id, joining)
        if group is None:
            raise ShareGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {request.group_id} not found."
            )
        self._check_not_full(group, request.member_id)
        member = group.members.get(request.member_id)
        if member is None:
            if not joining:
                raise _unknown_member(group, request.member_id)
            member = group.members[request.member_id] = ShareMember(request.member_id)
            log.info("group %s: member %s joins", group.group_id, member.member_id)
        check_member_epoch(member, request.member_epoch)
        before = copy_assignment(member.assigned)
        self._advance(group, member, self._update_member(member, request))
        self._arm_session(group, member, request.session_timeout_ms)
        self._persist_or_raise(group)
        full = joining or request.subscribed_topic_names is not None
        return ShareHeartbeatResult(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=request.heartbeat_interval_ms,
            assignment=copy_assignment(member.assigned)
            if full or before != member.assigned
            else None,
        )

    def _check_not_full(self, group: ShareGroup, member_id: str) -> None:
        if len(group.members) >= self.settings.max_size and member_id not in group.members:
            raise ShareGroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The share group has reached its maximum capacity of "
                f"{self.settings.max_size} members.",
            )

    @staticmethod
    def _update_member(member: ShareMember, request: ShareHeartbeatRequest) -> bool:
        """Apply the request to the member; True if its subscription changed."""
        member.client_id = request.client_id
        member.client_host = request.client_host
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        names = request.subscribed_topic_names
        if names is None or frozenset(names) == member.subscribed_topic_names:
            return False
        member.subscribed_topic_names = frozenset(names)
        return True

    def _advance(self, group: ShareGroup, member: ShareMember, subscription_changed: bool) -> None:
        """Bump the group epoch if the subscription or the subscribed topics changed,
        recompute the target assignment if the epoch moved on, and give the member its
        target (Kafka's ShareGroupAssignmentBuilder)."""
        metadata = self._subscription_metadata(group)
        if subscription_changed or metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            group.group_epoch += 1
            log.info("group %s: epoch bumped to %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            self._update_target_assignment(group)
        if member.member_epoch != group.assignment_epoch or subscription_changed:
            member.take(
                group.assignment_epoch, copy_assignment(group.target.get(member.member_id, {}))
            )

    def _subscription_metadata(self, group: ShareGroup) -> dict[str, TopicInfo]:
        metadata = {}
        for name in sorted(group.subscribed_topic_names()):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                metadata[name] = TopicInfo(topic.topic_id, name, len(topic.partitions))
        return metadata

    @staticmethod
    def _update_target_assignment(group: ShareGroup) -> None:
        specs = {
            member_id: ShareMemberSpec(
                member.subscribed_topic_names, group.target.get(member_id, {})
            )
            for member_id, member in group.members.items()
        }
        group.target = assign(specs, group.subscription_metadata)
        group.assignment_epoch = group.group_epoch

    # ---- leave, session timeouts -----------------------------------------------------------

    def _leave(self, group_id: str, member_id: str) -> ShareHeartbeatResult:
        group = self._lookup(group_id, False)
        if group is None:
            raise ShareGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            raise _unknown_member(group, member_id)
        log.info("group %s: member %s left", group_id, member_id)
        self.remove_member(group, member)
        self._persist_or_raise(group)
        return ShareHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH)

    def _arm_session(self, group: ShareGroup, member: ShareMember, timeout_ms: int) -> None:
        member.session.start(
            timeout_ms,
            lambda: self._fence(group, member, "its session timed out"),
        )

    def _fence(self, group: ShareGroup, member: ShareMember, reason: str) -> None:
        if group.members.get(member.member_id) is not member:
            return
        log.info("group %s: member %s removed: %s", group.group_id, member.member_id, reason)
        self.remove_member(group, member)
        self.persist(group)
        self.member_fenced(group.group_id, member.member_id)

    def remove_member(self, group: ShareGroup, member: ShareMember) -> None:
        """Kafka's shareGroupFenceMember: the member goes and the group epoch is bumped."""
        group.remove(member.member_id)
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)
