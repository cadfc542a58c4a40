"""The KIP-848 side of the group coordinator, as Kafka 4.3's `GroupMetadataManager`.

`heartbeat()` is ConsumerGroupHeartbeat: a member joins with epoch 0, heartbeats with its
epoch, leaves with -1 (or -2, a static member that will come back). A change of a member's
subscription, or of the partitions of the topics the group subscribes to (created, deleted,
grown: seen at the next heartbeat, as Kafka's metadata refresh), bumps the group epoch; the
target assignment is then recomputed with the group's server-side assignor, and every
member reconciles towards it (`reconcile.py`). Members that miss their session timeout, or
do not revoke partitions within their rebalance timeout, are fenced: removed, and the group
epoch bumped.

Errors are raised as `ConsumerGroupError` (Kafka's code and message) and answered by the
handler. Nothing here awaits.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from minibroker.cluster.state import INTERNAL_TOPICS, Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.consumer.assignors import ASSIGNORS, MemberSpec
from minibroker.groups.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicInfo,
    copy_assignment,
    same_assignment,
)
from minibroker.groups.consumer.persist import changes, now_ms
from minibroker.groups.consumer.reconcile import reconcile
from minibroker.groups.consumer.regex import InvalidRegex, compile_re2
from minibroker.groups.record_codec import StoredRecord
from minibroker.groups.settings import ConsumerSettings
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

# The first ConsumerGroupHeartbeat version whose member id the client generates (KIP-1082).
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
# Members of consumer groups commit with OffsetCommit v9+ (KIP-848).
OFFSET_COMMIT_MIN_VERSION = 9


class GroupConsumerConfig(Protocol):
    """What the consumer protocol reads of a group's GROUP config (group_configs.py)."""

    @property
    def consumer_session_timeout_ms(self) -> int: ...

    @property
    def consumer_heartbeat_interval_ms(self) -> int: ...


class ConsumerGroupError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: Assignment | None
    client_id: str
    client_host: str
    api_version: int
    describable: Callable[[Iterable[str]], set[str]] | None = None
    """The topics among these the member may DESCRIBE (its regex resolves only to those)."""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _invalid(message: str) -> ConsumerGroupError:
    return ConsumerGroupError(ErrorCode.INVALID_REQUEST, message)


def _empty_string(value: str | None) -> bool:
    return value is not None and not value.strip()


