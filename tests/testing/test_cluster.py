"""In-process clusters over the wire: Metadata, leaders, NOT_LEADER_OR_FOLLOWER, leader moves,
coordinators, and nodes going down and up."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaCluster, NodeError
from tests.wire import WireClient


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        running.create_topic("t", partitions=3)
        yield running


def _metadata(address: str) -> Any:
    with WireClient(address) as client:
        return client.call(ApiKey.Metadata, 9, topics=[{"name": "t"}])


def _produce(address: str, partition: int, version: int = 9) -> Any:
    batch = build_batch([(None, b"v", (), 1_700_000_000_000)])
    with WireClient(address) as client:
        response = client.call(
            ApiKey.Produce,
            version,
            acks=-1,
            timeout_ms=5000,
            topic_data=[{"name": "t", "partition_data": [{"index": partition, "records": batch}]}],
        )
    return response.responses[0].partition_responses[0]


def _refused(address: str) -> bool:
    host, _, port = address.partition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_metadata_lists_every_node_and_spreads_leaders(cluster: KafkaCluster) -> None:
    for node in cluster.node_ids:
        response = _metadata(cluster.address(node))
        brokers = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
        assert brokers == {n: cluster.address(n) for n in cluster.node_ids}
        leaders = {p.partition_index: p.leader_id for p in response.topics[0].partitions}
        assert leaders == {0: 1, 1: 2, 2: 3}
        assert response.controller_id == 1


def test_only_the_leader_takes_produce_fetch_and_list_offsets(cluster: KafkaCluster) -> None:
    assert _produce(cluster.address(2), 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce(cluster.address(1), 0).error_code == ErrorCode.NO_ERROR
    assert cluster.end_offsets("t")[0] == 1
    with WireClient(cluster.address(3)) as client:
        listed = client.call(
            ApiKey.ListOffsets,
            5,
            replica_id=-1,
            topics=[{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        )
        fetched = client.call(
            ApiKey.Fetch,
            11,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        )
    assert listed.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_move_leader_bumps_the_epoch(cluster: KafkaCluster) -> None:
    before = _metadata(cluster.address(1)).topics[0].partitions[0]
    cluster.move_leader("t", 0, 3)
    after = _metadata(cluster.address(1)).topics[0].partitions[0]
    assert (before.leader_id, after.leader_id) == (1, 3)
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.replica_nodes == [3] and after.isr_nodes == [3]
    assert _produce(cluster.address(1), 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce(cluster.address(3), 0).error_code == ErrorCode.NO_ERROR
    cluster.move_leader("t", 0, 3)
    assert _metadata(cluster.address(1)).topics[0].partitions[0].leader_epoch == after.leader_epoch


def _fetch(address: str, partition: int) -> Any:
    with WireClient(address) as client:
        response = client.call(
            ApiKey.Fetch,
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": "t",
                    "partitions": [
                        {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        )
    return response.responses[0].partitions[0]


def test_a_stopped_node_takes_its_single_replica_partitions_offline(cluster: KafkaCluster) -> None:
    address = cluster.address(2)
    assert _produce(address, 1).error_code == ErrorCode.NO_ERROR
    cluster.stop_node(2)
    assert _refused(address)
    assert cluster.live_nodes == [1, 3]
    assert address not in cluster.bootstrap_servers.split(",")
    response = _metadata(cluster.address(1))
    assert sorted(b.node_id for b in response.brokers) == [1, 3]
    offline = response.topics[0].partitions[1]
    assert (offline.error_code, offline.leader_id, offline.leader_epoch) == (
        ErrorCode.LEADER_NOT_AVAILABLE,
        -1,
        0,
    )
    assert (offline.replica_nodes, offline.isr_nodes, offline.offline_replicas) == ([2], [2], [2])
    assert cluster.leader("t", 1) == -1
    for node in (1, 3):
        assert _produce(cluster.address(node), 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert _fetch(cluster.address(node), 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce(cluster.address(1), 0).error_code == ErrorCode.NO_ERROR
    with pytest.raises(NodeError):
        cluster.move_leader("t", 0, 2)
    cluster.start_node(2)
    assert not _refused(address)
    assert sorted(b.node_id for b in _metadata(address).brokers) == [1, 2, 3]
    back = _metadata(address).topics[0].partitions[1]
    assert (back.error_code, back.leader_id, back.leader_epoch) == (ErrorCode.NO_ERROR, 2, 1)
    fetched = _fetch(address, 1)
    assert (fetched.error_code, fetched.high_watermark) == (ErrorCode.NO_ERROR, 1)


def test_find_coordinator_answers_the_chosen_node(cluster: KafkaCluster) -> None:
    cluster.set_coordinator(2)
    cluster.set_coordinator(3, group="special")
    with WireClient(cluster.address(1)) as client:
        plain = client.call(ApiKey.FindCoordinator, 3, key="g", key_type=0)
        batched = client.call(
            ApiKey.FindCoordinator, 4, key_type=0, coordinator_keys=["g", "special"]
        )
    assert (plain.node_id, f"{plain.host}:{plain.port}") == (2, cluster.address(2))
    assert [c.node_id for c in batched.coordinators] == [2, 3]
    cluster.stop_node(2)
    # __consumer_offsets has one replica: the group's partition is offline with its node
    assert cluster.coordinator("g") == -1
    with WireClient(cluster.address(1)) as client:
        offline = client.call(ApiKey.FindCoordinator, 3, key="g", key_type=0)
    assert (offline.error_code, offline.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    cluster.start_node(2)
    assert cluster.coordinator("g") == 2


def test_describe_cluster_lists_live_nodes(cluster: KafkaCluster) -> None:
    cluster.stop_node(3)
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.DescribeCluster, 0, include_cluster_authorized_operations=False
        )
    assert sorted(b.broker_id for b in response.brokers) == [1, 2]


def test_a_single_broker_leads_everything() -> None:
    with KafkaCluster(nodes=1, storage="memory") as single:
        single.create_topic("t", partitions=3)
        for index in range(3):
            assert _produce(single.address(1), index).error_code == ErrorCode.NO_ERROR
        with pytest.raises(NodeError):
            single.move_leader("t", 0, 2)


def test_group_and_transaction_requests_need_the_coordinator(cluster: KafkaCluster) -> None:
    cluster.set_coordinator(2)
    cluster.set_coordinator(3, transactional_id="tx")
    beat = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    commit = {
        "group_id": "g",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    }
    with WireClient(cluster.address(1)) as client:
        assert client.call(ApiKey.Heartbeat, 4, **beat).error_code == ErrorCode.NOT_COORDINATOR
        committed = client.call(ApiKey.OffsetCommit, 8, **commit)
        init = client.call(
            ApiKey.InitProducerId,
            4,
            transactional_id="tx",
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        plain_init = client.call(
            ApiKey.InitProducerId,
            4,
            transactional_id=None,
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    assert init.error_code == ErrorCode.NOT_COORDINATOR
    assert plain_init.error_code == ErrorCode.NO_ERROR
    with WireClient(cluster.address(2)) as client:
        assert client.call(ApiKey.Heartbeat, 4, **beat).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        committed = client.call(ApiKey.OffsetCommit, 8, **commit)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    assert cluster.committed_offsets("g") == {("t", 0): 1}
