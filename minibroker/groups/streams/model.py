"""A streams group (KIP-1071) and its members, as Kafka 4.3's `StreamsGroup`,
`StreamsGroupMember` and `StreamsTopology`.

A streams group runs one topology (its subtopologies, each reading source topics and
repartition topics and writing changelog and repartition topics), set by the first member
that joins and kept until the group is deleted. A subtopology has one task per partition of
its widest source topic; the group coordinator assigns the tasks to members as active,
standby or warm-up tasks (`TasksTuple`). Members reconcile towards their target assignment
as KIP-848 consumers do: a task moves to a new owner only once the old owner has revoked it.

Group states, as Kafka's `StreamsGroup.StreamsGroupState`: Empty (no members), NotReady (the
topology is not configured: source or internal topics missing or wrongly partitioned),
Assigning (the group epoch is ahead of the assignment epoch), Reconciling (a member has not
reached its target yet), Stable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from minibroker.groups.timers import Deadline

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
STREAMS_PROTOCOL_TYPE = "streams"

# Tasks by subtopology id: the partitions (task numbers) of each subtopology.
TaskMap = dict[str, set[int]]


class StreamsGroupState(StrEnum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class MemberState(StrEnum):
    """Kafka's streams `MemberState`, with the byte it is stored as."""

    STABLE = "stable"
    UNREVOKED_TASKS = "unrevoked_tasks"
    UNRELEASED_TASKS = "unreleased_tasks"

    @property
    def code(self) -> int:
        return {"stable": 0, "unrevoked_tasks": 1, "unreleased_tasks": 2}[self.value]

    @classmethod
    def from_code(cls, code: int) -> MemberState:
        return {0: cls.STABLE, 1: cls.UNREVOKED_TASKS, 2: cls.UNRELEASED_TASKS}.get(
            code, cls.STABLE
        )


def copy_tasks(tasks: TaskMap) -> TaskMap:
    return {subtopology: set(parts) for subtopology, parts in tasks.items() if parts}


def contains_any(tasks: TaskMap, others: TaskMap) -> bool:
    return any(tasks.get(sub, set()) & parts for sub, parts in others.items())


def task_count(tasks: TaskMap) -> int:
    return sum(len(parts) for parts in tasks.values())


@dataclass(frozen=True, slots=True)
class TasksTuple:
    active: TaskMap = field(default_factory=dict)
    standby: TaskMap = field(default_factory=dict)
    warmup: TaskMap = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (task_count(self.active) or task_count(self.standby) or task_count(self.warmup))

    def contains_any(self, other: TasksTuple) -> bool:
        return (
            contains_any(self.active, other.active)
            or contains_any(self.standby, other.standby)
            or contains_any(self.warmup, other.warmup)
        )

    def merge(self, other: TasksTuple) -> TasksTuple:
        def union(left: TaskMap, right: TaskMap) -> TaskMap:
            merged = copy_tasks(left)
            for sub, parts in right.items():
                merged.setdefault(sub, set()).update(parts)
            return copy_tasks(merged)

        return TasksTuple(
            union(self.active, other.active),
            union(self.standby, other.standby),
            union(self.warmup, other.warmup),
        )

    def copy(self) -> TasksTuple:
        return TasksTuple(
            copy_tasks(self.active), copy_tasks(self.standby), copy_tasks(self.warmup)
        )


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic of a subtopology: 0 partitions when the topology leaves the count
    to the coordinator, 0 replication factor for the broker's default."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics and repartition source topics."""

    source_topics: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


def _index(index: int, items: tuple[object, ...]) -> int:
    if not 0 <= index < len(items):
        raise IndexError(f"Index {index} out of bounds for length {len(items)}")
    return index


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    def copartitioned_topic_sets(self) -> list[set[str]]:
        """The topics of each copartition group, by their indexes into the subtopology's
        source and repartition source topics (Kafka's copartitionGroupsFromPersistedSubtopology);
        an index out of range raises IndexError, as Kafka's `List.get` throws."""
        sets = []
        for group in self.copartition_groups:
            names = {self.source_topics[_index(i, self.source_topics)] for i in group.source_topics}
            names |= {
                self.repartition_source_topics[_index(i, self.repartition_source_topics)].name
                for i in group.repartition_source_topics
            }
            sets.append(names)
        return sets


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    epoch: int
    subtopologies: dict[str, Subtopology]

    def required_topics(self) -> set[str]:
        """Every topic the topology reads or writes (Kafka's `requiredTopics`)."""
        names: set[str] = set()
        for sub in self.subtopologies.values():
            names.update(sub.source_topics)
            names.update(sub.repartition_sink_topics)
            names.update(topic.name for topic in sub.state_changelog_topics)
            names.update(topic.name for topic in sub.repartition_source_topics)
        return names


@dataclass(frozen=True, slots=True)
class TopologyStatus:
    """A StreamsGroupHeartbeat status: code and detail."""

    code: int
    detail: str


STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """Kafka's `ConfiguredTopology`: the number of tasks of each subtopology once every topic
    exists with the right partition count (ready), else the status saying what is wrong and
    the internal topics to create (name -> (partitions, replication factor, configs))."""

    epoch: int
    tasks: dict[str, int] | None
    status: TopologyStatus | None = None
    to_create: dict[str, TopicInfo] = field(default_factory=dict)
    # Each internal topic's partition count as the coordinator decided it.
    internal_partitions: dict[str, int] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.tasks is not None and self.status is None


@dataclass(eq=False)
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    task_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    task_end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    assigned: TasksTuple = field(default_factory=TasksTuple)
    pending_revocation: TasksTuple = field(default_factory=TasksTuple)
    # The member epoch each active task (assigned or pending revocation) was assigned at
    # (KIP-1251: commits at an older epoch are checked against them).
    active_epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    session: Deadline = field(default_factory=Deadline)
    rebalance: Deadline = field(default_factory=Deadline)

    def metadata(self) -> tuple[object, ...]:
        """The fields of Kafka's StreamsGroupMemberMetadataValue: a change bumps the epoch."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.topology_epoch,
            self.process_id,
            self.user_endpoint,
            tuple(sorted(self.client_tags.items())),
        )

    def keep_active_epochs(self) -> None:
        """Forget the epochs of active tasks the member no longer holds."""
        held = {
            (sub, partition)
            for tasks in (self.assigned.active, self.pending_revocation.active)
            for sub, parts in tasks.items()
            for partition in parts
        }
        self.active_epochs = {task: e for task, e in self.active_epochs.items() if task in held}

    def update_epoch(self, epoch: int) -> None:
        self.previous_member_epoch = self.member_epoch
        self.member_epoch = epoch


@dataclass(eq=False)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    # When the last target assignment was computed (wall clock ms; 0: never).
    assignment_timestamp_ms: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    target: dict[str, TasksTuple] = field(default_factory=dict)
    topology: StreamsTopology | None = None
    configured: ConfiguredTopology | None = None
    # A hash of the topology's topics and their partition counts when last configured.
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple[tuple[str, str], ...] = ()
    endpoint_information_epoch: int = 0
    shutdown_request_member_id: str | None = None
    initial_delay: Deadline = field(default_factory=Deadline)
    # The records last written to `__consumer_offsets` (records.py), by key.
    written: dict[bytes, bytes | None] = field(default_factory=dict)

    @property
    def state(self) -> StreamsGroupState:
        if not self.members:
            return StreamsGroupState.EMPTY
        if self.topology is None or self.configured is None or not self.configured.ready:
            return StreamsGroupState.NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return StreamsGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state != MemberState.STABLE:
                return StreamsGroupState.RECONCILING
        return StreamsGroupState.STABLE

    def remove(self, member_id: str) -> StreamsMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            member.session.cancel()
            member.rebalance.cancel()
            self.target.pop(member_id, None)
        if not self.members:
            self.shutdown_request_member_id = None
        return member

    def source_topics(self) -> set[str]:
        """The topics the members read: source and repartition source topics."""
        if self.topology is None:
            return set()
        return {
            name
            for sub in self.topology.subtopologies.values()
            for name in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics))
        }

    def task_partitions(
        self, tasks: TaskMap, partition_count: Callable[[str], int | None]
    ) -> dict[str, list[int]]:
        """The source-topic partitions the tasks read (Kafka's EndpointToPartitionsManager):
        task p of a subtopology reads partition p of each of its source and repartition
        source topics that has it."""
        partitions: dict[str, set[int]] = {}
        topology = self.topology
        if topology is None:
            return {}
        for sub_id, parts in tasks.items():
            sub = topology.subtopologies.get(sub_id)
            if sub is None:
                continue
            for name in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics)):
                count = partition_count(name) or 0
                chosen = {p for p in parts if p < count}
                if chosen:
                    partitions.setdefault(name, set()).update(chosen)
        return {name: sorted(parts) for name, parts in sorted(partitions.items())}

    def stop_timers(self) -> None:
        self.initial_delay.cancel()
        for member in self.members.values():
            member.session.cancel()
            member.rebalance.cancel()

    # ---- who owns a task now (Kafka's currentActiveTaskProcessId and friends) -------------

    def active_owner_process(self, subtopology: str, partition: int) -> str | None:
        for member in self.members.values():
            for tasks in (member.assigned.active, member.pending_revocation.active):
                if partition in tasks.get(subtopology, ()):
                    return member.process_id
        return None

    def standby_processes(self, subtopology: str, partition: int) -> set[str]:
        return {
            member.process_id
            for member in self.members.values()
            if partition in member.assigned.standby.get(subtopology, ())
            or partition in member.pending_revocation.standby.get(subtopology, ())
        }

    def warmup_processes(self, subtopology: str, partition: int) -> set[str]:
        return {
            member.process_id
            for member in self.members.values()
            if partition in member.assigned.warmup.get(subtopology, ())
            or partition in member.pending_revocation.warmup.get(subtopology, ())
        }
