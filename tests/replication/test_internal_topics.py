"""Consumer groups and transactions on replicated internal topics (`offsets.topic.replication.
factor` and `transaction.state.log.replication.factor` 3), with confluent-kafka: the commits
and transaction records are on every node, and survive the internal partitions' leader
stopping."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import KafkaCluster

REPLICATED_INTERNAL = {
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "replica.lag.time.max.ms": 2000,
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=REPLICATED_INTERNAL) as running:
        running.create_topic("orders", partitions=2, replication_factor=3)
        yield running


def _consume(
    cluster: KafkaCluster, group: str, count: int, topic: str = "orders", **extra: Any
) -> list[bytes]:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **extra,
        }
    )
    consumer.subscribe([topic])
    seen: list[bytes] = []
    try:
        while len(seen) < count:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def test_group_commits_are_replicated_and_survive_a_leader_stop(cluster: KafkaCluster) -> None:
    for i in range(4):
        cluster.produce("orders", f"o{i}", partition=i % 2)
    assert sorted(_consume(cluster, "billing", 4)) == [b"o0", b"o1", b"o2", b"o3"]
    assert cluster.replicas("__consumer_offsets", 0) != []
    cluster.wait_in_sync("__consumer_offsets")
    committed = cluster.committed_offsets("billing")
    assert committed == {("orders", 0): 2, ("orders", 1): 2}
    stopped = cluster.leader("__consumer_offsets", 0)
    cluster.stop_node(stopped)
    try:
        for i in range(4, 6):
            cluster.produce("orders", f"o{i}", partition=i % 2)
        assert sorted(_consume(cluster, "billing", 2)) == [b"o4", b"o5"]
    finally:
        cluster.start_node(stopped)
    cluster.wait_in_sync("__consumer_offsets")
    for partition in range(3):
        ends = set(cluster.replica_end_offsets("__consumer_offsets", partition).values())
        assert len(ends) == 1


def test_transactions_write_to_a_replicated_transaction_log(cluster: KafkaCluster) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "replicated-tx"}
    )
    cluster.create_topic("payments", replication_factor=3)
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("payments", b"in-txn")
    producer.commit_transaction(30)
    cluster.wait_in_sync("__transaction_state")
    assert cluster.isr("__transaction_state", 0) == [1, 2, 3]
    records = [
        record
        for partition in range(3)
        for node in cluster.node_ids
        for record in cluster.replica_records(node, "__transaction_state", partition)
        if record.key is not None and b"replicated-tx" in record.key
    ]
    assert len(records) >= 3 * 3  # each transition, on every node
    read_committed = {"isolation.level": "read_committed"}
    assert _consume(cluster, "txn-readers", 1, "payments", **read_committed) == [b"in-txn"]
    cluster.wait_in_sync("payments")
    for node in cluster.node_ids:
        assert [r.value for r in cluster.replica_records(node, "payments", 0)] == [b"in-txn"]
