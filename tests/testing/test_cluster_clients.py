"""Real clients against an in-process 3-node cluster: they follow a moved leader, retry
NOT_LEADER_OR_FOLLOWER and fail over when a node stops (a replicated topic's: a single-replica
partition goes offline with its node, as in Kafka).

The leader is moved (or the node stopped) by a hook on the client's own first request to
the old leader, so the client is caught mid-flight, deterministically: the request it sent
is answered NOT_LEADER_OR_FOLLOWER (or its connection dies) and the client must find the
new leader through Metadata.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer

from minibroker.testing import CLOSE, ApiKey, Call, ErrorCode, KafkaCluster
from tests.clients.runner import run_ok

pytestmark = pytest.mark.clients
TOPIC = "moving"
REPLICATED = "failing-over"
# partition p led by node p + 1, with followers on the other nodes
REPLICATED_ASSIGNMENTS = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
TIMEOUT_S = 60


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        running.create_topic(TOPIC, partitions=3)  # partition p led by node p + 1
        yield running


def move_leader_on_first_request(cluster: KafkaCluster, api_key: int, to_node: int) -> None:
    """The first `api_key` request to partition 0's leader (node 1) moves the leader to
    `to_node`; the request itself then gets NOT_LEADER_OR_FOLLOWER from the handler."""

    def move(call: Call) -> None:
        if call.node_id == 1 and (TOPIC, 0) in call.request.partitions():
            cluster.move_leader(TOPIC, 0, to_node)

    cluster.control(api_key, move, keep=True)


def _not_leader_answers(cluster: KafkaCluster, api_key: int) -> int:
    """Requests to node 1 for partition 0 after the move: each was answered NOT_LEADER."""
    return len(cluster.requests(api_key, node=1, topic=TOPIC))


def _produce_job(bootstrap: str, values: list[bytes], topic: str = TOPIC) -> dict[str, Any]:
    return {
        "op": "produce",
        "bootstrap": bootstrap,
        "topic": topic,
        "records": [
            {"key": None, "value": base64.b64encode(v).decode(), "headers": [], "partition": 0}
            for v in values
        ],
        "acks": "all",
        "timeout_ms": TIMEOUT_S * 1000,
    }


def test_java_producer_follows_a_moved_leader(cluster: KafkaCluster) -> None:
    move_leader_on_first_request(cluster, ApiKey.Produce, to_node=3)
    values = [f"j{i}".encode() for i in range(5)]
    result = run_ok("java-4.3", _produce_job(cluster.bootstrap_servers, values))
    assert [r["offset"] for r in result["results"]] == [0, 1, 2, 3, 4]
    assert cluster.leader(TOPIC, 0) == 3
    assert cluster.values(TOPIC, partition=0) == values
    assert _not_leader_answers(cluster, ApiKey.Produce) >= 1
    assert cluster.requests(ApiKey.Produce, node=3)


def test_java_consumer_follows_a_moved_leader(cluster: KafkaCluster) -> None:
    for i in range(4):
        cluster.produce(TOPIC, f"c{i}", partition=0)
    move_leader_on_first_request(cluster, ApiKey.Fetch, to_node=2)
    result = run_ok(
        "java-4.3",
        {
            "op": "consume",
            "bootstrap": cluster.bootstrap_servers,
            "topic": TOPIC,
            "partitions": [0],
            "count": 4,
            "from": "earliest",
            "group": None,
            "timeout_ms": TIMEOUT_S * 1000,
        },
    )
    assert not result["timed_out"]
    assert [base64.b64decode(r["value"]) for r in result["records"]] == [
        f"c{i}".encode() for i in range(4)
    ]
    assert cluster.requests(ApiKey.Fetch, node=2, topic=TOPIC)


def test_java_producer_retries_pushed_not_leader(cluster: KafkaCluster) -> None:
    cluster.push_errors(
        ApiKey.Produce,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        topic=TOPIC,
    )
    result = run_ok("java-4.3", _produce_job(cluster.bootstrap_servers, [b"once"]))
    assert result["results"][0]["offset"] == 0
    assert cluster.values(TOPIC) == [b"once"]
    assert len(cluster.requests(ApiKey.Produce, topic=TOPIC)) == 3


def test_confluent_producer_retries_not_leader_and_follows(cluster: KafkaCluster) -> None:
    move_leader_on_first_request(cluster, ApiKey.Produce, to_node=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    errors: list[Any] = []
    for i in range(3):
        producer.produce(
            TOPIC, f"r{i}".encode(), partition=0, on_delivery=lambda e, m: errors.append(e)
        )
        assert producer.flush(TIMEOUT_S) == 0
    assert errors == [None, None, None]
    assert cluster.values(TOPIC, partition=0) == [b"r0", b"r1", b"r2"]
    assert _not_leader_answers(cluster, ApiKey.Produce) >= 1
    assert cluster.requests(ApiKey.Produce, node=2, topic=TOPIC)


def test_kafka_python_follows_a_moved_leader(cluster: KafkaCluster) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=5)
    producer.send(TOPIC, b"before", partition=0).get(timeout=TIMEOUT_S)
    move_leader_on_first_request(cluster, ApiKey.Produce, to_node=3)
    producer.send(TOPIC, b"after", partition=0).get(timeout=TIMEOUT_S)
    producer.close()
    assert cluster.values(TOPIC, partition=0) == [b"before", b"after"]
    assert len(cluster.requests(ApiKey.Produce, node=3)) >= 1
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
    )
    from kafka import TopicPartition

    consumer.assign([TopicPartition(TOPIC, 0)])
    seen: list[bytes] = []
    while len(seen) < 2:
        for batch in consumer.poll(timeout_ms=1000).values():
            seen.extend(record.value for record in batch)
    consumer.close()
    assert seen == [b"before", b"after"]
    assert cluster.requests(ApiKey.Fetch, node=3, topic=TOPIC)


async def test_aiokafka_follows_a_moved_leader(cluster: KafkaCluster) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait(TOPIC, b"before", partition=0)
        move_leader_on_first_request(cluster, ApiKey.Produce, to_node=2)
        await asyncio.wait_for(
            producer.send_and_wait(TOPIC, b"after", partition=0), timeout=TIMEOUT_S
        )
    finally:
        await producer.stop()
    assert cluster.values(TOPIC, partition=0) == [b"before", b"after"]
    assert _not_leader_answers(cluster, ApiKey.Produce) >= 2
    assert cluster.requests(ApiKey.Produce, node=2, topic=TOPIC)


def test_kafka_python_and_confluent_fail_over_when_a_node_stops(cluster: KafkaCluster) -> None:
    cluster.create_topic(REPLICATED, partitions=3, assignments=REPLICATED_ASSIGNMENTS)
    python_producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, retries=10)
    confluent_producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    python_producer.send(REPLICATED, b"py-1", partition=1).get(timeout=TIMEOUT_S)
    confluent_producer.produce(REPLICATED, b"cf-1", partition=1)
    assert confluent_producer.flush(TIMEOUT_S) == 0
    assert cluster.leader(REPLICATED, 1) == 2
    cluster.stop_node(2)
    new_leader = cluster.leader(REPLICATED, 1)
    assert new_leader == 3
    assert cluster.leader(TOPIC, 1) == -1  # its only replica is on node 2
    python_producer.send(REPLICATED, b"py-2", partition=1).get(timeout=TIMEOUT_S)
    confluent_producer.produce(REPLICATED, b"cf-2", partition=1)
    assert confluent_producer.flush(TIMEOUT_S) == 0
    python_producer.close()
    values = sorted(cluster.values(REPLICATED, partition=1))
    assert values == [b"cf-1", b"cf-2", b"py-1", b"py-2"]
    assert len(cluster.requests(ApiKey.Produce, node=new_leader, topic=REPLICATED)) >= 2


def test_java_fails_over_when_the_leader_stops_mid_request(cluster: KafkaCluster) -> None:
    cluster.create_topic(REPLICATED, partitions=3, assignments=REPLICATED_ASSIGNMENTS)

    async def stop_node_2(call: Call) -> Any:
        if call.node_id != 2:
            return None
        await cluster.node(2).stop_listening()
        return CLOSE

    cluster.control(ApiKey.Produce, stop_node_2)
    job = _produce_job(cluster.bootstrap_servers, [b"survives"], REPLICATED)
    job["records"][0]["partition"] = 1
    result = run_ok("java-4.3", job)
    assert result["results"][0]["partition"] == 1
    assert cluster.live_nodes == [1, 3]
    assert cluster.values(REPLICATED, partition=1) == [b"survives"]
    leader = cluster.leader(REPLICATED, 1)
    assert cluster.requests(ApiKey.Produce, node=leader, topic=REPLICATED)


def test_confluent_consumer_group_follows_a_moved_coordinator(cluster: KafkaCluster) -> None:
    from confluent_kafka import Consumer

    cluster.set_coordinator(2)
    for i in range(3):
        cluster.produce(TOPIC, f"g{i}", partition=i)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "movers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    seen: list[bytes] = []
    while len(seen) < 3:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen.append(message.value())
    cluster.set_coordinator(3)
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(seen) == [b"g0", b"g1", b"g2"]
    assert cluster.committed_offsets("movers") == {(TOPIC, 0): 1, (TOPIC, 1): 1, (TOPIC, 2): 1}
    assert cluster.requests(ApiKey.OffsetCommit, node=3)
