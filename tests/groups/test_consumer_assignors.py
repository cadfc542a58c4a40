"""The server-side assignors (`uniform`, `range`) and reconciliation steps, unit-tested:
every subscribed partition assigned once, balance, stickiness, and the revocation-first
order of `reconcile`; plus the broker's `group.consumer.*` bounds and migration policy."""

from __future__ import annotations

import uuid

import pytest

from minibroker.config import BrokerConfig, ConfigError
from minibroker.groups.consumer.assignors import MemberSpec, range_assign, uniform_assign
from minibroker.groups.consumer.model import Assignment, ConsumerMember, MemberState
from minibroker.groups.consumer.reconcile import reconcile
from minibroker.groups.settings import ConsumerSettings, migration_policy

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def count(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


def all_partitions(targets: dict[str, Assignment]) -> list[tuple[uuid.UUID, int]]:
    return sorted((t, p) for a in targets.values() for t, parts in a.items() for p in parts)


def test_uniform_balances_and_assigns_each_partition_once() -> None:
    members = {m: MemberSpec(frozenset({T1, T2})) for m in "abc"}
    targets = uniform_assign(members, {T1: 5, T2: 2})
    assert all_partitions(targets) == sorted([(T1, p) for p in range(5)] + [(T2, 0), (T2, 1)])
    assert sorted(count(a) for a in targets.values()) == [2, 2, 3]


def test_uniform_is_sticky_when_a_member_joins() -> None:
    before = {"a": {T1: {0, 1, 2}}, "b": {T1: {3, 4, 5}}}
    members = {m: MemberSpec(frozenset({T1}), before.get(m, {})) for m in "abc"}
    targets = uniform_assign(members, {T1: 6})
    assert [count(targets[m]) for m in "abc"] == [2, 2, 2]
    assert targets["a"][T1] <= before["a"][T1]
    assert targets["b"][T1] <= before["b"][T1]


def test_uniform_with_different_subscriptions() -> None:
    members = {"a": MemberSpec(frozenset({T1})), "b": MemberSpec(frozenset({T1, T2}))}
    targets = uniform_assign(members, {T1: 2, T2: 2})
    assert T2 not in targets["a"]
    assert all_partitions(targets) == [(T1, 0), (T1, 1), (T2, 0), (T2, 1)]
    assert count(targets["a"]) == 2 and count(targets["b"]) == 2


def test_range_gives_consecutive_ranges_in_member_order() -> None:
    members = {m: MemberSpec(frozenset({T1, T2})) for m in ("b", "a")}
    targets = range_assign(members, {T1: 3, T2: 4})
    assert targets == {"a": {T1: {0, 1}, T2: {0, 1}}, "b": {T1: {2}, T2: {2, 3}}}


def no_owner(topic_id: uuid.UUID, partition: int) -> int:
    return -1


def test_reconcile_revokes_first_then_assigns() -> None:
    member = ConsumerMember("a", member_epoch=1, assigned={T1: {0, 1, 2, 3}})
    revoking = reconcile(member, 2, {T1: {0, 1}}, no_owner, {T1: {0, 1, 2, 3}})
    assert revoking is not None
    assert (revoking.state, revoking.epoch) == (MemberState.UNREVOKED_PARTITIONS, 1)
    assert (revoking.assigned, revoking.pending_revocation) == ({T1: {0, 1}}, {T1: {2, 3}})
    member.state, member.assigned = revoking.state, revoking.assigned
    member.pending_revocation = revoking.pending_revocation
    assert reconcile(member, 2, {T1: {0, 1}}, no_owner, {T1: {0, 1, 2, 3}}) is None
    done = reconcile(member, 2, {T1: {0, 1}}, no_owner, {T1: {0, 1}})
    assert done is not None
    assert (done.state, done.epoch, done.assigned) == (MemberState.STABLE, 2, {T1: {0, 1}})


def test_reconcile_waits_for_partitions_owned_elsewhere() -> None:
    member = ConsumerMember("b", member_epoch=0)
    step = reconcile(member, 2, {T1: {2, 3}}, lambda t, p: 1 if p == 3 else -1, {})
    assert step is not None
    assert (step.state, step.epoch, step.assigned) == (
        MemberState.UNRELEASED_PARTITIONS,
        2,
        {T1: {2}},
    )


@pytest.mark.parametrize(
    "settings",
    [
        {"group.consumer.session.timeout.ms": "1000"},  # below the 45 s minimum
        {"group.consumer.heartbeat.interval.ms": "20000"},  # above the 15 s maximum
        {"group.consumer.assignors": "uniform,sticky"},
        {"group.consumer.max.size": "0"},
    ],
)
def test_out_of_range_settings_are_refused(settings: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        ConsumerSettings.from_config(BrokerConfig(settings))


def test_migration_policy() -> None:
    assert migration_policy("BIDIRECTIONAL") == (True, True)
    assert migration_policy("upgrade") == (True, False)
    assert migration_policy("disabled") == (False, False)
    with pytest.raises(ConfigError):
        migration_policy("sideways")


def test_kafka_assignor_class_names_are_accepted() -> None:
    config = BrokerConfig(
        {"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}
    )
    assert ConsumerSettings.from_config(config).assignors == ["range"]
