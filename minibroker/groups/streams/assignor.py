"""The streams task assignor, as Kafka 4.3's `StickyTaskAssignor` ("sticky").

Tasks are (subtopology, partition). Members belong to processes (a Kafka Streams instance
runs one member per stream thread); load is counted per process (tasks / members) and per
member. `assign()` places:

1. Stateful active tasks (subtopologies with changelog topics), then stateless ones, each pass
   balanced on its own: a task stays with the member that had it as active while that member
   is below its quota, then goes to a member that had it as a standby (or warm-up), then to
   the least loaded process (fewest stateless tasks breaking ties) and its least loaded
   member. Quotas are Kafka's: ceil(tasks / members), recomputed as members fill up.
2. `num_standby_replicas` standby tasks of every stateful task, each on a process that holds
   no copy of the task yet: first the task's previous active member, then its previous
   standby members (least loaded first), each while below the total task quota, then the
   least loaded processes. A standby that finds no process without a copy is dropped
   (Kafka logs that there is not enough capacity).

The assignor gives no warm-up tasks (Kafka's sticky assignor answers active and standby
tasks only); rack-aware standby placement by client tags is not done.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from minibroker.groups.streams.model import TaskMap, TasksTuple

log = logging.getLogger(__name__)

TaskId = tuple[str, int]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    process_id: str
    # The member's current target assignment (what it had before this assignment).
    previous: TasksTuple = field(default_factory=TasksTuple)


@dataclass(eq=False)
class _Process:
    process_id: str
    tasks_by_member: dict[str, set[TaskId]] = field(default_factory=dict)
    active_by_member: dict[str, set[TaskId]] = field(default_factory=dict)
    stateless_active: int = 0

    def add_member(self, member_id: str) -> None:
        self.tasks_by_member[member_id] = set()
        self.active_by_member[member_id] = set()

    @property
    def load(self) -> float:
        total = sum(len(tasks) for tasks in self.tasks_by_member.values())
        return total / len(self.tasks_by_member)

    @property
    def stateless_load(self) -> float:
        return self.stateless_active / len(self.tasks_by_member)

    def has_task(self, task: TaskId) -> bool:
        return any(task in tasks for tasks in self.tasks_by_member.values())

    def count(self, member_id: str) -> int:
        return len(self.tasks_by_member[member_id])

    def add(self, member_id: str, task: TaskId, active: bool, stateful: bool) -> int:
        self.tasks_by_member[member_id].add(task)
        if active:
            self.active_by_member[member_id].add(task)
            if not stateful:
                self.stateless_active += 1
        return self.count(member_id)

    def least_loaded_member(self) -> str:
        return min(self.tasks_by_member, key=lambda member: (self.count(member), member))


def _per_member(total: int, members: int) -> int:
    """Kafka's computeTasksPerMember: the ceiling of total / members."""
    if members <= 0:
        return 0
    return -(-total // members)


@dataclass(eq=False)
class _Quota:
    """Tasks left and members with capacity left; the per-member quota follows from them."""

    total: int
    members: int
    per_member: int = 0

    def __post_init__(self) -> None:
        self.per_member = _per_member(self.total, self.members)

    def filled(self, count: int) -> None:
        """A member now has `count` tasks: if that is the quota, it is full."""
        if count == self.per_member:
            self.members -= 1
            self.total -= count
            self.per_member = _per_member(self.total, self.members)


@dataclass(eq=False)
class _State:
    processes: dict[str, _Process]
    member_process: dict[str, str]
    prev_active: dict[TaskId, str]
    prev_standby: dict[TaskId, list[str]]
    stateful_quota: _Quota
    active_quota: _Quota
    total_quota: _Quota

    def process_of(self, member_id: str) -> _Process:
        return self.processes[self.member_process[member_id]]


def assign(
    members: dict[str, MemberSpec],
    tasks_by_subtopology: dict[str, int],
    stateful_subtopologies: set[str],
    num_standby_replicas: int,
) -> dict[str, TasksTuple]:
    """The target assignment of each member."""
    if not members:
        return {}
    stateful = [
        (sub, p)
        for sub, count in sorted(tasks_by_subtopology.items())
        if sub in stateful_subtopologies
        for p in range(count)
    ]
    stateless = [
        (sub, p)
        for sub, count in sorted(tasks_by_subtopology.items())
        if sub not in stateful_subtopologies
        for p in range(count)
    ]
    state = _initial_state(members, stateful, stateless, num_standby_replicas)
    _assign_active(state, list(stateful), True)
    _assign_active(state, stateless, False)
    if num_standby_replicas > 0:
        _assign_standby(state, stateful, num_standby_replicas)
    return _result(state, members)


def _initial_state(
    members: dict[str, MemberSpec],
    stateful: list[TaskId],
    stateless: list[TaskId],
    num_standby_replicas: int,
) -> _State:
    processes: dict[str, _Process] = {}
    prev_active: dict[TaskId, str] = {}
    prev_standby: dict[TaskId, list[str]] = {}
    for member_id in sorted(members):
        spec = members[member_id]
        processes.setdefault(spec.process_id, _Process(spec.process_id)).add_member(member_id)
        for task in _task_ids(spec.previous.active):
            prev_active[task] = member_id
        for task in _task_ids(spec.previous.standby) + _task_ids(spec.previous.warmup):
            prev_standby.setdefault(task, []).append(member_id)
    count = len(members)
    total = len(stateful) + len(stateless) + len(stateful) * num_standby_replicas
    return _State(
        processes=processes,
        member_process={member_id: spec.process_id for member_id, spec in members.items()},
        prev_active=prev_active,
        prev_standby=prev_standby,
        stateful_quota=_Quota(len(stateful), count),
        active_quota=_Quota(len(stateful) + len(stateless), count),
        total_quota=_Quota(total, count),
    )


def _task_ids(tasks: TaskMap) -> list[TaskId]:
    return [(sub, p) for sub, parts in sorted(tasks.items()) for p in sorted(parts)]


def _add_active(state: _State, member_id: str, task: TaskId, stateful: bool) -> None:
    count = state.process_of(member_id).add(member_id, task, True, stateful)
    if stateful:
        state.stateful_quota.filled(count)
    state.active_quota.filled(count)
    state.total_quota.filled(count)


def _below_active_quota(state: _State, member_id: str, stateful: bool) -> bool:
    quota = state.stateful_quota if stateful else state.active_quota
    return state.process_of(member_id).count(member_id) < quota.per_member


def _least_loaded_previous(
    state: _State, candidates: list[str], task: TaskId | None = None
) -> str | None:
    """The previous holder on the least loaded process (and least loaded itself), skipping
    processes that already hold the task when `task` is given."""
    best: str | None = None
    best_key: tuple[float, int] | None = None
    for member_id in candidates:
        if member_id not in state.member_process:
            continue
        process = state.process_of(member_id)
        if task is not None and process.has_task(task):
            continue
        key = (process.load, process.count(member_id))
        if best_key is None or (key[0] < best_key[0] and key[1] < best_key[1]):
            best, best_key = member_id, key
    return best


def _assign_active(state: _State, tasks: list[TaskId], stateful: bool) -> None:
    tasks.sort(key=lambda task: (task[1], task[0]))
    remaining: list[TaskId] = []
    for task in tasks:  # 1. the previous active owner
        owner = state.prev_active.get(task)
        if owner in state.member_process and _below_active_quota(state, owner, stateful):
            _add_active(state, owner, task, stateful)
        else:
            remaining.append(task)
    unassigned: list[TaskId] = []
    for task in remaining:  # 2. a previous standby (or warm-up) holder
        holder = _least_loaded_previous(state, state.prev_standby.get(task, []))
        if holder is not None and _below_active_quota(state, holder, stateful):
            _add_active(state, holder, task, stateful)
        else:
            unassigned.append(task)
    unassigned.sort()
    for task in unassigned:  # 3. the least loaded process, then its least loaded member
        process = min(
            state.processes.values(),
            key=lambda p: (p.load, p.stateless_load, p.process_id),
        )
        member_id = process.least_loaded_member()
        count = process.add(member_id, task, True, stateful)
        state.active_quota.filled(count)
        state.total_quota.filled(count)


def _add_standby(state: _State, member_id: str, task: TaskId) -> None:
    count = state.process_of(member_id).add(member_id, task, False, True)
    state.total_quota.filled(count)


def _below_total_quota(state: _State, member_id: str) -> bool:
    return state.process_of(member_id).count(member_id) < state.total_quota.per_member


def _assign_standby(state: _State, tasks: list[TaskId], replicas: int) -> None:
    left_over: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda task: (task[1], task[0]), reverse=True):
        remaining = replicas
        owner = state.prev_active.get(task)
        if (
            owner in state.member_process
            and not state.process_of(owner).has_task(task)
            and _below_total_quota(state, owner)
        ):
            _add_standby(state, owner, task)
            remaining -= 1
        while remaining > 0:
            holder = _least_loaded_previous(state, state.prev_standby.get(task, []), task)
            if holder is None or not _below_total_quota(state, holder):
                break
            _add_standby(state, holder, task)
            remaining -= 1
        if remaining > 0:
            left_over.append((task, remaining))
    for task, remaining in sorted(left_over, reverse=True):
        for replica in range(remaining):
            candidates = [p for p in state.processes.values() if not p.has_task(task)]
            if not candidates:
                log.warning(
                    "Unable to assign %d of %d standby tasks for task [%s]. There is not "
                    "enough available capacity. You should increase the number of threads "
                    "and/or application instances to maintain the requested number of "
                    "standby replicas.",
                    remaining - replica,
                    replicas,
                    f"{task[0]}_{task[1]}",
                )
                break
            process = min(candidates, key=lambda p: (p.load, p.process_id))
            _add_standby(state, process.least_loaded_member(), task)


def _result(state: _State, members: dict[str, MemberSpec]) -> dict[str, TasksTuple]:
    result: dict[str, TasksTuple] = {}
    for member_id in members:
        process = state.process_of(member_id)
        active: TaskMap = {}
        standby: TaskMap = {}
        for task in process.tasks_by_member[member_id]:
            target = active if task in process.active_by_member[member_id] else standby
            target.setdefault(task[0], set()).add(task[1])
        result[member_id] = TasksTuple(active, standby, {})
    return result
