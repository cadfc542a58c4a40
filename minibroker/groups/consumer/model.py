"""A KIP-848 consumer group and its members, as Kafka's `ConsumerGroup` and
`ConsumerGroupMember`.

A group has a group epoch (bumped whenever its members' subscriptions or the metadata of
the subscribed topics change), a target assignment computed at an assignment epoch, and
members each with a member epoch, the partitions currently assigned to them and the ones they
still have to revoke. Which member owns each partition now (`partition_epochs`) is what lets
reconciliation hold back a partition until its previous owner has revoked it.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from minibroker.groups.timers import Deadline

# Partitions by topic id.
Assignment = dict[uuid.UUID, set[int]]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(StrEnum):
    """Kafka's `MemberState` of a member's reconciliation."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


def copy_assignment(assignment: Assignment) -> Assignment:
    return {topic_id: set(partitions) for topic_id, partitions in assignment.items() if partitions}


def same_assignment(left: Assignment, right: Assignment) -> bool:
    return copy_assignment(left) == copy_assignment(right)


@dataclass(frozen=True, slots=True)
class ClassicInfo:
    """A member that uses the classic protocol (JoinGroup/SyncGroup) inside a consumer
    group: its session timeout and its protocols (name, subscription metadata)."""

    session_timeout_ms: int
    protocols: list[tuple[str, bytes]]

    @property
    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicInfo | None = None
    session: Deadline = field(default_factory=Deadline)
    revocation: Deadline = field(default_factory=Deadline)
    # A classic member must send SyncGroup within its rebalance timeout after joining, and
    # rejoin within it once told to (REBALANCE_IN_PROGRESS).
    sync: Deadline = field(default_factory=Deadline)
    rejoin: Deadline = field(default_factory=Deadline)

    def update_epoch(self, epoch: int) -> None:
        if epoch != self.member_epoch:
            self.previous_member_epoch = self.member_epoch
            self.member_epoch = epoch

    def stop_timers(self) -> None:
        self.session.cancel()
        self.revocation.cancel()
        self.sync.cancel()
        self.rejoin.cancel()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """What the group knows of a subscribed topic (Kafka's subscription metadata)."""

    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)
    # (topic id, partition) -> epoch of the member that has it assigned or pending revocation.
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    # Compiled subscription regexes, by their text.
    patterns: dict[str, re.Pattern[str]] = field(default_factory=dict)
    assignor_name: str = "uniform"
    # Each subscription regex with the topics it resolved to and when (ms).
    resolved_regexes: dict[str, tuple[tuple[str, ...], int]] = field(default_factory=dict)
    # The topics among these the principal of the last heartbeat may DESCRIBE: regexes resolve
    # only to those, as Kafka resolves them with the triggering request's context.
    describable: Callable[[Iterable[str]], set[str]] | None = None
    # The hash of the subscribed topics' metadata when the group was written (a restart
    # compares it with the topics as they are then).
    metadata_hash: int = 0
    # The group's records as last written to __consumer_offsets (encoded key -> value).
    written: dict[bytes, bytes | None] = field(default_factory=dict)
    written_members: set[str] = field(default_factory=set)

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._add_partition_epochs(member)

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.stop_timers()
        self._remove_partition_epochs(member)
        instance_id = member.instance_id
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        self.target.pop(member_id, None)
        return member

    def replace_owned(
        self,
        member: ConsumerMember,
        assigned: Assignment,
        pending: Assignment,
        epoch: int,
        state: MemberState,
    ) -> None:
        """Give `member` a new current assignment, keeping partition epochs in step."""
        self._remove_partition_epochs(member)
        member.assigned = copy_assignment(assigned)
        member.pending_revocation = copy_assignment(pending)
        member.update_epoch(epoch)
        member.state = state
        self._add_partition_epochs(member)

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        return self.partition_epochs.get((topic_id, partition), -1)

    def _add_partition_epochs(self, member: ConsumerMember) -> None:
        for owned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in owned.items():
                for partition in partitions:
                    self.partition_epochs[(topic_id, partition)] = member.member_epoch

    def _remove_partition_epochs(self, member: ConsumerMember) -> None:
        for owned in (member.assigned, member.pending_revocation):
            for topic_id, partitions in owned.items():
                for partition in partitions:
                    self.partition_epochs.pop((topic_id, partition), None)

    def classic_members(self) -> list[ConsumerMember]:
        return [member for member in self.members.values() if member.classic is not None]

    def all_classic_except(self, member_id: str) -> bool:
        return all(m.classic is not None for m in self.members.values() if m.member_id != member_id)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Kafka's ConsumerGroup.supportsClassicProtocols."""
        if not self.members:
            return bool(protocol_type) and bool(names)
        classic = self.classic_members()
        return protocol_type == "consumer" and any(
            all(name in m.classic.protocol_names for m in classic if m.classic) for name in names
        )

    def subscription_metadata_hash(self) -> int:
        """A stable hash of the subscribed topics (name, id, partitions); 0 for none."""
        if not self.subscription_metadata:
            return 0
        text = ";".join(
            f"{info.name}:{info.topic_id}:{info.partitions}"
            for _, info in sorted(self.subscription_metadata.items())
        )
        return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)

    def subscribed_topic_names(self) -> set[str]:
        """Topic names some member subscribes to, by name or by its regex."""
        return set(self.subscription_metadata)
