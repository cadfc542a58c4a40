"""Timestamps and offsets with real clients in this venv: LogAppendTime topics, offsets for
times, earliest/latest, and a restart between produce and consume."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from minibroker.testing.threaded import ThreadedBroker


def _create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=configs)])
    futures[topic].result(10)


def _consume_all(bootstrap: str, topic: str, count: int, partition: int = 0) -> list[object]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    messages = []
    deadline = time.monotonic() + 20
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            messages.append(message)
    consumer.close()
    return messages


def test_log_append_time_topic_confluent(bootstrap: str) -> None:
    _create(bootstrap, "lat", **{"message.timestamp.type": "LogAppendTime"})
    delivered = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    before = int(time.time() * 1000)
    for i in range(5):
        producer.produce(
            "lat",
            value=b"v%d" % i,
            timestamp=1_000_000,
            on_delivery=lambda err, msg: delivered.append((err, msg.timestamp())),
        )
    producer.flush(10)
    after = int(time.time() * 1000)
    assert [err for err, _ in delivered] == [None] * 5
    for _, (_kind, stamp) in delivered:
        assert before <= stamp <= after
    consumed = _consume_all(bootstrap, "lat", 5)
    for message in consumed:
        kind, stamp = message.timestamp()  # type: ignore[attr-defined]
        assert before <= stamp <= after
        assert kind == 2  # TIMESTAMP_LOG_APPEND_TIME


def test_log_append_time_kafka_python_sees_the_broker_time(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "lat-kp", **{"message.timestamp.type": "LogAppendTime"})
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    before = int(time.time() * 1000)
    metadata = producer.send("lat-kp", b"x", timestamp_ms=5).get(10)
    producer.close()
    assert metadata.timestamp >= before
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=10_000)
    consumer.assign([KpTopicPartition("lat-kp", 0)])
    consumer.seek_to_beginning()
    record = next(iter(consumer))
    consumer.close()
    assert (record.timestamp_type, record.timestamp) == (1, metadata.timestamp)


def test_offsets_for_times_earliest_and_latest(bootstrap: str) -> None:
    _create(bootstrap, "times")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(10):
        producer.produce("times", value=b"%d" % i, timestamp=base + i * 1000)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    query = [TopicPartition("times", 0, base + 3500)]
    assert consumer.offsets_for_times(query, 10)[0].offset == 4
    assert consumer.offsets_for_times([TopicPartition("times", 0, base)], 10)[0].offset == 0
    beyond = consumer.offsets_for_times([TopicPartition("times", 0, base + 99_000)], 10)
    assert beyond[0].offset == -1
    assert consumer.get_watermark_offsets(TopicPartition("times", 0), 10) == (0, 10)
    consumer.close()
    kp = KafkaConsumer(bootstrap_servers=bootstrap)
    partition = KpTopicPartition("times", 0)
    found = kp.offsets_for_times({partition: base + 7000})[partition]
    assert (found.offset, found.timestamp) == (7, base + 7000)
    assert kp.beginning_offsets([partition]) == {partition: 0}
    assert kp.end_offsets([partition]) == {partition: 10}
    kp.close()


def test_restart_between_produce_and_consume(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    _create(bootstrap, "durable", partitions=3)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "lz4"})
    for i in range(300):
        producer.produce("durable", key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    assert producer.flush(10) == 0
    broker.restart()
    for partition in range(3):
        messages = _consume_all(broker.bootstrap_servers, "durable", 100, partition)
        assert [m.offset() for m in messages] == list(range(100))  # type: ignore[attr-defined]
        expected = [b"v%d" % i for i in range(partition, 300, 3)]
        assert [m.value() for m in messages] == expected  # type: ignore[attr-defined]
