"""Copy me: Testcontainers' Kafka module, with minibroker in place of the Kafka container.

The one changed line is the import (`from testcontainers.kafka import KafkaContainer`, or
`testcontainers.community.kafka`, before). No Docker needed: `pip install minibroker
confluent-kafka pytest`, then `pytest testcontainers_example.py`.
"""

from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker.testcontainers import KafkaContainer


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaContainer]:
    container = KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft()
    container.with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
    with container:
        yield container


def consume(bootstrap: str, topic: str, count: int) -> list[tuple[bytes | None, bytes | None]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "tests", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    received = []
    try:
        while len(received) < count:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                received.append((message.key(), message.value()))
    finally:
        consumer.close()
    return received


def test_produce_and_consume(kafka: KafkaContainer) -> None:
    bootstrap = kafka.get_bootstrap_server()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(30)

    producer = Producer({"bootstrap.servers": bootstrap})
    for number in range(3):
        producer.produce("orders", key=f"order-{number}".encode(), value=b"created")
    assert producer.flush(30) == 0

    received = consume(bootstrap, "orders", 3)
    assert sorted(received) == [(f"order-{n}".encode(), b"created") for n in range(3)]


def test_the_container_environment_configures_the_broker(kafka: KafkaContainer) -> None:
    # KAFKA_AUTO_CREATE_TOPICS_ENABLE=false (in the fixture): asking for a topic that does
    # not exist does not create it.
    producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})
    metadata = producer.list_topics("no-such-topic", timeout=30)
    error = metadata.topics["no-such-topic"].error
    assert error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