def check_request(request: HeartbeatRequest, assignors: list[str]) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    epoch = request.member_epoch
    if (
        request.api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        or epoch > 0
        or epoch == LEAVE_GROUP_MEMBER_EPOCH
    ) and _empty_string(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if _empty_string(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if _empty_string(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _empty_string(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if not request.subscribed_topic_names and not request.subscribed_topic_regex:
            raise _invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise ConsumerGroupError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}.",
        )


def compile_subscription_regex(regex: str) -> re.Pattern[str]:
    try:
        return compile_re2(regex)
    except InvalidRegex as exc:
        raise ConsumerGroupError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression.",
        ) from exc


def _is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(parts <= assigned.get(topic_id, set()) for topic_id, parts in owned.items())


def check_member_epoch(member: ConsumerMember, received: int, owned: Assignment | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid."""
    if received > member.member_epoch:
        raise ConsumerGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not _is_subset(owned, member.assigned)
    ):
        raise ConsumerGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin.",
        )


class ConsumerGroups:
    """The consumer groups' protocol logic. `lookup(group_id, create)` gives the group (the
    coordinator keeps them), raising GROUP_ID_NOT_FOUND as Kafka's
    getOrMaybeCreateConsumerGroup."""

    def __init__(
        self,
        config: BrokerConfig,
        cluster: Cluster,
        lookup: Callable[[str, bool], ConsumerGroup],
        append: Callable[[str, list[StoredRecord]], ErrorCode],
    ) -> None:
        self.settings = ConsumerSettings.from_config(config)
        self.cluster = cluster
        self._lookup = lookup
        self._append = append
        # Called after a member left or was fenced (the coordinator's online downgrade).
        self.after_removal: Callable[[ConsumerGroup, ConsumerMember], None] = lambda g, m: None
        # The group's GROUP config (consumer.session.timeout.ms, consumer.heartbeat.interval.ms)
        # when the broker has one (`use_group_configs`); the broker's settings otherwise.
        self._group_config: Callable[[str], GroupConsumerConfig] | None = None

    def use_group_configs(self, group_config: Callable[[str], GroupConsumerConfig]) -> None:
        self._group_config = group_config

    # ---- settings --------------------------------------------------------------------------

    def session_timeout_ms(self, group_id: str) -> int:
        if self._group_config is None:
            return self.settings.session_timeout_ms
        return self._group_config(group_id).consumer_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        if self._group_config is None:
            return self.settings.heartbeat_interval_ms
        return self._group_config(group_id).consumer_heartbeat_interval_ms

    # ---- persistence -----------------------------------------------------------------------

    def persist(self, group: ConsumerGroup, member: ConsumerMember | None = None) -> ErrorCode:
        """Write what changed in the group to __consumer_offsets (`member`: the one whose
        request this was, when no other member was added or removed)."""
        records = changes(group, member)
        if not records:
            return ErrorCode.NO_ERROR
        error = self._append(group.group_id, records)
        if error != ErrorCode.NO_ERROR:
            group.written = {}  # unknown: the next write rewrites every record
            group.written_members = set()
            log.warning("group %s: records not written: %s", group.group_id, error.name)
        return error

    def _persist_or_raise(self, group: ConsumerGroup, member: ConsumerMember | None) -> None:
        error = self.persist(group, member)
        if error != ErrorCode.NO_ERROR:
            raise ConsumerGroupError(error)

    # ---- ConsumerGroupHeartbeat ------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        check_request(request, self.settings.assignors)
        left = None
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            result, left = self._leave(request)
        else:
            result = self._heartbeat(request)
        group = self._group(request.group_id, create=False)
        self._persist_or_raise(group, group.members.get(result.member_id))
        if left is not None:
            self.after_removal(group, left)
        return result

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        return self._lookup(group_id, create)

    def _heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        joining = request.member_epoch == 0
        regex = request.subscribed_topic_regex
        pattern = compile_subscription_regex(regex) if regex else None
        group = self._group(request.group_id, joining)
        member_id = request.member_id or _new_member_id()
        if len(group.members) >= self.settings.max_size and member_id not in group.members:
            raise ConsumerGroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.settings.max_size} members.",
            )
        if regex and pattern is not None:
            group.patterns.setdefault(regex, pattern)
        if request.describable is not None:
            group.describable = request.describable
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request)
        else:
            member = self._static_member(group, member_id, request)
        before = copy_assignment(member.assigned)
        member.classic = None
        self.advance(group, member, self._update_member(group, member, request), request.owned)
        self.arm_session(group, member)
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.owned is not None
        )
        changed = not same_assignment(before, member.assigned)
        return HeartbeatResult(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=copy_assignment(member.assigned) if full or changed else None,
        )

    def advance(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        subscription_changed: bool,
        owned: Assignment | None,
    ) -> None:
        """After a member's request: bump the group epoch if its subscription or the
        subscribed topics changed, recompute the target assignment if the epoch moved on,
        and take the member one reconciliation step."""
        metadata = self._subscription_metadata(group)
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            subscription_changed = True
        if subscription_changed:
            group.group_epoch += 1
            log.info("group %s: epoch bumped to %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            self._update_target_assignment(group)
        self._reconcile(group, member, owned)

    def _dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest
    ) -> ConsumerMember:
        member = group.members.get(member_id)
        if member is None:
            if request.member_epoch != 0:
                raise ConsumerGroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            member = ConsumerMember(member_id)
            group.add(member)
            log.info("group %s: member %s joins", group.group_id, member_id)
            return member
        check_member_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest
    ) -> ConsumerMember:
        instance_id = request.instance_id
        existing = group.static_member(instance_id)
        if request.member_epoch == 0:
            if existing is None:
                member = ConsumerMember(member_id, instance_id=instance_id)
                group.add(member)
                return member
            # A classic member's instance id is taken over at once (Kafka).
            if (
                existing.classic is None
                and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ):
                raise ConsumerGroupError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the "
                    f"group because the instance id is owned by {existing.member_id} member.",
                )
            return self._replace_static_member(group, existing, member_id)
        if existing is None:
            raise ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown."
            )
        self._check_not_fenced(existing, member_id, instance_id)
        check_member_epoch(existing, request.member_epoch, request.owned)
        return existing

    @staticmethod
    def _check_not_fenced(
        existing: ConsumerMember, member_id: str, instance_id: str | None
    ) -> None:
        if existing.member_id != member_id:
            raise ConsumerGroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {existing.member_id}.",
            )

    @staticmethod
    def _replace_static_member(
        group: ConsumerGroup, existing: ConsumerMember, member_id: str
    ) -> ConsumerMember:
        """A static member back under a new member id: it takes over the old one's
        subscription and assignment, at epoch 0 (Kafka's replaceMember)."""
        target = group.target.get(existing.member_id, {})
        group.remove(existing.member_id)
        member = ConsumerMember(
            member_id,
            instance_id=existing.instance_id,
            rack_id=existing.rack_id,
            rebalance_timeout_ms=existing.rebalance_timeout_ms,
            server_assignor=existing.server_assignor,
            subscribed_topic_names=list(existing.subscribed_topic_names),
            subscribed_topic_regex=existing.subscribed_topic_regex,
            state=existing.state,
            assigned=copy_assignment(existing.assigned),
        )
        group.add(member)
        group.target[member_id] = target
        log.info(
            "group %s: static member %s replaces %s", group.group_id, member_id, existing.member_id
        )
        return member

    @staticmethod
    def _update_member(
        group: ConsumerGroup, member: ConsumerMember, request: HeartbeatRequest
    ) -> bool:
        """Apply the request's changes to the member; True if its subscription changed."""
        member.client_id = request.client_id
        member.client_host = request.client_host
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        changed = False
        if (
            request.server_assignor is not None
            and request.server_assignor != member.server_assignor
        ):
            member.server_assignor = request.server_assignor
        names = request.subscribed_topic_names
        if names is not None and sorted(names) != sorted(member.subscribed_topic_names):
            member.subscribed_topic_names = list(names)
            changed = True
        regex = request.subscribed_topic_regex
        if regex is not None and (regex or None) != member.subscribed_topic_regex:
            member.subscribed_topic_regex = regex or None
            changed = True
        return changed

    # ---- subscriptions and target assignment ------------------------------------------------

    def _subscription_metadata(self, group: ConsumerGroup) -> dict[str, TopicInfo]:
        """The existing topics some member subscribes to, by name or regex."""
        names: set[str] = set()
        regexes: set[str] = set()
        for member in group.members.values():
            names.update(member.subscribed_topic_names)
            if member.subscribed_topic_regex:
                regexes.add(member.subscribed_topic_regex)
        group.patterns = {r: p for r, p in group.patterns.items() if r in regexes}
        resolved = {}
        for regex in regexes:
            pattern = group.patterns.get(regex)
            if pattern is None:
                pattern = group.patterns[regex] = compile_subscription_regex(regex)
            matching = self._matching_topics(pattern)
            if group.describable is not None:
                matching = list(group.describable(matching))
            topics = tuple(sorted(matching))
            names.update(topics)
            previous = group.resolved_regexes.get(regex)
            resolved[regex] = previous if previous and previous[0] == topics else (topics, now_ms())
        group.resolved_regexes = resolved
        metadata = {}
        for name in sorted(names):
            topic = self.cluster.topics.get(name)
            if topic is not None:
                metadata[name] = TopicInfo(topic.topic_id, name, len(topic.partitions))
        return metadata

    def _matching_topics(self, pattern: re.Pattern[str]) -> list[str]:
        return [
            name
            for name in self.cluster.topics
            if name not in INTERNAL_TOPICS and pattern.fullmatch(name)
        ]

    def _member_topics(self, group: ConsumerGroup, member: ConsumerMember) -> frozenset[uuid.UUID]:
        wanted = set(member.subscribed_topic_names)
        resolved = group.resolved_regexes.get(member.subscribed_topic_regex or "")
        if resolved is not None:
            wanted.update(resolved[0])
        return frozenset(
            info.topic_id for name, info in group.subscription_metadata.items() if name in wanted
        )

    def _select_assignor(self, group: ConsumerGroup) -> str:
        """The most used assignor among the members' choices, else the first configured."""
        chosen = [m.server_assignor for m in group.members.values() if m.server_assignor]
        if not chosen:
            return self.settings.assignors[0]
        return max(sorted(set(chosen)), key=chosen.count)

    def _update_target_assignment(self, group: ConsumerGroup) -> None:
        group.assignor_name = self._select_assignor(group)
        specs: Mapping[str, MemberSpec] = {
            member_id: MemberSpec(
                self._member_topics(group, member), copy_assignment(group.target.get(member_id, {}))
            )
            for member_id, member in group.members.items()
        }
        topics = {info.topic_id: info.partitions for info in group.subscription_metadata.values()}
        group.target = ASSIGNORS[group.assignor_name](specs, topics)
        group.assignment_epoch = group.group_epoch

    # ---- reconciliation and timers ---------------------------------------------------------

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None
    ) -> None:
        was_revoking = member.state == MemberState.UNREVOKED_PARTITIONS
        step = reconcile(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            group.current_partition_epoch,
            owned,
        )
        if step is not None:
            group.replace_owned(
                member, step.assigned, step.pending_revocation, step.epoch, step.state
            )
        if member.state != MemberState.UNREVOKED_PARTITIONS:
            member.revocation.cancel()
        elif not was_revoking or step is not None:
            self._arm_revocation(group, member)

    def arm_session(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """The member's session timer: the group's consumer session timeout, or the session
        timeout a classic member joined with."""
        timeout = (
            member.classic.session_timeout_ms
            if member.classic is not None
            else self.session_timeout_ms(group.group_id)
        )
        member.session.start(timeout, lambda: self.fence(group, member, "its session timed out"))

    def _arm_revocation(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        epoch = member.member_epoch
        member.revocation.start(
            max(member.rebalance_timeout_ms, 0),
            lambda: self._revocation_expired(group, member, epoch),
        )

    def _revocation_expired(self, group: ConsumerGroup, member: ConsumerMember, epoch: int) -> None:
        if member.state == MemberState.UNREVOKED_PARTITIONS and member.member_epoch == epoch:
            self.fence(group, member, "it did not revoke partitions within the rebalance timeout")

    def fence(self, group: ConsumerGroup, member: ConsumerMember, reason: str) -> None:
        """Remove a member on a timer (session, revocation, classic sync timeout)."""
        if group.members.get(member.member_id) is not member:
            return
        log.info("group %s: member %s removed: %s", group.group_id, member.member_id, reason)
        self.remove_member(group, member)
        self.persist(group)
        self.after_removal(group, member)

    def force_rebalance(self, group: ConsumerGroup) -> int:
        """Bump the group epoch, as a subscription or metadata change does: the target
        assignment is recomputed at the next heartbeat and every member reconciles towards
        it. The new epoch."""
        group.group_epoch += 1
        self.persist(group)
        return group.group_epoch

    def arm_timers(self, group: ConsumerGroup) -> None:
        """After a load: every member's session timer, and revocation timers."""
        for member in group.members.values():
            self.arm_session(group, member)
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                self._arm_revocation(group, member)

    def refresh_metadata(self, group: ConsumerGroup) -> None:
        """After a load: the subscribed topics as they are now. If they changed while the
        broker was down (their hash differs from the one written), the next heartbeat sees
        the change and bumps the group epoch, as any topic change does."""
        group.subscription_metadata = self._subscription_metadata(group)
        if group.subscription_metadata_hash() != group.metadata_hash:
            group.subscription_metadata = {}

    def remove_member(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        group.remove(member.member_id)
        group.group_epoch += 1
        group.subscription_metadata = self._subscription_metadata(group)

    # ---- leave -----------------------------------------------------------------------------

    def _leave(self, request: HeartbeatRequest) -> tuple[HeartbeatResult, ConsumerMember | None]:
        """The answer, and the member if it was removed."""
        group = self._group(request.group_id, create=False)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise ConsumerGroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {group.group_id}.",
                )
            self.remove_member(group, member)
            log.info("group %s: member %s left", group.group_id, member.member_id)
            return HeartbeatResult(request.member_id, request.member_epoch), member
        member = group.static_member(request.instance_id)
        if member is None:
            raise ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
            )
        self._check_not_fenced(member, request.member_id, request.instance_id)
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            group.replace_owned(
                member, member.assigned, {}, LEAVE_GROUP_STATIC_MEMBER_EPOCH, member.state
            )
            member.revocation.cancel()
            return HeartbeatResult(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH), None
        self.remove_member(group, member)
        return HeartbeatResult(request.member_id, request.member_epoch), member

    # ---- offsets ---------------------------------------------------------------------------

    @staticmethod
    def commit_error(
        group: ConsumerGroup,
        member_id: str,
        member_epoch: int,
        transactional: bool,
        api_version: int = 9,
    ) -> ConsumerGroupError | None:
        """Kafka's ConsumerGroup.validateOffsetCommit: epoch -1 (admin clients, `assign()`)
        commits only while the group is empty; otherwise the member must exist, commit with
        OffsetCommit v9+ (unless transactional) and at its current epoch."""
        if member_epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        if member.classic is None and not transactional and api_version < OFFSET_COMMIT_MIN_VERSION:
            return ConsumerGroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        return _stale_epoch(member, member_epoch)

    @staticmethod
    def fetch_error(
        group: ConsumerGroup, member_id: str | None, member_epoch: int
    ) -> ConsumerGroupError | None:
        """Kafka's ConsumerGroup.validateOffsetFetch (OffsetFetch v9+ with a member)."""
        if member_id is None and member_epoch < 0:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ConsumerGroupError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        return _stale_epoch(member, member_epoch)

    def stop(self, group: ConsumerGroup) -> None:
        for member in group.members.values():
            member.stop_timers()


def _stale_epoch(member: ConsumerMember, received: int) -> ConsumerGroupError | None:
    """Kafka's validateMemberEpoch: ILLEGAL_GENERATION for a classic member, else
    STALE_MEMBER_EPOCH."""
    if received == member.member_epoch:
        return None
    if member.classic is not None:
        return ConsumerGroupError(
            ErrorCode.ILLEGAL_GENERATION,
            f"The received generation id {received} does not match the expected member "
            f"epoch {member.member_epoch}.",
        )
    return ConsumerGroupError(
        ErrorCode.STALE_MEMBER_EPOCH,
        f"The received member epoch {received} does not match the expected member epoch "
        f"{member.member_epoch}.",
    )


def _new_member_id() -> str:
    return uuid.uuid4().hex[:22]
