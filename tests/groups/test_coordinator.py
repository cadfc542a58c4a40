"""The coordinator in-process: offset expiration (offsets.retention.minutes, KIP-211) and the
initial rebalance delay."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from minibroker.config import BrokerConfig
from minibroker.groups.coordinator import JoinRequest, OffsetCommit, now_ms
from minibroker.groups.group import GroupState
from minibroker.protocol.errors import ErrorCode
from minibroker.server.broker import Broker

RETENTION_MS = 60_000


async def started(**settings: str) -> Broker:
    values = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.retention.minutes": "1",
        "offsets.topic.num.partitions": "3",
        "group.min.session.timeout.ms": "10",
        **settings,
    }
    broker = Broker(BrokerConfig(values), in_memory=True)
    await broker.start()
    broker.cluster.create_topic("t", 2)
    broker.cluster.create_topic("u", 1)
    return broker


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    running = await started()
    yield running
    await running.stop()


def commit(broker: Broker, group: str, topic: str, partition: int, retention_ms: int = -1) -> None:
    outcome = broker.groups.commit_offsets(
        group, "", None, -1, [OffsetCommit(topic, partition, 5, -1, "")], retention_ms
    )
    assert outcome == [ErrorCode.NO_ERROR]


def join_request(
    member_id: str = "", topics: tuple[str, ...] = ("t",), instance_id: str | None = None
) -> JoinRequest:
    subscription = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for topic in topics:
        subscription += len(topic).to_bytes(2, "big") + topic.encode()
    subscription += b"\xff\xff\xff\xff"
    return JoinRequest(
        group_id="active",
        member_id=member_id,
        group_instance_id=instance_id,
        client_id="c",
        client_host="",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=[("range", subscription)],
        require_known_member_id=False,
    )


async def test_simple_group_offsets_expire_after_retention(broker: Broker) -> None:
    commit(broker, "simple", "t", 0)
    start = now_ms()
    broker.groups.expire_offsets(start + RETENTION_MS - 1_000)
    assert broker.groups.fetch_offsets("simple", None)[0].offset == 5
    broker.groups.expire_offsets(start + RETENTION_MS + 1_000)
    assert broker.groups.fetch_offsets("simple", None) == []
    assert "simple" not in broker.groups.groups


async def test_explicit_retention_time_wins(broker: Broker) -> None:
    commit(broker, "short", "t", 0, retention_ms=10)
    broker.groups.expire_offsets(now_ms() + 1_000)
    assert broker.groups.fetch_offsets("short", None) == []


async def test_stable_consumer_group_keeps_subscribed_offsets(broker: Broker) -> None:
    result = await broker.groups.join_group(join_request())
    member = result.member_id
    await broker.groups.sync_group("active", member, None, 1, None, None, {member: b""})
    outcome = broker.groups.commit_offsets(
        "active",
        member,
        None,
        1,
        [OffsetCommit("t", 0, 5, -1, ""), OffsetCommit("u", 0, 6, -1, "")],
    )
    assert outcome == [ErrorCode.NO_ERROR, ErrorCode.NO_ERROR]
    broker.groups.expire_offsets(now_ms() + 2 * RETENTION_MS)
    remaining = broker.groups.fetch_offsets("active", None)
    assert [(f.topic, f.offset) for f in remaining] == [("t", 5)]
    assert broker.groups.groups["active"].state == GroupState.STABLE


async def test_static_member_rejoins_with_new_metadata_without_rebalance(broker: Broker) -> None:
    """A restarted Java consumer's subscription differs (no owned partitions any more); as
    Kafka, only a change of the group's selected protocol makes a static rejoin rebalance."""
    first = await broker.groups.join_group(join_request(instance_id="i"))
    member = first.member_id
    await broker.groups.sync_group("active", member, "i", 1, None, None, {member: b"a"})
    again = await broker.groups.join_group(join_request(topics=("t", "u"), instance_id="i"))
    assert (again.error, again.generation_id) == (ErrorCode.NO_ERROR, 1)
    assert again.member_id != member
    group = broker.groups.groups["active"]
    assert (group.state, group.generation_id) == (GroupState.STABLE, 1)


async def test_expiry_is_persisted() -> None:
    broker = await started()
    commit(broker, "simple", "t", 0)
    commit(broker, "simple", "t", 1, retention_ms=10)
    data = broker.cluster.topics["__consumer_offsets"]
    broker.groups.expire_offsets(now_ms() + 1_000)
    records = sum(p.log.log_end_offset for p in data.partitions)
    assert records == 3  # two commits and one tombstone
    await broker.stop()


async def test_initial_rebalance_delay_gathers_members() -> None:
    broker = await started(**{"group.initial.rebalance.delay.ms": "200"})
    try:
        first = asyncio.ensure_future(broker.groups.join_group(join_request()))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(broker.groups.join_group(join_request()))
        results = await asyncio.gather(first, second)
        assert {r.generation_id for r in results} == {1}
        assert sum(len(r.members) for r in results) == 2
    finally:
        await broker.stop()


async def test_stop_answers_waiting_members_not_coordinator(broker: Broker) -> None:
    alone = await broker.groups.join_group(join_request())
    synced = await broker.groups.sync_group("active", alone.member_id, None, 1, None, None, {})
    assert synced.error == ErrorCode.NO_ERROR
    newcomer = asyncio.ensure_future(broker.groups.join_group(join_request()))
    await asyncio.sleep(0)  # let the join reach the coordinator: it waits for the rebalance
    assert broker.groups.groups["active"].state == GroupState.PREPARING_REBALANCE
    broker.groups.stop()
    assert (await newcomer).error == ErrorCode.NOT_COORDINATOR
