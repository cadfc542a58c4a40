"""The pytest fixture's cycle: a fresh in-process broker (as `kafka_broker` starts it), one
message produced and consumed by a group through confluent-kafka, the broker stopped; with
disk and memory storage. Reports wall and process CPU milliseconds per cycle (the broker
runs in this process, on its background thread, so process CPU is broker plus client).

    python -m benchmarks.fixture_cycle [--cycles 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from minibroker.testing.cluster import KafkaBroker, Storage


def one_cycle(storage: Storage, data_dir: Path) -> None:
    options = {"data_dir": data_dir} if storage == "disk" else {}
    with KafkaBroker(storage=storage, **options) as broker:
        bootstrap = broker.bootstrap_servers
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "log_level": 0})
        producer.produce("t", b"value")
        producer.flush(10)
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "g",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "log_level": 0,
            }
        )
        consumer.subscribe(["t"])
        message = None
        while message is None or message.error():
            message = consumer.poll(10)
        consumer.commit(message, asynchronous=False)
        consumer.close()


def measure(storage: Storage, cycles: int) -> tuple[float, float]:
    """Median wall and CPU ms per cycle (the first, warming imports, not counted)."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(cycles + 1):
            wall, cpu = time.perf_counter(), time.process_time()
            one_cycle(storage, Path(tmp) / str(index))
            if index:
                walls.append((time.perf_counter() - wall) * 1000)
                cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()
    for storage in ("memory", "disk"):
        wall, cpu = measure(storage, args.cycles)
        print(f"{storage:6}  wall {wall:6.1f} ms  cpu {cpu:6.1f} ms  per cycle (median)")


if __name__ == "__main__":
    main()
