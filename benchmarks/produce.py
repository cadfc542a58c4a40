"""P1: confluent-kafka `produce_batch` of 300k x 1 KiB values to one partition."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.brokers import MINIBROKER, RunningBroker
from benchmarks.payloads import VALUE_SIZE, json_values

MESSAGES = 300_000
CHUNK = 10_000
TOPIC_MAX_MESSAGE_BYTES = str(8 << 20)


@dataclass(frozen=True)
class ProduceConfig:
    batch_size: int
    acks: str
    compression: str

    @property
    def label(self) -> str:
        size = f"{self.batch_size >> 20}MiB" if self.batch_size >= 1 << 20 else "64KiB"
        return f"batch {size}, acks={self.acks}, {self.compression}"


CONFIGS = [
    ProduceConfig(batch_size, acks, compression)
    for batch_size in (1 << 20, 64 << 10)
    for acks in ("1", "all")
    for compression in ("none", "lz4")
] + [ProduceConfig(batch_size, "1", "zstd") for batch_size in (1 << 20, 64 << 10)]
# Beside the on-disk broker's rows: `minibroker serve --in-memory` at 1 MiB.
IN_MEMORY_CONFIG = ProduceConfig(1 << 20, "1", "none")


@dataclass(frozen=True)
class ProduceResult:
    seconds: float
    broker_cpu_seconds: float
    broker_user_cpu_seconds: float
    messages: int

    @property
    def megabytes(self) -> float:
        return self.messages * VALUE_SIZE / 1e6

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.seconds

    @property
    def msg_per_s(self) -> float:
        return self.messages / self.seconds

    @property
    def cpu_s_per_gb(self) -> float:
        return self.broker_cpu_seconds / (self.megabytes / 1000)


def new_topic(broker: RunningBroker, partitions: int = 1, replication_factor: int = 1) -> str:
    """A fresh topic; the mock creates topics on first use, minibroker through the admin API."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    if broker.name == MINIBROKER:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        config = {"max.message.bytes": TOPIC_MAX_MESSAGE_BYTES}
        topic = NewTopic(name, partitions, replication_factor, config=config)
        admin.create_topics([topic])[name].result(30)
    return name


def delete_topic(broker: RunningBroker, name: str) -> None:
    if broker.name == MINIBROKER:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics([name])[name].result(30)


def producer_settings(broker: RunningBroker, config: ProduceConfig) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "linger.ms": 5,
        "batch.size": config.batch_size,
        "message.max.bytes": 4 << 20,
        "acks": config.acks,
        "compression.type": config.compression,
        "queue.buffering.max.messages": 2 * MESSAGES,
        "queue.buffering.max.kbytes": 2 * MESSAGES * VALUE_SIZE // 1024,
        "enable.idempotence": False,
        "log_level": 3,
    }


def produce_messages(
    broker: RunningBroker, topic: str, settings: dict[str, Any], messages: int = MESSAGES
) -> ProduceResult:
    """Produce `messages` values to partition 0 of `topic` and wait for every acknowledgement."""
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer(
        {**settings, "delivery.report.only.error": True, "on_delivery": on_delivery}
    )
    producer.list_topics(topic, timeout=30)
    values = json_values()
    chunk = [{"value": values[i % len(values)], "partition": 0} for i in range(CHUNK)]
    cpu_before, user_before = broker.cpu_seconds(), broker.user_cpu_seconds()
    started = time.perf_counter()
    for _ in range(messages // CHUNK):
        producer.produce_batch(topic, chunk)
        producer.poll(0)
    remaining = producer.flush(120)
    seconds = time.perf_counter() - started
    cpu = broker.cpu_seconds() - cpu_before
    user = broker.user_cpu_seconds() - user_before
    if remaining or failures:
        raise RuntimeError(f"{remaining} unacknowledged, errors: {failures[:3]}")
    return ProduceResult(seconds, cpu, user, messages)


def run_p1(
    broker: RunningBroker, config: ProduceConfig, replication_factor: int = 1
) -> ProduceResult:
    topic = new_topic(broker, replication_factor=replication_factor)
    try:
        return produce_messages(broker, topic, producer_settings(broker, config))
    finally:
        delete_topic(broker, topic)
