"""`__consumer_offsets` loaded a partition at a time (groups/loading.py): after a restart no
partition is read until something needs a group of it, and a group first used after the
restart, through any API, is as it would be had every partition been loaded at start, its
timers included."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_consumer_wire_heartbeat import create_topic
from tests.groups.test_consumer_wire_heartbeat import heartbeat as consumer_heartbeat
from tests.groups.test_consumer_wire_heartbeat import join as consumer_join
from tests.groups.wirehelp import commit, fetch_offsets, heartbeat, join_two_step, sync, wait_until
from tests.txn.test_txn_coord_wire import add_offsets, end_txn, init_ok, state_of, txn_offset_commit
from tests.txn.txnhelp import wait_for
from tests.wire import WireClient

PARTITIONS = 5
SETTINGS = {
    "offsets.topic.num.partitions": str(PARTITIONS),
    "transaction.state.log.num.partitions": "2",
    "group.min.session.timeout.ms": "100",
    "group.consumer.min.session.timeout.ms": "100",
    "group.consumer.session.timeout.ms": "30000",
}
GROUPS = [f"lazy-{index}" for index in range(20)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as running:
        with WireClient(running.bootstrap_servers) as client:
            create_topic(client, "t", 2)
        yield running


def loaded_partitions(broker: ThreadedBroker) -> set[int]:
    async def read() -> set[int]:
        assert broker.broker is not None
        return set(broker.broker.groups.groups.loaded_partitions)

    loaded = broker.call(read())
    assert isinstance(loaded, set)
    return loaded


def describe(client: WireClient, group: str) -> Any:
    [described] = client.call(
        ApiKey.DescribeGroups, 5, groups=[group], include_authorized_operations=False
    ).groups
    return described


def listed(client: WireClient) -> list[str]:
    response = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=[])
    assert response.error_code == ErrorCode.NO_ERROR
    return sorted(group.group_id for group in response.groups)


def test_nothing_is_loaded_until_used_and_listing_loads_every_partition(
    broker: ThreadedBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        for index, group in enumerate(GROUPS):
            assert commit(client, group, {("t", 0): index + 1}) == {("t", 0): ErrorCode.NO_ERROR}
    broker.restart()
    assert loaded_partitions(broker) == set()
    with WireClient(broker.bootstrap_servers) as client:
        assert fetch_offsets(client, GROUPS[7], {"t": [0]})[("t", 0)][0] == 8
        assert loaded_partitions(broker) == {partition_for(GROUPS[7], PARTITIONS)}
        assert listed(client) == sorted(GROUPS)
        assert loaded_partitions(broker) == set(range(PARTITIONS))
        fetched = [fetch_offsets(client, group, {"t": [0]})[("t", 0)][0] for group in GROUPS]
        assert fetched == list(range(1, 21))


def test_a_commit_to_a_group_not_yet_loaded_keeps_its_other_offsets(
    broker: ThreadedBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        commit(client, "kept", {("t", 0): 5, ("t", 1): 9})
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        commit(client, "kept", {("t", 0): 6})
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        offsets = fetch_offsets(client, "kept", None)
    assert {key: value[0] for key, value in offsets.items()} == {("t", 0): 6, ("t", 1): 9}


def test_a_classic_group_comes_back_with_its_generation_and_members(
    broker: ThreadedBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        member = join_two_step(client, "classic").member_id
        assert sync(client, "classic", member, 1, {member: b"mine"}).assignment == b"mine"
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        described = describe(client, "classic")
        assert (described.group_state, [m.member_id for m in described.members]) == (
            "Stable",
            [member],
        )
        assert described.members[0].member_assignment == b"mine"
        assert heartbeat(client, "classic", member, 1) == ErrorCode.NO_ERROR


def test_a_member_whose_session_ran_out_before_its_group_was_loaded_is_gone(
    broker: ThreadedBroker,
) -> None:
    """Loaded at start, the member's session would have expired, then the rebalance with no
    member left would have completed: the group is Empty at generation 2 when first used."""
    with WireClient(broker.bootstrap_servers) as client:
        member = join_two_step(client, "expired", session_ms=300, rebalance_ms=300).member_id
        sync(client, "expired", member, 1, {member: b""})
    broker.restart()
    time.sleep(1.0)  # longer than the session and the rebalance that follows it
    with WireClient(broker.bootstrap_servers) as client:
        described = describe(client, "expired")
        assert (described.group_state, described.members) == ("Empty", [])
        assert heartbeat(client, "expired", member, 1) == ErrorCode.UNKNOWN_MEMBER_ID
        joined = join_two_step(client, "expired")
        assert joined.generation_id == 3


def test_a_consumer_group_member_heartbeats_on_at_its_epoch(broker: ThreadedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        topic = create_topic(client, "kip848", 2)
        joined = consumer_join(client, "modern", "m", ["kip848"])
        assert joined.error_code == ErrorCode.NO_ERROR
        epoch = joined.member_epoch
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        again = consumer_heartbeat(client, "modern", "m", epoch, owned={topic: [0, 1]})
        assert (again.error_code, again.member_epoch) == (ErrorCode.NO_ERROR, epoch)
        assert consumer_heartbeat(client, "modern", "x", 5).error_code == (
            ErrorCode.UNKNOWN_MEMBER_ID
        )


def test_pending_transactional_offsets_are_committed_by_a_marker_after_a_restart(
    broker: ThreadedBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        commit(client, "txn-group", {("t", 0): 1})
        pid, epoch = init_ok(client, "tx")
        assert add_offsets(client, "tx", pid, epoch, "txn-group") == ErrorCode.NO_ERROR
        assert txn_offset_commit(client, "tx", pid, epoch, "txn-group", 5) == ErrorCode.NO_ERROR
    broker.restart()
    assert loaded_partitions(broker) == set()
    with WireClient(broker.bootstrap_servers) as client:
        assert end_txn(client, "tx", pid, epoch, True) == ErrorCode.NO_ERROR
        wait_for(lambda: state_of(broker.bootstrap_servers, "tx") == "CompleteCommit", "commit")
        assert fetch_offsets(client, "txn-group", {"t": [0]})[("t", 0)][0] == 5


def test_a_group_deleted_first_thing_after_a_restart_stays_deleted(
    broker: ThreadedBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        commit(client, "doomed", {("t", 0): 3})
        commit(client, "spared", {("t", 0): 4})
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["doomed"])
        assert deleted.results[0].error_code == ErrorCode.NO_ERROR
    broker.restart()
    with WireClient(broker.bootstrap_servers) as client:
        assert listed(client) == ["spared"]
        assert fetch_offsets(client, "doomed", {"t": [0]})[("t", 0)][0] == -1


def test_offset_expiry_loads_the_partitions_it_expires_offsets_in(tmp_path: Path) -> None:
    with (
        ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        create_topic(client, "t", 1)
        for group, retention_ms in (("short-lived", 1), ("kept", -1)):
            response = client.call(
                ApiKey.OffsetCommit,
                2,
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                retention_time_ms=retention_ms,
                topics=[
                    {"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7}]}
                ],
            )
            assert response.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    settings = {**SETTINGS, "offsets.retention.check.interval.ms": "100"}
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as broker:
        wait_until(lambda: loaded_partitions(broker) == set(range(PARTITIONS)))
        with WireClient(broker.bootstrap_servers) as client:
            assert listed(client) == ["kept"]
