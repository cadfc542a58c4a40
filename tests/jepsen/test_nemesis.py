"""The nemesis schedule is drawn from the seed alone: the same seed gives the same faults."""

from __future__ import annotations

from collections import Counter
from itertools import islice

from benchmarks.jepsen.nemesis import FAULTS, schedule


def test_the_same_seed_gives_the_same_schedule() -> None:
    first = list(islice(schedule(5, [1, 2, 3], 3, FAULTS, 2.0), 50))
    assert first == list(islice(schedule(5, [1, 2, 3], 3, FAULTS, 2.0), 50))
    assert first != list(islice(schedule(6, [1, 2, 3], 3, FAULTS, 2.0), 50))


def test_the_schedule_draws_every_kind_node_and_partition_in_bounds() -> None:
    faults = list(islice(schedule(1, [1, 2, 3], 3, FAULTS, 2.0), 500))
    assert set(Counter(fault.kind for fault in faults)) == set(FAULTS)
    assert {fault.node for fault in faults} == {1, 2, 3}
    assert {(fault.node, fault.peer) for fault in faults} == {
        (node, peer) for node in (1, 2, 3) for peer in (1, 2, 3) if node != peer
    }
    assert {fault.partition for fault in faults} == {0, 1, 2}
    assert all(1.0 <= fault.duration_s <= 3.0 for fault in faults)
    assert all(0.5 <= fault.gap_s <= 2.0 for fault in faults)


def test_a_schedule_limited_to_some_kinds_draws_only_those() -> None:
    faults = list(islice(schedule(1, [1, 2, 3], 3, ["leader-alone"], 1.0), 100))
    assert {fault.kind for fault in faults} == {"leader-alone"}


def test_a_five_node_schedule_draws_all_five_nodes() -> None:
    faults = list(islice(schedule(3, [1, 2, 3, 4, 5], 3, FAULTS, 2.0), 500))
    assert {fault.node for fault in faults} == {1, 2, 3, 4, 5}
    assert {fault.peer for fault in faults} == {1, 2, 3, 4, 5}
    assert all(fault.peer != fault.node for fault in faults)
