"""A group: its committed offsets and, for a classic group, its state, members and
generation; a KIP-848 consumer group keeps its own model in `consumer`, a KIP-932 share group
in `share`, a KIP-1071 streams group in `streams`.

The states and their legal transitions are Kafka's `GroupState` (one table below). The group
itself only keeps its data consistent (leader, static members, pending members, counts); the
coordinator decides when to rebalance and answers requests.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from minibroker.groups.consumer.model import ConsumerGroup
from minibroker.groups.records import MemberValue, OffsetValue
from minibroker.groups.share.model import ShareGroup
from minibroker.groups.streams.model import StreamsGroup
from minibroker.groups.timers import Deadline
from minibroker.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's transition table: each state and the states it may be entered from.
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[JoinedMember] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    is_new: bool = False
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None
    session: Deadline = field(default_factory=Deadline)

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def metadata(self, protocol: str | None) -> bytes:
        return next((data for name, data in self.protocols if name == protocol), b"")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def complete_join(self, result: JoinResult) -> None:
        waiter, self.join_waiter = self.join_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def complete_sync(self, result: SyncResult) -> None:
        waiter, self.sync_waiter = self.sync_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def stored(self, protocol: str | None) -> MemberValue:
        return MemberValue(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            subscription=self.metadata(protocol),
            assignment=self.assignment,
        )


@dataclass(eq=False)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    state_timestamp_ms: int = -1
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, Deadline] = field(default_factory=dict)
    pending_sync: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], OffsetValue] = field(default_factory=dict)
    new_member_added: bool = False
    join_deadline: Deadline = field(default_factory=Deadline)
    sync_deadline: Deadline = field(default_factory=Deadline)
    # The initial rebalance delay left after the current one (Kafka's InitialDelayedJoin).
    initial_delay_remaining_ms: int | None = None
    # Set when this is a KIP-848 consumer group; the classic fields above are then unused
    # (the group stays Empty as a classic group) and only `offsets` is shared.
    consumer: ConsumerGroup | None = None
    # Set when this is a share group (KIP-932), likewise: the classic fields are unused.
    share: ShareGroup | None = None
    # Set when this is a streams group (KIP-1071), likewise.
    streams: StreamsGroup | None = None

    def transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state} cannot become {target}"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    def take_over_from_consumer_group(
        self, members: list[Member], generation: int, now_ms: int
    ) -> None:
        """An online downgrade: the classic group made of a consumer group's classic
        members, Stable at the consumer group's epoch (Kafka's ClassicGroup.fromConsumerGroup;
        the coordinator then prepares a rebalance)."""
        for member in members:
            self.add(member)
        self.generation_id = generation
        self.protocol_type = CONSUMER_PROTOCOL_TYPE
        self.protocol_name = self.select_protocol()
        self.state = GroupState.STABLE
        self.state_timestamp_ms = now_ms

    def hand_over_to_consumer_group(self, now_ms: int) -> list[Member]:
        """An online upgrade: the members leave this classic group, which is left Empty
        with its offsets (a consumer group takes the members over). The members, whose
        waiting JoinGroup/SyncGroup are answered REBALANCE_IN_PROGRESS."""
        members = list(self.members.values())
        for member in members:
            member.session.cancel()
            member.complete_join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
            member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        for pending in self.pending_members.values():
            pending.cancel()
        self.join_deadline.cancel()
        self.sync_deadline.cancel()
        self.members.clear()
        self.static_members.clear()
        self.pending_members.clear()
        self.pending_sync.clear()
        self.leader_id = None
        self.protocol_name = None
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        return members

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        existing = self.static_member_id(instance_id)
        return existing is not None and existing != member_id

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        pending = self.pending_members.pop(member.member_id, None)
        if pending is not None:
            pending.cancel()

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.session.cancel()
        self.pending_sync.discard(member_id)
        instance_id = member.group_instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, old_member_id: str, new_member_id: str) -> Member:
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        return member

    def remove_pending(self, member_id: str) -> bool:
        pending = self.pending_members.pop(member_id, None)
        if pending is None:
            return False
        pending.cancel()
        return True

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.is_in(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        return any(self._supported_by_all(name) for name in names)

    def _supported_by_all(self, protocol: str) -> bool:
        return all(
            any(name == protocol for name, _ in member.protocols)
            for member in self.members.values()
        )

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred protocol all members support."""
        candidates = [
            name
            for name, _ in next(iter(self.members.values())).protocols
            if self._supported_by_all(name)
        ]
        votes: Counter[str] = Counter(
            next(name for name, _ in member.protocols if name in candidates)
            for member in self.members.values()
        )
        return max(candidates, key=lambda name: votes[name])

    def maybe_elect_joined_leader(self) -> bool:
        """Make a member that has rejoined the leader if the leader has not; False if none has."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def joined_members(self) -> list[JoinedMember]:
        return [
            JoinedMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    def join_result(self, member: Member) -> JoinResult:
        """The current generation, as a member's JoinGroup answer (the leader gets members)."""
        is_leader = self.is_leader(member.member_id)
        return JoinResult(
            error=ErrorCode.NO_ERROR,
            member_id=member.member_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader=self.leader_id or "",
            members=self.joined_members() if is_leader else [],
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when not known."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = parse_subscription_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription_topics(metadata: bytes) -> set[str] | None:
    """The topics of a `ConsumerProtocolSubscription` (any version), None if malformed."""
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        topics = set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if length < 0 or pos + length > len(metadata):
                return None
            topics.add(metadata[pos : pos + length].decode())
            pos += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
