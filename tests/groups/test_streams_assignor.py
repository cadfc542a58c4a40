"""The streams task assignor on its own (groups/streams/assignor.py), with cases from Kafka
4.3's StickyTaskAssignorTest: even spreading over processes and their members, stickiness of
active tasks, capacity by member count, and standbys on other processes."""

from __future__ import annotations

from minibroker.groups.streams.assignor import MemberSpec, assign
from minibroker.groups.streams.model import TaskMap, TasksTuple

SUB = "test-subtopology"


def spec(process: str, active: TaskMap | None = None) -> MemberSpec:
    return MemberSpec(process, TasksTuple(active or {}, {}, {}))


def active_count(result: dict[str, TasksTuple], member: str) -> int:
    return sum(len(parts) for parts in result[member].active.values())


def all_active(result: dict[str, TasksTuple]) -> dict[str, set[int]]:
    merged: dict[str, set[int]] = {}
    for tasks in result.values():
        for sub, parts in tasks.active.items():
            merged.setdefault(sub, set()).update(parts)
    return merged


def test_one_active_task_to_each_process_when_as_many_tasks_as_processes() -> None:
    members = {f"member{i}": spec(f"process{i}") for i in range(1, 4)}
    result = assign(members, {SUB: 3}, set(), 0)
    assert [active_count(result, m) for m in sorted(members)] == [1, 1, 1]
    assert all_active(result) == {SUB: {0, 1, 2}}


def test_tasks_spread_evenly_over_processes_and_members() -> None:
    members = {f"member{p}_{m}": spec(f"process{p}") for p in range(1, 4) for m in (1, 2)}
    subs = {"test-subtopology1": 3, "test-subtopology2": 3}
    result = assign(members, subs, set(), 0)
    assert all(active_count(result, m) == 1 for m in members)
    assert all_active(result) == {"test-subtopology1": {0, 1, 2}, "test-subtopology2": {0, 1, 2}}


def test_standbys_go_to_other_processes() -> None:
    members = {f"member{p}_{m}": spec(f"process{p}") for p in range(1, 4) for m in (1, 2)}
    subs = {"test-subtopology1": 3, "test-subtopology2": 3}
    result = assign(members, subs, set(subs), 1)
    assert all(active_count(result, m) == 1 for m in members)
    process_of = {m: m.split("_")[0] for m in members}
    for sub, count in subs.items():
        for partition in range(count):
            holders = [
                (m, role)
                for m, tasks in result.items()
                for role, held in (("active", tasks.active), ("standby", tasks.standby))
                if partition in held.get(sub, set())
            ]
            assert sorted(role for _, role in holders) == ["active", "standby"]
            assert len({process_of[m] for m, _ in holders}) == 2


def test_active_tasks_do_not_migrate_to_another_process() -> None:
    members = {
        "member1": spec("process1", {SUB: {0}}),
        "member2": spec("process2", {SUB: {1}}),
    }
    result = assign(members, {SUB: 3}, set(), 0)
    assert 0 in result["member1"].active[SUB] and 1 in result["member2"].active[SUB]
    assert active_count(result, "member1") + active_count(result, "member2") == 3
    flipped = {
        "member2": spec("process2", {SUB: {1}}),
        "member3": spec("process1", {SUB: {2}}),
    }
    result = assign(flipped, {SUB: 3}, set(), 0)
    assert 1 in result["member2"].active[SUB] and 2 in result["member3"].active[SUB]


def test_a_new_process_takes_tasks_without_moving_all() -> None:
    members = {
        "member1": spec("process1", {SUB: {0, 2}}),
        "member2": spec("process2", {SUB: {1}}),
        "member3": spec("process3"),
    }
    result = assign(members, {SUB: 3}, set(), 0)
    assert result["member2"].active[SUB] == {1}
    assert len(result["member1"].active[SUB]) == len(result["member3"].active[SUB]) == 1
    assert result["member1"].active[SUB] | result["member3"].active[SUB] == {0, 2}


def test_capacity_is_counted_by_members() -> None:
    members = {
        "member1": spec("process1"),
        "member2_1": spec("process2"),
        "member2_2": spec("process2"),
    }
    result = assign(members, {SUB: 3}, set(), 0)
    assert [active_count(result, m) for m in sorted(members)] == [1, 1, 1]


def test_tasks_spread_evenly_with_unequal_subtopologies() -> None:
    had = {"test-subtopology1": {0, 1, 2, 3, 4, 5}, "test-subtopology2": {0}}
    members = {"member1": spec("process1", had), "member2": spec("process2")}
    result = assign(members, {"test-subtopology1": 6, "test-subtopology2": 1}, set(), 0)
    assert (active_count(result, "member1"), active_count(result, "member2")) == (4, 3)
    assert all_active(result) == had


def test_stickiness_with_more_members_than_tasks() -> None:
    members = {
        "member1": spec("process1", {SUB: {0}}),
        "member2": spec("process2", {SUB: {2}}),
        "member3": spec("process3", {SUB: {1}}),
        "member4": spec("process4"),
        "member5": spec("process5"),
    }
    result = assign(members, {SUB: 3}, set(), 0)
    assert [result[m].active.get(SUB, set()) for m in sorted(members)] == [
        {0},
        {2},
        {1},
        set(),
        set(),
    ]


def standby(result: dict[str, TasksTuple], member: str) -> set[int]:
    return result[member].standby.get(SUB, set())


def test_previous_standbys_become_the_active_tasks() -> None:
    members = {
        "member1": MemberSpec("process1", TasksTuple({}, {SUB: {0}}, {})),
        "member2": MemberSpec("process2", TasksTuple({}, {SUB: {1}}, {})),
    }
    result = assign(members, {SUB: 2}, {SUB}, 1)
    assert (result["member1"].active[SUB], standby(result, "member1")) == ({0}, {1})
    assert (result["member2"].active[SUB], standby(result, "member2")) == ({1}, {0})


def test_multiple_standby_replicas() -> None:
    members = {f"member{i + 1}": spec(f"process{i + 1}", {SUB: {i}}) for i in range(3)}
    result = assign(members, {SUB: 3}, {SUB}, 2)
    assert [standby(result, m) for m in sorted(members)] == [{1, 2}, {0, 2}, {0, 1}]


def test_no_standby_without_another_process() -> None:
    result = assign({"member1": spec("process1")}, {SUB: 1}, {SUB}, 1)
    assert result["member1"].standby == {}


def test_active_and_standby_tasks_are_balanced() -> None:
    members = {f"member{i}": spec(f"process{i}") for i in range(1, 7)}
    result = assign(members, {SUB: 3}, {SUB}, 1)
    assert all(active_count(result, m) + len(standby(result, m)) == 1 for m in members)
    assert all_active(result) == {SUB: {0, 1, 2}}
    assert set().union(*(standby(result, m) for m in members)) == {0, 1, 2}


def test_capacity_with_previous_standbys() -> None:
    members = {
        "member1": MemberSpec("process1", TasksTuple({SUB: {0}}, {SUB: {1}}, {})),
        "member2_1": MemberSpec("process2", TasksTuple({SUB: {2}}, {SUB: {1}}, {})),
        "member2_2": spec("process2"),
    }
    result = assign(members, {SUB: 3}, set(), 0)
    assert [result[m].active[SUB] for m in ("member1", "member2_1", "member2_2")] == [
        {0},
        {2},
        {1},
    ]
