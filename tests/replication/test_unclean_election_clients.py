"""acks=1 records that only the leader has, then the leader stops, as real clients see it.

The followers stop copying (`pause_replication`); K acks=1 records reach the leader alone, and
after replica.lag.time.max.ms the ISR is the leader alone. When it stops:
- with unclean.leader.election.enable=true a follower leads (a new leader epoch at its log end)
  and exactly the K records are lost; the old leader, back, truncates its log to the new
  leader's by leader epoch and then follows it;
- without, the partition is offline (leader -1, Metadata's LEADER_NOT_AVAILABLE) until the old
  leader, the only ISR member, comes back and leads again: nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient

from minibroker.testing import KafkaCluster
from tests.clients.runner import run_ok
from tests.replication.jobs import (
    CLIENTS,
    CLUSTER_CONFIG,
    consume_job,
    consumed_values,
    numbered,
    offsets_and_values,
    produce_job,
    replica_values,
    topic_name,
    wait_until,
)

pytestmark = pytest.mark.clients
KEPT = 3  # acks=all records, on every replica
UNREPLICATED = 5  # acks=1 records on the leader alone
LEADER_NOT_AVAILABLE = 5
# The partition error each client library shows for a leaderless partition: Java's admin
# (DescribeTopicPartitions) gives its leader as none but not the error.
PARTITION_ERROR = {
    "java-4.3": None,
    "confluent-kafka": "LEADER_NOT_AVAILABLE",
    "kafka-python-3": "LEADER_NOT_AVAILABLE",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=CLUSTER_CONFIG) as running:
        yield running


def leader_alone_with_unreplicated(
    cluster: KafkaCluster, client: str, topic: str, unclean: bool
) -> tuple[int, list[int], list[bytes], list[bytes]]:
    """KEPT records everywhere, then UNREPLICATED acks=1 records on the leader alone, its ISR
    shrunk to itself. (leader, followers, kept values, unreplicated values)."""
    config = {"unclean.leader.election.enable": str(unclean).lower()}
    cluster.create_topic(topic, 1, config, replication_factor=3)
    cluster.wait_in_sync(topic)
    leader = cluster.leader(topic, 0)
    followers = [node for node in cluster.replicas(topic, 0) if node != leader]
    kept, unreplicated = numbered("kept", KEPT), numbered("acks1", UNREPLICATED)
    run_ok(client, produce_job(cluster.bootstrap_servers, topic, kept))
    for follower in followers:
        cluster.pause_replication(follower, topic)
    result = run_ok(client, produce_job(cluster.bootstrap_servers, topic, unreplicated, acks="1"))
    assert [r["offset"] for r in result["results"]] == list(range(KEPT, KEPT + UNREPLICATED))
    wait_until(lambda: cluster.isr(topic, 0) == [leader], "the ISR to shrink to the leader")
    for follower in followers:
        assert replica_values(cluster, follower, topic) == kept
    return leader, followers, kept, unreplicated


def bring_back(cluster: KafkaCluster, topic: str, stopped: int, followers: list[int]) -> None:
    for follower in followers:
        cluster.resume_replication(follower, topic)
    cluster.start_node(stopped)


@pytest.mark.parametrize("client", CLIENTS)
def test_unclean_election_loses_the_unreplicated_records(
    cluster: KafkaCluster, client: str
) -> None:
    topic = topic_name("unclean", client)
    leader, followers, kept, _lost = leader_alone_with_unreplicated(
        cluster, client, topic, unclean=True
    )
    try:
        cluster.stop_node(leader)
        new_leader = cluster.leader(topic, 0)
        assert new_leader == followers[0]  # the first live replica of the assignment
        assert cluster.isr(topic, 0) == [new_leader]
        assert cluster.high_watermark(topic, 0) == KEPT
        for follower in followers:
            cluster.resume_replication(follower, topic)
        consumed = run_ok(client, consume_job(cluster.bootstrap_servers, topic, KEPT))
        assert consumed_values(consumed) == kept
        after = numbered("after", 2)
        result = run_ok(client, produce_job(cluster.bootstrap_servers, topic, after))
        assert [r["offset"] for r in result["results"]] == [KEPT, KEPT + 1]
    finally:
        bring_back(cluster, topic, leader, followers)
    cluster.wait_in_sync(topic)
    assert cluster.leader(topic, 0) == new_leader
    new_log = offsets_and_values(cluster.replica_records(new_leader, topic, 0))
    assert [value for _offset, value in new_log] == kept + after  # the acks=1 records lost
    for node in (leader, followers[1]):
        assert offsets_and_values(cluster.replica_records(node, topic, 0)) == new_log


@pytest.mark.parametrize("client", CLIENTS)
def test_clean_election_waits_offline_for_the_leader(cluster: KafkaCluster, client: str) -> None:
    topic = topic_name("clean", client)
    leader, followers, kept, unreplicated = leader_alone_with_unreplicated(
        cluster, client, topic, unclean=False
    )
    try:
        cluster.stop_node(leader)
        assert cluster.leader(topic, 0) == -1
        # eligible leader replicas (a 4.3 cluster's default): the ISR empties into the ELR
        assert (cluster.isr(topic, 0), cluster.elr(topic, 0)) == ([], [leader])
        described = run_ok(
            client, {"op": "metadata", "bootstrap": cluster.bootstrap_servers, "topics": [topic]}
        )
        (answer,) = described["topics"]
        assert answer["error_name"] is None
        assert answer["partitions"] == [{"partition": 0, "leader": -1}]
        seen = partition_error(client, cluster.bootstrap_servers, topic)
        assert seen == PARTITION_ERROR[client]
    finally:
        bring_back(cluster, topic, leader, followers)
    assert cluster.leader(topic, 0) == leader
    cluster.wait_in_sync(topic)
    for node in cluster.replicas(topic, 0):
        assert replica_values(cluster, node, topic) == kept + unreplicated
    consumed = run_ok(client, consume_job(cluster.bootstrap_servers, topic, KEPT + UNREPLICATED))
    assert consumed_values(consumed) == kept + unreplicated


def partition_error(client: str, bootstrap: str, topic: str) -> str | None:
    """The error of partition 0 in the client library's own Metadata answer (the harness's
    metadata op gives leaders only)."""
    if client == "confluent-kafka":
        admin = AdminClient({"bootstrap.servers": bootstrap})
        error = admin.list_topics(topic, timeout=30).topics[topic].partitions[0].error
        return None if error is None else str(error.name())
    if client == "kafka-python-3":
        python_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            (described,) = python_admin.describe_topics([topic])
        finally:
            python_admin.close()
        code = described["partitions"][0]["error_code"]
        return "LEADER_NOT_AVAILABLE" if code == LEADER_NOT_AVAILABLE else str(code)
    return None
