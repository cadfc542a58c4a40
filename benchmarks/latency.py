"""L1: produce at a fixed rate (linger 0, acks=1); produce→ack and end-to-end latencies."""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from benchmarks.brokers import RunningBroker
from benchmarks.produce import delete_topic, new_topic
from benchmarks.stats import percentile

SECONDS = 5.0
STAMP = struct.Struct(">q")
PADDING = b"x" * 1016


@dataclass(frozen=True)
class Latencies:
    rate: int
    ack_ms: list[float]
    end_to_end_ms: list[float]

    def summary(self) -> dict[str, Any]:
        def cut(values: list[float]) -> dict[str, float]:
            ordered = sorted(values)
            return {f"p{p}": percentile(ordered, p / 100) for p in (50, 99, 99.9)}

        return {"rate": self.rate, "ack": cut(self.ack_ms), "end_to_end": cut(self.end_to_end_ms)}


class EndToEnd(threading.Thread):
    """Consumes the topic and records now - the send time stamped in each value."""

    def __init__(self, broker: RunningBroker, topic: str, expected: int) -> None:
        super().__init__(daemon=True)
        self.latencies_ms: list[float] = []
        self.expected = expected
        self.ready = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": "bench-latency",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
                "fetch.min.bytes": 1,
                "log_level": 3,
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])

    def run(self) -> None:
        deadline = time.monotonic() + SECONDS + 30
        self.consumer.consume(1, timeout=0.5)
        self.ready.set()
        while len(self.latencies_ms) < self.expected and time.monotonic() < deadline:
            # poll() returns each message as it arrives; consume(n) would wait for n of them.
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                sent = STAMP.unpack_from(message.value() or b"")[0]
                self.latencies_ms.append((time.perf_counter_ns() - sent) / 1e6)
        self.consumer.close()


def measure(broker: RunningBroker, rate: int) -> Latencies:
    topic = new_topic(broker)
    try:
        return _measure_on(broker, topic, rate)
    finally:
        delete_topic(broker, topic)


def _measure_on(broker: RunningBroker, topic: str, rate: int) -> Latencies:
    count = int(rate * SECONDS)
    acks: list[float] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is None:
            sent = STAMP.unpack_from(message.value() or b"")[0]
            acks.append((time.perf_counter_ns() - sent) / 1e6)

    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "acks": "1", "log_level": 3}
    )
    producer.list_topics(topic, timeout=30)
    reader = EndToEnd(broker, topic, count)
    reader.start()
    reader.ready.wait(30)
    interval_ns = 1_000_000_000 // rate
    next_send = time.perf_counter_ns()
    for _ in range(count):
        while (now := time.perf_counter_ns()) < next_send:
            producer.poll(min(0.001, (next_send - now) / 1e9))
        producer.produce(topic, STAMP.pack(now) + PADDING, partition=0, on_delivery=on_delivery)
        producer.poll(0)
        next_send += interval_ns
    producer.flush(30)
    reader.join(SECONDS + 30)
    return Latencies(rate, acks, reader.latencies_ms)
