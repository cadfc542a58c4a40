"""The streams-group side of the group coordinator, as Kafka 4.3's `GroupMetadataManager`
(KIP-1071).

`heartbeat()` is StreamsGroupHeartbeat, in Kafka's five steps:

1. The member is created (epoch 0, with its topology) or updated (process id, endpoint,
   client tags, rack, rebalance timeout, topology epoch); a change bumps the group epoch.
2. The first member's topology becomes the group's. A later member joining with an older
   topology epoch gets STALE_TOPOLOGY; a different topology at the same or a newer epoch is
   INVALID_REQUEST ("Topology updates are not supported yet.").
3. The topology is configured against the topics (`topics.py`): source and internal topics
   missing or wrongly partitioned become the answer's status (MISSING_SOURCE_TOPICS,
   MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS), and the missing internal topics
   are returned for the handler to create. A change of the topics' partition counts, the
   topology becoming valid, or a change of `streams.num.standby.replicas` bumps the epoch.
4. When the group epoch is ahead of the assignment epoch, the target assignment is recomputed
   by the sticky task assignor (`assignor.py`), unless the group's initial rebalance delay
   (`streams.initial.rebalance.delay.ms`, from the first member's join) is running: then the
   member gets no tasks and ASSIGNMENT_DELAYED, and the target is computed when it ends
   (with the group epoch bumped so that members reconcile to it); or unless the last target
   was computed less than `streams.assignment.interval.ms` ago (KIP-1263): then the member
   keeps reconciling to the last target, with ASSIGNMENT_DELAYED, until a heartbeat after
   the interval computes the new one.
5. The member reconciles towards its target (Kafka's streams `CurrentAssignmentBuilder`): it
   first revokes the tasks it must give up (UNREVOKED_TASKS, at its current epoch), then moves
   to the target epoch with the tasks no other member still holds (UNRELEASED_TASKS while some
   are held elsewhere: an active task held by any member, a standby or warm-up task held by a
   member of the same process).

The answer carries the tasks when the member joins or its tasks changed, the statuses
(STALE_TOPOLOGY, the topic statuses, SHUTDOWN_APPLICATION once a member asked for it), and the
partitions each member with a user endpoint serves when the member's endpoint information
epoch is behind the group's. Epoch -1 leaves. Members that miss their session timeout
(`streams.session.timeout.ms`) or do not revoke within their rebalance timeout are fenced.

Errors are raised as `StreamsGroupError` (Kafka's code and message), always before the group
changes (Kafka applies a heartbeat's records only when it succeeds). `commit_error` and
`fetch_error` check OffsetCommit/TxnOffsetCommit and OffsetFetch from members (KIP-1251: an
older epoch is accepted for partitions of tasks held since then). Nothing here awaits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.settings import StreamsSettings
from minibroker.groups.streams.assignor import MemberSpec, assign
from minibroker.groups.streams.model import (
    ASSIGNMENT_DELAYED,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    ConfiguredTopology,
    MemberState,
    StreamsGroup,
    StreamsMember,
    StreamsTopology,
    TaskMap,
    TasksTuple,
    TopicInfo,
    TopologyStatus,
    copy_tasks,
)
from minibroker.groups.streams.records import metadata_hash
from minibroker.groups.streams.topics import InvalidTopology, configure_topics
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)
# The first OffsetCommit version members of modern groups may use (Kafka's rule).
OFFSET_COMMIT_MIN_VERSION = 9


class StreamsGroupError(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message


@dataclass(frozen=True, slots=True)
class StreamsHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    topology: StreamsTopology | None
    # Whether a subtopology names source topics by regular expression (not supported).
    uses_source_topic_regex: bool
    active: TaskMap | None
    standby: TaskMap | None
    warmup: TaskMap | None
    process_id: str | None
    user_endpoint: tuple[str, int] | None
    client_tags: dict[str, str] | None
    task_offsets: dict[tuple[str, int], int] | None
    task_end_offsets: dict[tuple[str, int], int] | None
    shutdown_application: bool
    client_id: str
    client_host: str
    # The group's GROUP configs over the broker's `group.streams.*` settings.
    session_timeout_ms: int
    heartbeat_interval_ms: int
    num_standby_replicas: int
    initial_rebalance_delay_ms: int
    assignment_interval_ms: int

    def owned(self) -> TasksTuple | None:
        if self.active is None or self.standby is None or self.warmup is None:
            return None
        return TasksTuple(
            copy_tasks(self.active), copy_tasks(self.standby), copy_tasks(self.warmup)
        )


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    endpoint: tuple[str, int]
    active: dict[str, list[int]]
    standby: dict[str, list[int]]


@dataclass(slots=True)
class StreamsHeartbeatResult:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int = 0
    assignment: TasksTuple | None = None
    statuses: list[TopologyStatus] | None = None
    endpoint_information_epoch: int = 0
    partitions_by_endpoint: list[EndpointPartitions] | None = None
    # Internal topics to create: name -> its partitions, replication factor and configs.
    to_create: dict[str, TopicInfo] = field(default_factory=dict)


def _invalid(message: str) -> StreamsGroupError:
    return StreamsGroupError(ErrorCode.INVALID_REQUEST, message)


# Java's String.trim removes every character at or below U+0020.
_JAVA_TRIMMED = "".join(chr(code) for code in range(0x21))


def _empty_string(value: str | None) -> bool:
    return value is not None and not value.strip(_JAVA_TRIMMED)


def check_request(request: StreamsHeartbeatRequest) -> None:
    """Kafka's throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures, then
    throwIfStreamsGroupHeartbeatRequestIsInvalid."""
    if request.uses_source_topic_regex:
        raise _invalid("Regular expressions for source topics are not supported yet.")
    for value, name in (
        (request.member_id, "MemberId"),
        (request.group_id, "GroupId"),
        (request.instance_id, "InstanceId"),
        (request.rack_id, "RackId"),
    ):
        if _empty_string(value):
            raise _invalid(f"{name} can't be empty.")
    if request.member_epoch == 0:
        _check_join(request)
    elif request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif request.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid(
            f"MemberEpoch is {request.member_epoch}, but must be greater than or equal to -2."
        )
    tasks = (request.active, request.standby, request.warmup)
    if any(t is not None for t in tasks) and any(t is None for t in tasks):
        raise _invalid("If one task-type is non-null, all must be non-null.")
    if request.member_epoch != 0 and request.topology is not None:
        raise _invalid("Topology can only be provided when (re-)joining.")


def _check_join(request: StreamsHeartbeatRequest) -> None:
    if request.rebalance_timeout_ms == -1:
        raise _invalid("RebalanceTimeoutMs must be provided in first request.")
    for tasks, name in (
        (request.active, "ActiveTasks"),
        (request.standby, "StandbyTasks"),
        (request.warmup, "WarmupTasks"),
    ):
        if tasks is None or tasks:  # Kafka's throwIfNotEmptyCollection refuses null too
            raise _invalid(f"{name} must be empty when (re-)joining.")
    if request.topology is None:
        raise _invalid("Topology must be non-null when (re-)joining.")
    for sub in request.topology.subtopologies.values():
        for topic in sub.state_changelog_topics:
            if topic.partitions != 0:
                raise StreamsGroupError(
                    ErrorCode.STREAMS_INVALID_TOPOLOGY,
                    f"Changelog topic {topic.name} must have an undefined partition count, "
                    f"but it is set to {topic.partitions}.",
                )


def _fenced(message: str) -> StreamsGroupError:
    return StreamsGroupError(ErrorCode.FENCED_MEMBER_EPOCH, message)


def _contained(owned: TaskMap | None, assigned: TaskMap) -> bool:
    if owned is None:
        return True
    return all(parts <= assigned.get(sub, set()) for sub, parts in owned.items())


def check_member_epoch(member: StreamsMember, request: StreamsHeartbeatRequest) -> None:
    """Kafka's throwIfStreamsGroupMemberEpochIsInvalid: the current epoch, or the previous one
    when the owned tasks are within the member's assignment (the answer with the new epoch may
    have been lost)."""
    received = request.member_epoch
    if received > member.member_epoch:
        raise _fenced(
            f"The streams group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch
        or not _contained(request.active, member.assigned.active)
        or not _contained(request.standby, member.assigned.standby)
        or not _contained(request.warmup, member.assigned.warmup)
    ):
        raise _fenced(
            f"The streams group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({member.member_epoch}). The member must abandon "
            "all its partitions and rejoin."
        )


def _check_tasks_exist(tasks_by_subtopology: dict[str, int], tasks: TaskMap | None) -> None:
    """Kafka's throwIfRequestContainsInvalidTasks."""
    for sub, parts in (tasks or {}).items():
        if sub not in tasks_by_subtopology:
            raise _invalid(f"Subtopology {sub} does not exist in the topology.")
        count = tasks_by_subtopology[sub]
        for partition in sorted(parts):
            if not 0 <= partition < count:
                raise _invalid(
                    f"Task {partition} for subtopology {sub} is invalid. Number of tasks for "
                    f"this subtopology: {count}"
                )


