"""An idempotent acks=all confluent-kafka producer that runs until its stdin closes.

Usage: python -m tests.crash.producer BOOTSTRAP TOPIC PARTITIONS NAME

Values are `NAME-<sequence>`, sent round-robin over the partitions. Every acknowledgement is
printed as one JSON line `[partition, offset, value]`; a failed delivery as
`{"error": ..., "value": ...}`. When stdin closes it flushes and prints `done`.
"""

from __future__ import annotations

import json
import sys
import threading

from confluent_kafka import KafkaError, Message, Producer

IN_FLIGHT_LIMIT = 2000


def main(bootstrap: str, topic: str, partitions: int, name: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 300000,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 200,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 200,
        }
    )
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    def delivered(error: KafkaError | None, message: Message) -> None:
        value = (message.value() or b"").decode()
        if error is None:
            print(json.dumps([message.partition(), message.offset(), value]), flush=True)
        else:
            print(json.dumps({"error": str(error), "value": value}), flush=True)

    sequence = 0
    while not stop.is_set():
        if len(producer) >= IN_FLIGHT_LIMIT:
            producer.poll(0.05)
            continue
        producer.produce(
            topic,
            value=f"{name}-{sequence:09d}".encode(),
            partition=sequence % partitions,
            on_delivery=delivered,
        )
        sequence += 1
        producer.poll(0.001 if sequence % 20 == 0 else 0)
    remaining = producer.flush(120)
    print(json.dumps({"done": True, "undelivered": remaining}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
