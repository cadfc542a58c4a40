"""Classic members inside a consumer group, and converting groups between the protocols
(KIP-848 online migration, `group.consumer.migration.policy`), as Kafka 4.3's
GroupMetadataManager.

Upgrade: a ConsumerGroupHeartbeat joining a classic group that uses the consumer protocol
and has members turns it into a consumer group: each classic member becomes a member at
the classic generation, with the subscription and assignment of its JoinGroup/SyncGroup,
and goes on with JoinGroup, SyncGroup, Heartbeat and LeaveGroup:
- JoinGroup answers at once: the member's epoch as generation, no leader (it is a follower);
  its subscription (and owned partitions) are applied as a heartbeat's would be;
- SyncGroup answers its current assignment (consumer-protocol bytes: while it revokes, the
  partitions it keeps), or REBALANCE_IN_PROGRESS when the group epoch moved past its
  epoch and it is not revoking;
- Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin for that reason; a member
  that has not rejoined within its rebalance timeout after that is removed.
Downgrade (the coordinator's part): when the last member using the consumer protocol
leaves and only classic members remain, the group becomes a classic group again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.cluster.state import Cluster
from minibroker.groups.consumer.manager import ConsumerGroupError, ConsumerGroups
from minibroker.groups.consumer.model import (
    Assignment,
    ClassicInfo,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from minibroker.groups.consumer.protocol import (
    MalformedConsumerProtocol,
    Subscription,
    encode_assignment,
    parse_assignment,
    parse_subscription,
)
from minibroker.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class ClassicJoin:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


@dataclass(frozen=True, slots=True)
class ClassicMemberState:
    """A classic group's member, as the upgrade takes it over."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    subscription: bytes
    assignment: bytes


def _ids(cluster: Cluster, by_name: Mapping[str, list[int]]) -> Assignment:
    assignment: Assignment = {}
    for name, partitions in by_name.items():
        topic = cluster.topics.get(name)
        if topic is not None and partitions:
            assignment[topic.topic_id] = set(partitions)
    return assignment


def _names(cluster: Cluster, assignment: Assignment) -> dict[str, list[int]]:
    return {
        cluster.topics_by_id[topic_id].name: sorted(partitions)
        for topic_id, partitions in assignment.items()
        if topic_id in cluster.topics_by_id and partitions
    }


def assignment_bytes(cluster: Cluster, assignment: Assignment) -> bytes:
    return encode_assignment(_names(cluster, assignment))


def consumer_group_from_classic(
    group_id: str, generation: int, members: list[ClassicMemberState], cluster: Cluster
) -> ConsumerGroup:
    """Kafka's ConsumerGroup.fromClassicGroup (MalformedConsumerProtocol if a member's
    subscription or assignment does not parse)."""
    group = ConsumerGroup(group_id, group_epoch=generation, assignment_epoch=generation)
    for classic in members:
        subscription = parse_subscription(classic.subscription)
        assigned = _ids(cluster, parse_assignment(classic.assignment))
        member = ConsumerMember(
            classic.member_id,
            instance_id=classic.instance_id,
            rack_id=subscription.rack_id,
            client_id=classic.client_id,
            client_host=classic.client_host,
            rebalance_timeout_ms=classic.rebalance_timeout_ms,
            subscribed_topic_names=list(subscription.topics),
            member_epoch=generation,
            previous_member_epoch=generation,
            assigned=assigned,
            classic=ClassicInfo(classic.session_timeout_ms, list(classic.protocols)),
        )
        group.add(member)
        group.target[member.member_id] = {t: set(p) for t, p in assigned.items()}
    return group