def unknown_member(group_id: str, member_id: str) -> StreamsGroupError:
    return StreamsGroupError(
        ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
    )


class StreamsGroups:
    """The streams groups' protocol logic. `lookup(group_id, create)` gives the group (the
    coordinator keeps them): a new one when `create`, None when there is none, and raises
    GROUP_ID_NOT_FOUND when the id belongs to another kind of group. `persist(group)` writes
    the group's records to `__consumer_offsets`."""

    def __init__(
        self,
        config: BrokerConfig,
        cluster: Cluster,
        lookup: Callable[[str, bool], StreamsGroup | None],
    ) -> None:
        self.settings = StreamsSettings.from_config(config)
        self.cluster = cluster
        self._lookup = lookup
        self.persist: Callable[[StreamsGroup], None] = lambda group: None
        # Told of a group this heartbeat created and then refused: it must not stay.
        self.discard: Callable[[StreamsGroup], None] = lambda group: None

    # ---- StreamsGroupHeartbeat -------------------------------------------------------------

    def heartbeat(self, request: StreamsHeartbeatRequest) -> StreamsHeartbeatResult:
        check_request(request)
        if request.instance_id is not None:
            # Kafka 4.3's coordinator throws UnsupportedOperationException("Static members are
            # not supported yet."), answered UNKNOWN_SERVER_ERROR without a message.
            raise StreamsGroupError(ErrorCode.UNKNOWN_SERVER_ERROR)
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(request.group_id, request.member_id)
        joining = request.member_epoch == 0
        group = self._group(request.group_id, joining)
        try:
            return self._heartbeat(group, request, joining)
        except StreamsGroupError:
            if not group.members and group.topology is None and group.group_epoch == 0:
                self.discard(group)  # created by this request: Kafka writes nothing
            raise

    def _heartbeat(
        self, group: StreamsGroup, request: StreamsHeartbeatRequest, joining: bool
    ) -> StreamsHeartbeatResult:
        """Every check that can refuse the request runs before the group changes, as Kafka's
        coordinator applies a heartbeat's records only when it succeeds."""
        if joining:
            self._check_not_full(group)
        new_group = not group.members and group.topology is None and group.group_epoch == 0
        created = request.member_id not in group.members
        member = self._member(group, request, joining)
        topology = self._new_topology(group, request)
        configured = self._configuration(group, topology or group.topology, request)
        if created:
            group.members[member.member_id] = member
            log.info("streams group %s: member %s joins", group.group_id, member.member_id)
        before = member.assigned.copy()
        statuses: list[TopologyStatus] = []
        bump = self._update_member(member, request) or created
        if topology is not None:
            log.info(
                "streams group %s: member %s initialized the topology with epoch %d",
                group.group_id,
                member.member_id,
                topology.epoch,
            )
            group.topology = topology
            bump = True
        if group.topology is not None and member.topology_epoch < group.topology.epoch:
            statuses.append(
                TopologyStatus(
                    STALE_TOPOLOGY,
                    f"The member's topology epoch {member.topology_epoch} is behind the "
                    f"group's topology epoch {group.topology.epoch}.",
                )
            )
        bump |= self._apply_configuration(group, configured)
        self._maybe_bump_epoch(group, bump, request.num_standby_replicas)
        if new_group and request.initial_rebalance_delay_ms > 0:
            self._start_initial_delay(group, request.initial_rebalance_delay_ms)
        target_epoch, target = self._target(group, member, request, statuses)
        self._reconcile(group, member, target_epoch, target, request.owned())
        self._arm_session(group, member, request.session_timeout_ms)
        if request.shutdown_application:
            group.shutdown_request_member_id = member.member_id
        self.persist(group)
        return self._answer(group, member, request, before, statuses, new_group)

    @staticmethod
    def _maybe_bump_epoch(group: StreamsGroup, bump: bool, num_standby_replicas: int) -> None:
        """One bump for whatever changed, or for a change of the assignment configs since the
        last bump (Kafka's streamsGroupAssignmentConfigs: `num.standby.replicas`)."""
        configs = (("num.standby.replicas", str(num_standby_replicas)),)
        if bump or configs != group.last_assignment_configs:
            group.group_epoch += 1
            log.info("streams group %s: epoch bumped to %d", group.group_id, group.group_epoch)
        group.last_assignment_configs = configs

    def _group(self, group_id: str, joining: bool) -> StreamsGroup:
        group = self._lookup(group_id, joining)
        if group is None:
            raise StreamsGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found."
            )
        return group

    def _check_not_full(self, group: StreamsGroup) -> None:
        """Kafka's throwIfStreamsGroupIsFull, on every join (a member rejoining included)."""
        if len(group.members) >= self.settings.max_size:
            raise StreamsGroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The streams group has reached its maximum capacity of "
                f"{self.settings.max_size} members.",
            )

    @staticmethod
    def _member(
        group: StreamsGroup, request: StreamsHeartbeatRequest, joining: bool
    ) -> StreamsMember:
        """The member, or a new one (not yet in the group) when joining."""
        member = group.members.get(request.member_id)
        if member is None:
            if not joining:
                raise unknown_member(group.group_id, request.member_id)
            return StreamsMember(request.member_id)
        if not joining:
            check_member_epoch(member, request)
        return member

    @staticmethod
    def _update_member(member: StreamsMember, request: StreamsHeartbeatRequest) -> bool:
        """Apply the request to the member; True if its metadata changed."""
        before = member.metadata()
        member.client_id = request.client_id
        member.client_host = request.client_host
        if request.rack_id is not None:
            member.rack_id = request.rack_id
        if request.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.topology is not None:
            member.topology_epoch = request.topology.epoch
        if request.process_id is not None:
            member.process_id = request.process_id
        if request.client_tags is not None:
            member.client_tags = dict(request.client_tags)
        if request.user_endpoint is not None:
            member.user_endpoint = request.user_endpoint
        if request.task_offsets is not None:
            member.task_offsets = dict(request.task_offsets)
        if request.task_end_offsets is not None:
            member.task_end_offsets = dict(request.task_end_offsets)
        return member.metadata() != before

    @staticmethod
    def _new_topology(
        group: StreamsGroup, request: StreamsHeartbeatRequest
    ) -> StreamsTopology | None:
        """Kafka's maybeUpdateTopology: the request's topology when it initializes the group's,
        None when the group's stays (an older epoch, or the same topology)."""
        topology = request.topology
        if topology is None:
            return None
        if group.topology is None:
            return topology
        if group.topology.epoch <= topology.epoch and group.topology != topology:
            raise _invalid("Topology updates are not supported yet.")
        return None

    def _partition_count(self, name: str) -> int | None:
        topic = self.cluster.topics.get(name)
        return None if topic is None else len(topic.partitions)

    def _configuration(
        self,
        group: StreamsGroup,
        topology: StreamsTopology | None,
        request: StreamsHeartbeatRequest,
    ) -> tuple[int, ConfiguredTopology | None]:
        """The topics' hash and the topology configured against them (reconfigured when the
        topology is new or the topics changed); checks the owned tasks against it."""
        if topology is None:
            return group.metadata_hash, None
        topic_hash = metadata_hash(
            (name, self._partition_count(name) or -1) for name in topology.required_topics()
        )
        configured = group.configured
        if (
            topic_hash != group.metadata_hash
            or configured is None
            or topology is not group.topology
        ):
            try:
                configured = configure_topics(topology, self._partition_count)
            except InvalidTopology as exc:
                raise StreamsGroupError(ErrorCode.STREAMS_INVALID_TOPOLOGY, str(exc)) from exc
            except IndexError as exc:  # a copartition index out of range: Kafka's exception
                log.warning("streams group %s: bad topology: %s", group.group_id, exc)
                raise StreamsGroupError(ErrorCode.UNKNOWN_SERVER_ERROR) from exc
        if configured.ready and configured.tasks is not None:
            for tasks in (request.active, request.standby, request.warmup):
                _check_tasks_exist(configured.tasks, tasks)
        return topic_hash, configured

    @staticmethod
    def _apply_configuration(
        group: StreamsGroup, configuration: tuple[int, ConfiguredTopology | None]
    ) -> bool:
        """Store the configured topology; True when the topics changed or the topology became
        valid (or stopped being valid), which bumps the group epoch."""
        topic_hash, configured = configuration
        if configured is None or group.topology is None:
            return False
        bump = topic_hash != group.metadata_hash
        group.metadata_hash = topic_hash
        group.configured = configured
        validated = group.topology.epoch if configured.ready else -1
        if validated != group.validated_topology_epoch:
            group.validated_topology_epoch = validated
            bump = True
        return bump

    # ---- target assignment -------------------------------------------------------------------

    def _target(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        request: StreamsHeartbeatRequest,
        statuses: list[TopologyStatus],
    ) -> tuple[int, TasksTuple]:
        if group.group_epoch <= group.assignment_epoch:
            return group.assignment_epoch, group.target.get(member.member_id, TasksTuple())
        if group.initial_delay.active:
            statuses.append(
                TopologyStatus(
                    ASSIGNMENT_DELAYED,
                    "Assignment delayed due to the configured initial rebalance delay.",
                )
            )
            return max(1, group.assignment_epoch), TasksTuple()
        if not _can_compute_target(group, request.assignment_interval_ms):
            statuses.append(
                TopologyStatus(
                    ASSIGNMENT_DELAYED,
                    "Assignment delayed due to the configured assignment interval.",
                )
            )
            return group.assignment_epoch, group.target.get(member.member_id, TasksTuple())
        self.update_target_assignment(group, request.num_standby_replicas)
        return group.assignment_epoch, group.target.get(member.member_id, TasksTuple())

    def update_target_assignment(self, group: StreamsGroup, num_standby_replicas: int) -> None:
        configured = group.configured
        topology = group.topology
        if configured is None or topology is None or not configured.ready or not configured.tasks:
            group.target = {member_id: TasksTuple() for member_id in group.members}
        else:
            stateful = {
                sub_id
                for sub_id, sub in topology.subtopologies.items()
                if sub.state_changelog_topics
            }
            specs = {
                member_id: MemberSpec(
                    member.process_id or member_id, group.target.get(member_id, TasksTuple())
                )
                for member_id, member in group.members.items()
            }
            group.target = assign(specs, configured.tasks, stateful, num_standby_replicas)
        group.assignment_epoch = group.group_epoch
        group.assignment_timestamp_ms = wall_clock_ms()

    def _start_initial_delay(self, group: StreamsGroup, delay_ms: int) -> None:
        standby = dict(group.last_assignment_configs).get("num.standby.replicas", "0")

        def expired() -> None:
            if self._lookup_quietly(group.group_id) is not group or not group.members:
                return
            group.group_epoch += 1
            self.update_target_assignment(group, int(standby))
            self.persist(group)
            log.info(
                "streams group %s: initial rebalance delay over, target assignment at epoch %d",
                group.group_id,
                group.assignment_epoch,
            )

        group.initial_delay.start(delay_ms, expired)

    def _lookup_quietly(self, group_id: str) -> StreamsGroup | None:
        try:
            return self._lookup(group_id, False)
        except StreamsGroupError:
            return None

    # ---- reconciliation (Kafka's streams CurrentAssignmentBuilder) ---------------------------

    def _reconcile(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        target_epoch: int,
        target: TasksTuple,
        owned: TasksTuple | None,
    ) -> None:
        if member.state == MemberState.STABLE:
            if member.member_epoch != target_epoch:
                self._next_assignment(
                    group, member, member.member_epoch, target_epoch, target, owned
                )
        elif member.state == MemberState.UNREVOKED_TASKS:
            if owned is None or owned.contains_any(member.pending_revocation):
                return
            member.pending_revocation = TasksTuple()
            self._next_assignment(
                group, member, member.member_epoch + 1, target_epoch, target, owned
            )
        else:
            self._next_assignment(group, member, member.member_epoch, target_epoch, target, owned)
        if member.state == MemberState.UNREVOKED_TASKS:
            self._arm_revocation(group, member)
        else:
            member.rebalance.cancel()

    def _next_assignment(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        epoch: int,
        target_epoch: int,
        target: TasksTuple,
        owned: TasksTuple | None,
    ) -> None:
        process = member.process_id

        def active_unreleased(sub: str, p: int) -> bool:
            return (
                group.active_owner_process(sub, p) is not None
                or process in group.standby_processes(sub, p)
                or process in group.warmup_processes(sub, p)
            )

        def other_unreleased(sub: str, p: int) -> bool:
            return (
                group.active_owner_process(sub, p) == process
                or process in group.standby_processes(sub, p)
                or process in group.warmup_processes(sub, p)
            )

        kept, revoke, add, unreleased = [], [], [], False
        for current, wanted, check in (
            (member.assigned.active, target.active, active_unreleased),
            (member.assigned.standby, target.standby, other_unreleased),
            (member.assigned.warmup, target.warmup, other_unreleased),
        ):
            k, r, a, u = _difference(current, wanted, check)
            kept.append(k)
            revoke.append(r)
            add.append(a)
            unreleased |= u
        kept_tuple = TasksTuple(*kept)
        revoke_tuple = TasksTuple(*revoke)
        add_tuple = TasksTuple(*add)
        if not revoke_tuple.is_empty() and (owned is None or owned.contains_any(revoke_tuple)):
            member.state = MemberState.UNREVOKED_TASKS
            self._set_epoch(member, epoch)
            member.assigned = kept_tuple
            member.pending_revocation = revoke_tuple
            member.keep_active_epochs()
            return
        member.pending_revocation = TasksTuple()
        self._set_epoch(member, target_epoch)
        if not add_tuple.is_empty():
            member.assigned = kept_tuple.merge(add_tuple)
        else:
            member.assigned = kept_tuple
        member.state = MemberState.UNRELEASED_TASKS if unreleased else MemberState.STABLE
        for sub, parts in add_tuple.active.items():
            for partition in parts:
                member.active_epochs[(sub, partition)] = target_epoch
        member.keep_active_epochs()

    @staticmethod
    def _set_epoch(member: StreamsMember, epoch: int) -> None:
        if epoch != member.member_epoch:
            member.update_epoch(epoch)

    def _arm_revocation(self, group: StreamsGroup, member: StreamsMember) -> None:
        if member.rebalance.active:
            return
        epoch = member.member_epoch

        def expired() -> None:
            if member.state == MemberState.UNREVOKED_TASKS and member.member_epoch == epoch:
                self.fence(group, member, "it did not revoke tasks within the rebalance timeout")

        member.rebalance.start(max(member.rebalance_timeout_ms, 0), expired)

    # ---- the answer ----------------------------------------------------------------------

    def _answer(
        self,
        group: StreamsGroup,
        member: StreamsMember,
        request: StreamsHeartbeatRequest,
        before: TasksTuple,
        statuses: list[TopologyStatus],
        new_group: bool,
    ) -> StreamsHeartbeatResult:
        result = StreamsHeartbeatResult(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=request.heartbeat_interval_ms,
        )
        if request.member_epoch == 0 or before != member.assigned:
            result.assignment = member.assigned.copy()
            if member.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != request.endpoint_information_epoch:
            result.partitions_by_endpoint = self._partitions_by_endpoint(group, member)
        if new_group:
            # Kafka bumps the epoch on the group object this heartbeat creates, which the
            # replay of its records replaces: the answer and the group keep epoch 0.
            group.endpoint_information_epoch = 0
        result.endpoint_information_epoch = group.endpoint_information_epoch
        configured = group.configured
        if configured is not None and configured.status is not None:
            statuses.append(configured.status)
            result.to_create = dict(configured.to_create)
        if group.shutdown_request_member_id is not None:
            statuses.append(
                TopologyStatus(
                    SHUTDOWN_APPLICATION,
                    f"Streams group member {group.shutdown_request_member_id} encountered a "
                    "fatal error and requested a shutdown for the entire application.",
                )
            )
        result.statuses = statuses or None
        return result

    def _partitions_by_endpoint(
        self, group: StreamsGroup, updated: StreamsMember
    ) -> list[EndpointPartitions]:
        """Kafka's maybeBuildEndpointToPartitions: every member with a user endpoint and the
        source-topic partitions of its active and standby tasks, the updated member last."""
        members = [m for m in group.members.values() if m is not updated] + [updated]
        answers = []
        for member in members:
            if member.user_endpoint is None:
                continue
            answers.append(
                EndpointPartitions(
                    member.user_endpoint,
                    group.task_partitions(member.assigned.active, self._partition_count),
                    group.task_partitions(member.assigned.standby, self._partition_count),
                )
            )
        return answers

    # ---- leave, session timeouts, offsets -----------------------------------------------------

    def _leave(self, group_id: str, member_id: str) -> StreamsHeartbeatResult:
        group = self._group(group_id, False)
        member = group.members.get(member_id)
        if member is None:
            raise unknown_member(group_id, member_id)
        log.info("streams group %s: member %s left", group_id, member_id)
        self.remove_member(group, member)
        self.persist(group)
        return StreamsHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH)

    def loaded(self, group: StreamsGroup) -> None:
        """A group restored from its records: its topology configured against the topics (the
        configured topology is not a record), and its timers armed."""
        if group.topology is not None:
            try:
                group.configured = configure_topics(group.topology, self._partition_count)
            except (InvalidTopology, IndexError):
                group.configured = None
        self.arm_timers(group)

    def arm_timers(self, group: StreamsGroup) -> None:
        """After a restart: each member's session (the broker's `group.streams.session.timeout.ms`
        until its next heartbeat) and the revocation timer of a member still revoking."""
        for member in group.members.values():
            self._arm_session(group, member, self.settings.session_timeout_ms)
            if member.state == MemberState.UNREVOKED_TASKS:
                self._arm_revocation(group, member)

    def _arm_session(self, group: StreamsGroup, member: StreamsMember, timeout_ms: int) -> None:
        member.session.start(timeout_ms, lambda: self.fence(group, member, "its session timed out"))

    def fence(self, group: StreamsGroup, member: StreamsMember, reason: str) -> None:
        if group.members.get(member.member_id) is not member:
            return
        log.info(
            "streams group %s: member %s removed: %s", group.group_id, member.member_id, reason
        )
        self.remove_member(group, member)
        self.persist(group)

    @staticmethod
    def remove_member(group: StreamsGroup, member: StreamsMember) -> None:
        """Kafka's streamsGroupFenceMember: the member goes and the group epoch is bumped."""
        group.remove(member.member_id)
        group.group_epoch += 1

    @staticmethod
    def commit_error(
        group: StreamsGroup,
        member_id: str,
        member_epoch: int,
        transactional: bool,
        api_version: int = 9,
        partitions: Iterable[tuple[str, int]] = (),
    ) -> StreamsGroupError | None:
        """Kafka's StreamsGroup.validateOffsetCommit: epoch -1 (admin clients) commits only while
        the group is empty, a transactional commit without a member always; otherwise the
        member must exist, commit with OffsetCommit v9+ (unless transactional) and at its
        current epoch, or at an older one for partitions of active tasks it was assigned at
        that epoch or before (KIP-1251)."""
        if member_epoch < 0 and (not group.members or (transactional and not member_id)):
            return None
        member = group.members.get(member_id)
        if member is None:
            return unknown_member(group.group_id, member_id)
        if not transactional and api_version < OFFSET_COMMIT_MIN_VERSION:
            return StreamsGroupError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the modern "
                "group protocol",
            )
        if 0 <= member_epoch < member.member_epoch and all(
            _assigned_by(group, member, topic, partition, member_epoch)
            for topic, partition in partitions
        ):
            return None
        return StreamsGroups.fetch_error(group, member_id, member_epoch)

    @staticmethod
    def fetch_error(
        group: StreamsGroup, member_id: str | None, member_epoch: int
    ) -> StreamsGroupError | None:
        """Kafka's StreamsGroup.validateOffsetFetch (OffsetFetch v9+ with a member)."""
        if member_id is None and member_epoch < 0:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return unknown_member(group.group_id, member_id or "")
        if member_epoch != member.member_epoch:
            return StreamsGroupError(
                ErrorCode.STALE_MEMBER_EPOCH,
                f"The received member epoch {member_epoch} does not match the expected member "
                f"epoch {member.member_epoch}.",
            )
        return None


