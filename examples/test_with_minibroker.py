"""Copy me: tests against a real Kafka-compatible broker, with no Kafka to install.

`pip install minibroker kafka-python confluent-kafka aiokafka pytest pytest-asyncio`, then
`pytest --asyncio-mode=auto test_with_minibroker.py`. The fixtures come with minibroker.
"""

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from minibroker.testing import ApiKey, ErrorCode, secured_config


def test_kafka_python_round_trip(kafka_broker):
    kafka_broker.create_topic("orders", partitions=3)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    producer.send("orders", key=b"order-1", value=b"created", partition=1).get(timeout=30)
    producer.close()

    consumer = KafkaConsumer(
        "orders",
        bootstrap_servers=kafka_broker.bootstrap_servers,
        group_id="billing",
        auto_offset_reset="earliest",
    )
    records = []
    while not records:
        for batch in consumer.poll(timeout_ms=1000).values():
            records.extend(batch)
    consumer.commit()
    consumer.close()

    assert (records[0].key, records[0].value) == (b"order-1", b"created")
    assert kafka_broker.committed_offsets("billing")[("orders", 1)] == 1


def test_confluent_kafka_producer_retries_a_leader_change(kafka_broker):
    kafka_broker.create_topic("payments")
    # The next two Produce requests fail as if the leader had just moved; the client retries.
    kafka_broker.push_errors(
        ApiKey.Produce, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    producer.produce("payments", b"42")
    assert producer.flush(30) == 0

    assert kafka_broker.values("payments") == [b"42"]
    assert len(kafka_broker.requests(ApiKey.Produce)) == 3

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": "audit",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["payments"])
    message = None
    while message is None:
        message = consumer.poll(1.0)
    consumer.close()
    assert message.error() is None and message.value() == b"42"


@pytest.mark.minibroker(nodes=3, config={"num.partitions": 6})
async def test_aiokafka_against_a_three_node_cluster(kafka_broker):
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait("clicks", b"hello", partition=4)
        # Partition 4 moves to another node: the producer follows it through Metadata.
        kafka_broker.move_leader("clicks", 4, node=3)
        await producer.send_and_wait("clicks", b"again", partition=4)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        "clicks", bootstrap_servers=kafka_broker.bootstrap_servers, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        first, second = await consumer.getone(), await consumer.getone()
    finally:
        await consumer.stop()
    assert [first.value, second.value] == [b"hello", b"again"]


@pytest.mark.minibroker(config=secured_config())
def test_a_user_without_write_acl_cannot_produce(kafka_broker):
    # A SASL/SCRAM listener with ACLs on: alice may write to topics starting with "orders-".
    kafka_broker.add_user("alice", "alice-secret")
    kafka_broker.add_acl("User:alice", "WRITE", topic="orders-", pattern="prefixed")
    kafka_broker.create_topic("orders-eu")
    kafka_broker.create_topic("payments")
    producer = Producer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
    )
    errors = {}

    def delivered(error, message):
        errors[message.topic()] = error

    producer.produce("orders-eu", b"ok", on_delivery=delivered)
    producer.produce("payments", b"refused", on_delivery=delivered)
    producer.flush(30)

    assert errors["orders-eu"] is None
    assert errors["payments"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert kafka_broker.values("orders-eu") == [b"ok"]
    assert kafka_broker.values("payments") == []
