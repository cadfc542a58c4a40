"""Replication in in-process clusters over the wire: replica placement, ISR and high
watermark, acks=all against min.insync.replicas, elections and truncation by leader epoch,
and the replica state kept across restarts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.cluster.replicas import EpochCache
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaCluster
from tests.replication import partition0
from tests.wire import WireClient

FAST_LAG = {"replica.lag.time.max.ms": 500}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=FAST_LAG) as running:
        yield running


def test_epoch_cache_answers_as_kafkas_leader_epoch_cache() -> None:
    cache = EpochCache([(0, 0), (2, 10), (5, 30)])
    assert cache.end_offset_for(5, 42) == (5, 42)
    assert cache.end_offset_for(2, 42) == (2, 30)
    assert cache.end_offset_for(3, 42) == (2, 30)
    assert cache.end_offset_for(6, 42) == (-1, -1)
    assert cache.end_offset_for(-1, 42) == (-1, -1)
    cache.truncate_from_end(30)
    assert cache.latest_epoch == 2
    cache.assign(4, 20)
    assert cache.entries == [(0, 0), (2, 10), (4, 20)]


def test_create_topics_places_replicas_and_metadata_reports_them(cluster: KafkaCluster) -> None:
    with WireClient(cluster.address(1)) as client:
        created = client.call(
            ApiKey.CreateTopics,
            7,
            topics=[
                {"name": "placed", "num_partitions": 3, "replication_factor": 3},
                {"name": "too-many", "num_partitions": 1, "replication_factor": 4},
            ],
            timeout_ms=5000,
        )
        metadata = client.call(ApiKey.Metadata, 12, topics=[{"name": "placed"}])
    results = {topic.name: topic for topic in created.topics}
    assert results["placed"].error_code == ErrorCode.NO_ERROR
    assert results["placed"].replication_factor == 3
    assert results["too-many"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 3 broker(s) are registered" in results["too-many"].error_message
    partitions = metadata.topics[0].partitions
    leaders = set()
    for partition in partitions:
        assert sorted(partition.replica_nodes) == [1, 2, 3]
        assert sorted(partition.isr_nodes) == [1, 2, 3]
        assert partition.leader_id == partition.replica_nodes[0]
        leaders.add(partition.leader_id)
    assert leaders == {1, 2, 3}


def test_manual_assignment_names_registered_nodes_only(cluster: KafkaCluster) -> None:
    with WireClient(cluster.address(2)) as client:
        created = client.call(
            ApiKey.CreateTopics,
            7,
            topics=[
                {
                    "name": "manual",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [3, 1]}],
                },
                {
                    "name": "unknown-node",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [{"partition_index": 0, "broker_ids": [1, 7]}],
                },
            ],
            timeout_ms=5000,
        )
    results = {topic.name: topic for topic in created.topics}
    assert results["manual"].error_code == ErrorCode.NO_ERROR
    assert cluster.replicas("manual", 0) == [3, 1]
    assert cluster.leader("manual", 0) == 3
    assert results["unknown-node"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT


def test_followers_copy_the_leader_and_the_high_watermark_follows(cluster: KafkaCluster) -> None:
    cluster.create_topic("copied", replication_factor=3)
    answer = partition0.produce(cluster, "copied", [b"a", b"b", b"c"])
    assert answer.error_code == ErrorCode.NO_ERROR
    cluster.wait_in_sync("copied")
    assert cluster.high_watermark("copied", 0) == 3
    for node in cluster.node_ids:
        assert partition0.values(cluster, node, "copied") == [b"a", b"b", b"c"]


def test_acks_all_refused_below_min_insync_replicas(cluster: KafkaCluster) -> None:
    cluster.create_topic("guarded", replication_factor=3, config={"min.insync.replicas": 2})
    leader = cluster.leader("guarded", 0)
    followers = [node for node in cluster.node_ids if node != leader]
    for follower in followers:
        cluster.pause_replication(follower, "guarded")
    partition0.produce(cluster, "guarded", [b"behind"], acks=1)
    partition0.wait_for(lambda: cluster.isr("guarded", 0) == [leader])
    refused = partition0.produce(cluster, "guarded", [b"x"])
    assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert "min.isr requirement of 2" in refused.error_message
    assert partition0.produce(cluster, "guarded", [b"one"], acks=1).error_code == ErrorCode.NO_ERROR
    for follower in followers:
        cluster.resume_replication(follower, "guarded")
    cluster.wait_in_sync("guarded")
    assert partition0.produce(cluster, "guarded", [b"all"]).error_code == ErrorCode.NO_ERROR
    assert partition0.values(cluster, followers[0], "guarded") == [b"behind", b"one", b"all"]


def test_acks_all_times_out_when_followers_stop(
    cluster: KafkaCluster,
) -> None:
    cluster.create_topic("stalled", replication_factor=3, config={"min.insync.replicas": 2})
    leader = cluster.leader("stalled", 0)
    for node in cluster.node_ids:
        if node != leader:
            cluster.pause_replication(node, "stalled")
    # Followers still in the ISR: the append waits for them, past the request's timeout.
    timed_out = partition0.produce(cluster, "stalled", [b"waits"], timeout_ms=100)
    assert timed_out.error_code == ErrorCode.REQUEST_TIMED_OUT
    # Waiting longer than replica.lag.time.max.ms: the ISR shrinks to the leader, under
    # min.insync.replicas, where Kafka 4.3's leader no longer advances the high watermark
    # (`maybeIncrementLeaderHW`): the append still times out, and nothing past it is readable.
    after = partition0.produce(cluster, "stalled", [b"alone"], timeout_ms=2_000)
    assert after.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert cluster.isr("stalled", 0) == [leader]
    assert cluster.high_watermark("stalled", 0) == 0
    for node in cluster.node_ids:
        cluster.resume_replication(node, "stalled")
    cluster.wait_in_sync("stalled")


def test_clean_election_loses_unreplicated_acks_1_records_and_old_leader_truncates(
    cluster: KafkaCluster,
) -> None:
    cluster.create_topic("failover", replication_factor=3, config={"min.insync.replicas": 2})
    assert partition0.produce(cluster, "failover", [b"safe"]).error_code == ErrorCode.NO_ERROR
    cluster.wait_in_sync("failover")
    old_leader = cluster.leader("failover", 0)
    followers = [node for node in cluster.node_ids if node != old_leader]
    for follower in followers:
        cluster.pause_replication(follower, "failover")
    assert (
        partition0.produce(cluster, "failover", [b"lost"], acks=1).error_code == ErrorCode.NO_ERROR
    )
    assert partition0.values(cluster, old_leader, "failover") == [b"safe", b"lost"]
    cluster.stop_node(old_leader)
    new_leader = cluster.leader("failover", 0)
    assert new_leader in followers
    for follower in followers:
        cluster.resume_replication(follower, "failover")
    assert partition0.produce(cluster, "failover", [b"after"]).error_code == ErrorCode.NO_ERROR
    cluster.start_node(old_leader)
    cluster.wait_in_sync("failover")
    for node in cluster.node_ids:
        assert partition0.values(cluster, node, "failover") == [b"safe", b"after"]


def test_no_in_sync_replica_left_takes_the_partition_offline(cluster: KafkaCluster) -> None:
    cluster.create_topic("offline", replication_factor=2, assignments=[[2, 3]])
    partition0.produce(cluster, "offline", [b"kept"])
    cluster.wait_in_sync("offline")
    cluster.pause_replication(3, "offline")
    partition0.wait_for(
        lambda: partition0.produce(cluster, "offline", [b"only-on-2"], acks=1).error_code == 0
    )
    partition0.wait_for(lambda: cluster.isr("offline", 0) == [2])
    cluster.stop_node(2)
    try:
        assert cluster.leader("offline", 0) == -1
        with WireClient(cluster.address(1)) as client:
            metadata = client.call(ApiKey.Metadata, 12, topics=[{"name": "offline"}])
        partition = metadata.topics[0].partitions[0]
        assert partition.error_code == ErrorCode.LEADER_NOT_AVAILABLE
        assert partition.leader_id == -1
        assert sorted(partition.offline_replicas) == [2]
    finally:
        cluster.resume_replication(3, "offline")
        cluster.start_node(2)
    assert cluster.leader("offline", 0) == 2
    cluster.wait_in_sync("offline")
    assert partition0.values(cluster, 3, "offline")[0] == b"kept"
    assert partition0.values(cluster, 3, "offline") == partition0.values(cluster, 2, "offline")


def test_unclean_election_lets_a_lagging_replica_lead() -> None:
    config = {**FAST_LAG, "unclean.leader.election.enable": "true"}
    with KafkaCluster(nodes=2, storage="memory", config=config) as cluster:
        cluster.create_topic("unclean", assignments=[[1, 2]])
        partition0.produce(cluster, "unclean", [b"both"])
        cluster.wait_in_sync("unclean")
        cluster.pause_replication(2, "unclean")
        partition0.produce(cluster, "unclean", [b"only-on-1"], acks=1)
        partition0.wait_for(lambda: cluster.isr("unclean", 0) == [1])
        cluster.stop_node(1)
        assert cluster.leader("unclean", 0) == 2
        assert cluster.isr("unclean", 0) == [2]
        cluster.resume_replication(2, "unclean")
        cluster.start_node(1)
        cluster.wait_in_sync("unclean")
        assert partition0.values(cluster, 1, "unclean") == [b"both"]


def test_isolated_leader_loses_its_leadership_and_catches_up(cluster: KafkaCluster) -> None:
    cluster.create_topic("isolated", replication_factor=3)
    partition0.produce(cluster, "isolated", [b"before"])
    cluster.wait_in_sync("isolated")
    leader = cluster.leader("isolated", 0)
    cluster.isolate_node(leader)
    try:
        assert cluster.leader("isolated", 0) != leader
        assert leader not in cluster.isr("isolated", 0)
        with WireClient(cluster.address(leader)) as client:
            answer = client.call(
                ApiKey.Produce,
                9,
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    {
                        "name": "isolated",
                        "partition_data": [
                            {"index": 0, "records": build_batch([(None, b"x", (), 1)])}
                        ],
                    }
                ],
            )
        error = answer.responses[0].partition_responses[0].error_code
        assert error == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert partition0.produce(cluster, "isolated", [b"during"]).error_code == ErrorCode.NO_ERROR
    finally:
        cluster.reconnect_node(leader)
    cluster.wait_in_sync("isolated")
    assert partition0.values(cluster, leader, "isolated") == [b"before", b"during"]


def test_offset_for_leader_epoch_answers_from_the_leaders_epoch_cache(
    cluster: KafkaCluster,
) -> None:
    cluster.create_topic("epochs", replication_factor=3)
    partition0.produce(cluster, "epochs", [b"e0-a", b"e0-b"])
    cluster.wait_in_sync("epochs")
    first = cluster.leader("epochs", 0)
    second = next(node for node in cluster.node_ids if node != first)
    cluster.move_leader("epochs", 0, second)
    partition0.produce(cluster, "epochs", [b"e1"])
    with WireClient(cluster.address(second)) as client:
        response = client.call(
            ApiKey.OffsetForLeaderEpoch,
            4,
            replica_id=-1,
            topics=[
                {
                    "topic": "epochs",
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                }
            ],
        )
    answer = response.topics[0].partitions[0]
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 2)


def test_replica_state_and_logs_survive_a_restart(tmp_path: Path) -> None:
    with KafkaCluster(nodes=3, data_dir=tmp_path, config=FAST_LAG) as cluster:
        cluster.create_topic("durable", replication_factor=3)
        partition0.produce(cluster, "durable", [b"one", b"two"])
        cluster.wait_in_sync("durable")
        replicas = cluster.replicas("durable", 0)
        cluster.restart()
        assert cluster.replicas("durable", 0) == replicas
        cluster.wait_in_sync("durable")
        assert cluster.values("durable") == [b"one", b"two"]
        for node in cluster.node_ids:
            assert partition0.values(cluster, node, "durable") == [b"one", b"two"]
    for node in (1, 2, 3):
        properties = (tmp_path / "nodes" / str(node) / "meta.properties").read_text()
        assert f"node.id={node}" in properties
        assert (tmp_path / "nodes" / str(node) / "durable-0").is_dir()


def test_describe_log_dirs_lists_each_nodes_replicas_with_their_lag(cluster: KafkaCluster) -> None:
    cluster.create_topic("dirs", assignments=[[1, 2]])
    partition0.produce(cluster, "dirs", [b"a"])
    cluster.wait_in_sync("dirs")
    cluster.pause_replication(2, "dirs")
    partition0.produce(cluster, "dirs", [b"b", b"c"], acks=1)
    partition0.wait_for(lambda: cluster.isr("dirs", 0) == [1])
    try:
        with WireClient(cluster.address(2)) as client:
            response = client.call(
                ApiKey.DescribeLogDirs, 4, topics=[{"topic": "dirs", "partitions": [0]}]
            )
        by_dir = {result.log_dir: result for result in response.results}
        assert by_dir["memory:"].topics == []
        replica = by_dir["memory:nodes/2"].topics[0].partitions[0]
        assert replica.partition_index == 0
        assert replica.partition_size > 0
        assert replica.offset_lag == 2  # the ISR shrank: the high watermark moved past it
        assert cluster.high_watermark("dirs", 0) == 3
        assert cluster.replica_end_offsets("dirs", 0) == {1: 3, 2: 1}
    finally:
        cluster.resume_replication(2, "dirs")
    cluster.wait_in_sync("dirs")


def test_find_coordinator_waits_for_enough_nodes_for_a_replicated_offsets_topic() -> None:
    config = {"offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 2}
    with KafkaCluster(nodes=3, storage="memory", config=config) as cluster:
        cluster.stop_node(3)
        with WireClient(cluster.address(1)) as client:
            refused = client.call(ApiKey.FindCoordinator, 4, key_type=0, coordinator_keys=["g"])
            assert refused.coordinators[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            assert "__consumer_offsets" not in cluster.topics()
            cluster.start_node(3)
            found = client.call(ApiKey.FindCoordinator, 4, key_type=0, coordinator_keys=["g"])
            assert found.coordinators[0].error_code == ErrorCode.NO_ERROR
        assert len(cluster.replicas("__consumer_offsets", 0)) == 3


def test_fetch_from_an_offline_partition_names_no_leader(cluster: KafkaCluster) -> None:
    cluster.create_topic("no-leader", assignments=[[3, 2]])
    cluster.wait_in_sync("no-leader")
    cluster.pause_replication(2, "no-leader")
    partition0.produce(cluster, "no-leader", [b"x"], acks=1)
    partition0.wait_for(lambda: cluster.isr("no-leader", 0) == [3])
    cluster.stop_node(3)
    try:
        response = _consumer_fetch(cluster, "no-leader", 0, node=1)
        answer = response.responses[0].partitions[0]
        assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert answer.current_leader.leader_id == -1
        assert response.node_endpoints == []
    finally:
        cluster.resume_replication(2, "no-leader")
        cluster.start_node(3)
    cluster.wait_in_sync("no-leader")


def _consumer_fetch(cluster: KafkaCluster, topic: str, offset: int, node: int) -> Any:
    """A consumer's Fetch v16 to `node` of partition 0 from `offset`, answered at once."""
    with WireClient(cluster.address(node)) as client:
        return client.call(
            ApiKey.Fetch,
            16,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic_id": _topic_id(cluster, topic),
                    "partitions": [
                        {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )


def test_a_fetch_past_the_high_watermark_but_not_the_log_end_is_answered_empty(
    cluster: KafkaCluster,
) -> None:
    """Kafka's `LocalLog.read`: out of range only past the log end; between the high
    watermark and the log end (where a consumer of a previous leader may stand while a new
    leader's high watermark catches up) the answer is empty, without error."""
    cluster.create_topic("above-hw", replication_factor=3)
    cluster.wait_in_sync("above-hw")
    partition0.produce(cluster, "above-hw", [b"replicated"])
    for node in cluster.node_ids:
        if node != cluster.leader("above-hw", 0):
            cluster.pause_replication(node, "above-hw")
    try:
        partition0.produce(cluster, "above-hw", [b"leader only", b"too"], acks=1)
        assert cluster.high_watermark("above-hw", 0) == 1
        leader = cluster.leader("above-hw", 0)
        between = _consumer_fetch(cluster, "above-hw", 2, leader).responses[0].partitions[0]
        assert (between.error_code, between.high_watermark) == (ErrorCode.NO_ERROR, 1)
        assert not between.records
        past = _consumer_fetch(cluster, "above-hw", 4, leader).responses[0].partitions[0]
        assert past.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    finally:
        for node in cluster.node_ids:
            cluster.resume_replication(node, "above-hw")
    cluster.wait_in_sync("above-hw")


def _topic_id(cluster: KafkaCluster, topic: str) -> Any:
    with WireClient(cluster.address(1)) as client:
        metadata = client.call(ApiKey.Metadata, 12, topics=[{"name": topic}])
    return metadata.topics[0].topic_id


def test_deleting_a_replicated_topic_removes_every_replica(tmp_path: Path) -> None:
    with KafkaCluster(nodes=3, data_dir=tmp_path, config=FAST_LAG) as cluster:
        cluster.create_topic("gone", partitions=2, replication_factor=3)
        partition0.produce(cluster, "gone", [b"a"])
        cluster.wait_in_sync("gone")
        with WireClient(cluster.address(1)) as client:
            deleted = client.call(
                ApiKey.DeleteTopics, 6, topics=[{"name": "gone"}], timeout_ms=5000
            )
        assert deleted.responses[0].error_code == ErrorCode.NO_ERROR
        cluster.create_topic("after", replication_factor=3)
        partition0.produce(cluster, "after", [b"b"])
        cluster.wait_in_sync("after")
        for node in (1, 2, 3):
            assert not list((tmp_path / "nodes" / str(node)).glob("gone-*"))
            assert partition0.values(cluster, node, "after") == [b"b"]
