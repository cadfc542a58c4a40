"""A transactional producer and a consumer group on an RF-3 topic whose leader stops between
transactions (the group and transaction coordinators, node 1, stay up): transactions committed
before and after the failover are read by a read_committed group member, an aborted one is not,
every replica holds the same log, and the group's offsets are committed. The internal topics
are replicated too (`offsets.topic.replication.factor` and
`transaction.state.log.replication.factor` 3): their replicas end in sync."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from tests.clients.runner import run_ok
from tests.replication.jobs import (
    CLIENTS,
    CLUSTER_CONFIG,
    consume_job,
    consumed_values,
    numbered,
    produce_job,
    replica_values,
    topic_name,
)
from tests.wire import WireClient

pytestmark = pytest.mark.clients
# The data partition led by node 2, not the coordinator (node 1).
ASSIGNMENT = [[2, 3, 1]]


REPLICATED_INTERNAL_TOPICS = {
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.num.partitions": 3,
    "transaction.state.log.min.isr": 2,
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    config = {**CLUSTER_CONFIG, **REPLICATED_INTERNAL_TOPICS}
    with KafkaCluster(nodes=3, storage="memory", config=config) as running:
        # Created while the three nodes are up: RF 3 needs three live nodes (else
        # FindCoordinator answers COORDINATOR_NOT_AVAILABLE, as Kafka).
        with WireClient(running.address(1)) as client:
            for key_type in (0, 1):
                answer = client.call(
                    ApiKey.FindCoordinator, 4, key_type=key_type, coordinator_keys=["setup"]
                )
                assert answer.coordinators[0].error_code == ErrorCode.NO_ERROR
        running.wait_in_sync()
        # the coordinators are the leaders of the internal partitions: all on node 1
        running.set_coordinator(1)
        yield running


def transaction(
    cluster: KafkaCluster, client: str, topic: str, values: list[bytes], ending: str
) -> list[int]:
    job = produce_job(
        cluster.bootstrap_servers, topic, values, transactional_id=f"{topic}-tx", transaction=ending
    )
    return [r["offset"] for r in run_ok(client, job)["results"]]


@pytest.mark.parametrize("client", CLIENTS)
def test_transactions_and_group_across_a_leader_stop(cluster: KafkaCluster, client: str) -> None:
    topic = topic_name("txn-group", client)
    group = f"{topic}-g"
    cluster.create_topic(topic, 1, assignments=ASSIGNMENT)
    cluster.wait_in_sync(topic)
    before, after, aborted, last = (numbered(name, 3) for name in ("before", "after", "ab", "z"))
    assert transaction(cluster, client, topic, before, "commit") == [0, 1, 2]
    cluster.stop_node(2)
    try:
        assert cluster.leader(topic, 0) == 3
        # Each transaction ends with its marker: offsets 3, 7 and 11.
        assert transaction(cluster, client, topic, after, "commit") == [4, 5, 6]
        assert transaction(cluster, client, topic, aborted, "abort") == [8, 9, 10]
        assert transaction(cluster, client, topic, last, "commit") == [12, 13, 14]
        committed = before + after + last
        job = consume_job(
            cluster.bootstrap_servers,
            topic,
            len(committed),
            group=group,
            isolation="read_committed",
        )
        del job["partitions"]
        assert consumed_values(run_ok(client, job)) == committed
        assert cluster.committed_offsets(group)[(topic, 0)] >= 15
    finally:
        cluster.start_node(2)
    cluster.wait_in_sync(topic)
    assert cluster.leader(topic, 0) == 3
    everything = before + after + aborted + last
    for node in (1, 2, 3):
        assert replica_values(cluster, node, topic) == everything, f"node {node}"
    for internal in ("__consumer_offsets", "__transaction_state"):
        cluster.wait_in_sync(internal)
        assert all(len(cluster.replicas(internal, p)) == 3 for p in range(3))
