"""F1: preload 300k x 1 KiB, then consume from offset 0 with confluent-kafka."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from benchmarks.brokers import RunningBroker
from benchmarks.payloads import VALUE_SIZE
from benchmarks.produce import (
    MESSAGES,
    ProduceConfig,
    delete_topic,
    new_topic,
    produce_messages,
    producer_settings,
)

PRELOAD = ProduceConfig(1 << 20, "1", "none")
CONSUME_BATCH = 10_000


@dataclass(frozen=True)
class FetchResult:
    seconds: float
    broker_cpu_seconds: float
    messages: int

    @property
    def mb_per_s(self) -> float:
        return self.messages * VALUE_SIZE / 1e6 / self.seconds

    @property
    def cpu_s_per_gb(self) -> float:
        return self.broker_cpu_seconds / (self.messages * VALUE_SIZE / 1e9)


def consume_all(broker: RunningBroker, topic: str, messages: int) -> FetchResult:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "bench-fetch",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 << 20,
            "max.partition.fetch.bytes": 16 << 20,
            "queued.max.messages.kbytes": 1 << 20,
            "fetch.wait.max.ms": 10,
            "log_level": 3,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        received = 0
        cpu_before = broker.cpu_seconds()
        started = time.perf_counter()
        while received < messages:
            batch = consumer.consume(CONSUME_BATCH, timeout=30)
            if not batch:
                raise RuntimeError(f"fetch stalled after {received} of {messages}")
            received += sum(1 for message in batch if message.error() is None)
        seconds = time.perf_counter() - started
        return FetchResult(seconds, broker.cpu_seconds() - cpu_before, received)
    finally:
        consumer.close()


def run_f1(broker: RunningBroker, runs: int) -> list[FetchResult]:
    topic = new_topic(broker)
    try:
        produce_messages(broker, topic, producer_settings(broker, PRELOAD))
        return [consume_all(broker, topic, MESSAGES) for _ in range(runs)]
    finally:
        delete_topic(broker, topic)
