"""M1: broker RSS idle, after a lot of data produced, and with 1,000 partitions."""

from __future__ import annotations

import time

from confluent_kafka import Producer

from benchmarks.brokers import RunningBroker
from benchmarks.produce import delete_topic, new_topic

PARTITIONS = 1000
RECORDS_PER_PARTITION = 100


def settle_rss(broker: RunningBroker) -> int:
    """RSS once the broker has been idle for a moment (freed buffers returned)."""
    time.sleep(1.0)
    return broker.rss_bytes()


def rss_with_partitions(broker: RunningBroker) -> int:
    """Broker RSS with 1,000 more partitions, each holding a few records."""
    topic = new_topic(broker, PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "log_level": 3})
    producer.list_topics(topic, timeout=30)
    value = b"m" * 1000
    for partition in range(PARTITIONS):
        for _ in range(RECORDS_PER_PARTITION):
            producer.produce(topic, value, partition=partition)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("records to 1,000 partitions were not all acknowledged")
    rss = settle_rss(broker)
    delete_topic(broker, topic)
    return rss
