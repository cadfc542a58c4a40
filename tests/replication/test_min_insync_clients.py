"""acks=all against a replicated topic with min.insync.replicas=2, from real clients: one
replica down is fine; with two down the leader alone is the ISR and Kafka refuses the append
with NOT_ENOUGH_REPLICAS before writing it (Kafka's `Partition.appendRecordsToLeader`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing import KafkaCluster
from tests.clients.runner import run_client, run_ok
from tests.replication.jobs import (
    CLIENTS,
    CLUSTER_CONFIG,
    numbered,
    produce_job,
    replica_values,
    topic_name,
)

pytestmark = pytest.mark.clients
# The refused producer's budget: its delivery timeout (Java, librdkafka) is the job's.
REFUSED_TIMEOUT_MS = 4000
# How each producer gets to report the broker's error rather than its own timeout. With a
# short delivery timeout and retries, Java fails the batch with its TimeoutException
# ("Expiring 1 record(s) ... since batch creation": it expires while backing off between
# retries) and librdkafka with _MSG_TIMED_OUT, as against Kafka; without retries both report
# the answer's error. kafka-python retries without end by default: a few retries, then it raises.
REFUSAL_CONFIG = {
    "java-4.3": {"retries": "0"},
    "confluent-kafka": {"retries": "0"},
    "kafka-python-3": {"retries": 3},
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=CLUSTER_CONFIG) as running:
        yield running


def start_stopped(cluster: KafkaCluster, topic: str) -> None:
    for node in cluster.node_ids:
        cluster.start_node(node)
    cluster.wait_in_sync(topic)


@pytest.mark.parametrize("client", CLIENTS)
def test_acks_all_with_one_replica_down_then_not_enough_replicas(
    cluster: KafkaCluster, client: str
) -> None:
    topic = topic_name("min-isr", client)
    cluster.create_topic(topic, 1, {"min.insync.replicas": 2}, replication_factor=3)
    cluster.wait_in_sync(topic)
    leader = cluster.leader(topic, 0)
    first, second = [node for node in cluster.replicas(topic, 0) if node != leader]
    sent = numbered("kept", 3)
    try:
        cluster.stop_node(first)
        assert cluster.isr(topic, 0) == sorted([leader, second])
        result = run_ok(client, produce_job(cluster.bootstrap_servers, topic, sent))
        assert [r["offset"] for r in result["results"]] == [0, 1, 2]
        assert replica_values(cluster, leader, topic) == sent
        assert replica_values(cluster, second, topic) == sent

        cluster.stop_node(second)
        assert cluster.isr(topic, 0) == [leader]
        refused = run_client(
            client,
            produce_job(
                cluster.bootstrap_servers,
                topic,
                [b"refused"],
                timeout_ms=REFUSED_TIMEOUT_MS,
                config=REFUSAL_CONFIG[client],
            ),
        )
        assert not refused["ok"]
        assert refused["error_name"] == "NOT_ENOUGH_REPLICAS", refused["error"]
        assert replica_values(cluster, leader, topic) == sent
        assert cluster.high_watermark(topic, 0) == len(sent)
    finally:
        start_stopped(cluster, topic)
    assert replica_values(cluster, first, topic) == sent