class ClassicMembers:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic members of consumer groups."""

    def __init__(self, consumer: ConsumerGroups, cluster: Cluster) -> None:
        self.consumer = consumer
        self.cluster = cluster

    # ---- JoinGroup -------------------------------------------------------------------------

    def join(
        self, group: ConsumerGroup, request: ClassicJoin, require_known: bool
    ) -> ConsumerMember:
        """The member after its join (ConsumerGroupError with Kafka's code otherwise); a new
        dynamic member asked for its id raises MEMBER_ID_REQUIRED with `member_id` set."""
        names = {name for name, _ in request.protocols}
        member_id = request.member_id or str(uuid.uuid4())
        if len(group.members) >= self.consumer.settings.max_size and member_id not in group.members:
            raise ConsumerGroupError(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports_classic_protocols(request.protocol_type, names):
            raise ConsumerGroupError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Member {member_id}'s protocols are not supported.",
            )
        if not request.member_id and request.instance_id is None and require_known:
            raise MemberIdRequired(member_id)
        subscription = self._subscription(request.protocols)
        member = self._member(group, member_id, request)
        member.client_id = request.client_id
        member.client_host = request.client_host
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        if subscription.rack_id is not None:
            member.rack_id = subscription.rack_id
        member.classic = ClassicInfo(request.session_timeout_ms, list(request.protocols))
        changed = sorted(subscription.topics) != sorted(member.subscribed_topic_names)
        member.subscribed_topic_names = list(subscription.topics)
        member.server_assignor = None
        member.rejoin.cancel()
        self.consumer.advance(group, member, changed, _ids(self.cluster, subscription.owned))
        self.consumer.arm_session(group, member)
        member.sync.start(
            max(request.rebalance_timeout_ms, 0),
            lambda: self.consumer.fence(group, member, "it did not send SyncGroup in time"),
        )
        self.consumer.persist(group, member)
        return member

    @staticmethod
    def _subscription(protocols: list[tuple[str, bytes]]) -> Subscription:
        try:
            return parse_subscription(protocols[0][1])
        except (MalformedConsumerProtocol, IndexError) as exc:
            raise ConsumerGroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from exc

    @staticmethod
    def _member(group: ConsumerGroup, member_id: str, request: ClassicJoin) -> ConsumerMember:
        if request.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                member = ConsumerMember(member_id, member_epoch=0)
                group.add(member)
            return member
        existing = group.static_member(request.instance_id)
        if existing is not None and existing.member_id == member_id:
            return existing
        if existing is not None and request.member_id:
            raise ConsumerGroupError(ErrorCode.FENCED_INSTANCE_ID)
        member = ConsumerMember(member_id, instance_id=request.instance_id)
        if existing is not None:  # a static member back under a new id takes over
            member.subscribed_topic_names = list(existing.subscribed_topic_names)
            member.assigned = {t: set(p) for t, p in existing.assigned.items()}
            target = group.target.get(existing.member_id, {})
            group.remove(existing.member_id)
            group.target[member_id] = target
        group.add(member)
        return member

    def protocol_name(self, member: ConsumerMember) -> str:
        return member.classic.protocols[0][0] if member.classic and member.classic.protocols else ""

    # ---- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember:
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            member = group.static_member(instance_id)
            if member is not None and member.member_id != member_id:
                raise ConsumerGroupError(ErrorCode.FENCED_INSTANCE_ID)
        if member is None or member.classic is None:
            raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def _check_generation(self, member: ConsumerMember, generation: int) -> None:
        if generation != member.member_epoch:
            raise ConsumerGroupError(ErrorCode.ILLEGAL_GENERATION)

    @staticmethod
    def must_rejoin(group: ConsumerGroup, member: ConsumerMember) -> bool:
        """Kafka: the member has a newer epoch to reach, partitions to revoke, or waits for
        partitions that are free now."""
        if member.member_epoch < group.group_epoch:
            return True
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            return True
        if member.state == MemberState.UNRELEASED_PARTITIONS:
            target = group.target.get(member.member_id, {})
            return any(
                group.current_partition_epoch(topic_id, partition) == -1
                for topic_id, partitions in target.items()
                for partition in partitions - member.assigned.get(topic_id, set())
            )
        return False

    def sync(
        self,
        group: ConsumerGroup,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> bytes:
        member = self._classic_member(group, member_id, instance_id)
        self._check_generation(member, generation)
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or (
            protocol_name is not None and protocol_name != self.protocol_name(member)
        ):
            raise ConsumerGroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        # A newer epoch to catch up with: rejoin first, unless the member is revoking (this
        # answer tells it what it keeps; its next heartbeat asks it to rejoin).
        if (
            group.group_epoch > member.member_epoch
            and member.state != MemberState.UNREVOKED_PARTITIONS
        ):
            self._expect_rejoin(group, member)
            raise ConsumerGroupError(
                ErrorCode.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member "
                f"{member.member_id} should rejoin to catch up.",
            )
        member.sync.cancel()
        self.consumer.arm_session(group, member)
        return assignment_bytes(self.cluster, member.assigned)

    def heartbeat(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        member = self._classic_member(group, member_id, instance_id)
        self._check_generation(member, generation)
        self.consumer.arm_session(group, member)
        if not self.must_rejoin(group, member):
            return ErrorCode.NO_ERROR
        self._expect_rejoin(group, member)
        return ErrorCode.REBALANCE_IN_PROGRESS

    def _expect_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """Told to rejoin: removed if it has not within its rebalance timeout."""
        if not member.rejoin.active:
            member.rejoin.start(
                max(member.rebalance_timeout_ms, 0),
                lambda: self.consumer.fence(group, member, "it did not rejoin in time"),
            )

    def leave(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        try:
            if instance_id is None:
                member = self._classic_member(group, member_id, None)
            else:
                member = self._classic_member(
                    group, member_id or _static_id(group, instance_id), instance_id
                )
        except ConsumerGroupError as exc:
            return exc.error
        self.consumer.remove_member(group, member)
        self.consumer.persist(group)
        self.consumer.after_removal(group, member)
        return ErrorCode.NO_ERROR


def _static_id(group: ConsumerGroup, instance_id: str) -> str:
    member = group.static_member(instance_id)
    return "" if member is None else member.member_id


class MemberIdRequired(ConsumerGroupError):
    def __init__(self, member_id: str) -> None:
        super().__init__(ErrorCode.MEMBER_ID_REQUIRED)
        self.member_id = member_id