def _assigned_by(
    group: StreamsGroup, member: StreamsMember, topic: str, partition: int, epoch: int
) -> bool:
    """Kafka's assignment epoch validator (KIP-1251): the partition is read by an active task
    the member holds (assigned or pending revocation) since `epoch` or before."""
    topology = group.topology
    if topology is None:
        return False
    for sub_id, sub in topology.subtopologies.items():
        names = (*sub.source_topics, *(t.name for t in sub.repartition_source_topics))
        if topic not in names:
            continue
        held = partition in member.assigned.active.get(sub_id, ()) or partition in (
            member.pending_revocation.active.get(sub_id, ())
        )
        assigned_at = member.active_epochs.get((sub_id, partition), member.member_epoch)
        if held and assigned_at <= epoch:
            return True
    return False


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _can_compute_target(group: StreamsGroup, interval_ms: int) -> bool:
    """Kafka's canComputeNextTargetAssignment (KIP-1263): a new target assignment only once
    `streams.assignment.interval.ms` passed since the last one (no interval, or no target
    computed yet, does not wait)."""
    if interval_ms <= 0 or group.assignment_timestamp_ms <= 0:
        return True
    return wall_clock_ms() - group.assignment_timestamp_ms >= interval_ms


def _difference(
    current: TaskMap, target: TaskMap, unreleased: Callable[[str, int], bool]
) -> tuple[TaskMap, TaskMap, TaskMap, bool]:
    """(kept, to revoke, to add now, whether some target tasks are still held elsewhere)."""
    kept: TaskMap = {}
    revoke: TaskMap = {}
    add: TaskMap = {}
    held = False
    for sub in sorted(set(current) | set(target)):
        have = current.get(sub, set())
        want = target.get(sub, set())
        if have & want:
            kept[sub] = have & want
        if have - want:
            revoke[sub] = have - want
        pending = {p for p in want - have if not unreleased(sub, p)}
        held |= len(pending) < len(want - have)
        if pending:
            add[sub] = pending
    return kept, revoke, add, held
