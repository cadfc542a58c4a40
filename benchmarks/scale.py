"""SC: cost with many partitions — CreateTopics and DeleteTopics rates, Metadata for every
partition, restart after a clean shutdown and after SIGKILL with data in every partition, RSS
and open descriptors; the mock cluster's CreateTopics and Metadata as the reference.

python -m benchmarks.scale [--partitions 10000] [--per-topic 50]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.brokers import RunningBroker, start_minibroker, start_mock

TOPICS_PER_REQUEST = 20


@dataclass
class Restart:
    ready_ms: float
    rss_mb: float
    open_fds: int
    first_produce_ms: float


@dataclass
class ScaleRun:
    partitions: int
    create_partitions_per_s: float
    metadata_ms: float
    rss_mb: float
    clean: Restart
    crash: Restart
    delete_partitions_per_s: float


def _admin(broker: RunningBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})


def topic_names(partitions: int, per_topic: int) -> list[str]:
    return [f"scale-{index:05d}" for index in range(partitions // per_topic)]


def create_topics(broker: RunningBroker, names: list[str], per_topic: int) -> float:
    """Partitions created per second, TOPICS_PER_REQUEST topics per CreateTopics request."""
    admin = _admin(broker)
    started = time.perf_counter()
    for first in range(0, len(names), TOPICS_PER_REQUEST):
        chunk = [NewTopic(name, per_topic, 1) for name in names[first : first + TOPICS_PER_REQUEST]]
        for future in admin.create_topics(chunk, request_timeout=120).values():
            future.result()
    return len(names) * per_topic / (time.perf_counter() - started)


def delete_topics(broker: RunningBroker, names: list[str], per_topic: int) -> float:
    admin = _admin(broker)
    started = time.perf_counter()
    for first in range(0, len(names), TOPICS_PER_REQUEST):
        chunk = names[first : first + TOPICS_PER_REQUEST]
        for future in admin.delete_topics(chunk, request_timeout=120).values():
            future.result()
    return len(names) * per_topic / (time.perf_counter() - started)


def metadata_ms(broker: RunningBroker, partitions: int) -> float:
    """Best of three Metadata requests for every topic, as the client times them."""
    admin = _admin(broker)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        found = admin.list_topics(timeout=60)
        best = min(best, time.perf_counter() - started)
    listed = sum(len(t.partitions) for t in found.topics.values() if t.topic.startswith("scale-"))
    if listed != partitions:
        raise RuntimeError(f"Metadata listed {listed} partitions, not {partitions}")
    return best * 1000


def write_everywhere(broker: RunningBroker, names: list[str], per_topic: int) -> None:
    """One record in every partition (the active segments then hold unflushed data)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "log_level": 3})
    for name in names:
        for partition in range(per_topic):
            producer.produce(name, b"x" * 100, partition=partition)
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("records were not all acknowledged")


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def restart(data_dir: Path, first_topic: str) -> tuple[RunningBroker, Restart]:
    """Spawn `minibroker serve` on `data_dir` until it is ready; then one produce to a
    partition not touched since the restart."""
    started = time.perf_counter()
    broker = start_minibroker(data_dir)
    ready_ms = (time.perf_counter() - started) * 1000
    rss_mb, fds = broker.rss_bytes() / 1e6, _open_fds(broker.pid)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 3})
    started = time.perf_counter()
    producer.produce(first_topic, b"after restart", partition=0)
    if producer.flush(30):
        raise RuntimeError("the produce after the restart was not acknowledged")
    first_produce_ms = (time.perf_counter() - started) * 1000
    return broker, Restart(ready_ms, rss_mb, fds, first_produce_ms)


def run(partitions: int, per_topic: int) -> ScaleRun:
    names = topic_names(partitions, per_topic)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        broker = start_minibroker(data_dir)
        try:
            create_rate = create_topics(broker, names, per_topic)
            metadata = metadata_ms(broker, partitions)
            rss_mb = broker.rss_bytes() / 1e6
        finally:
            broker.stop()
        broker, clean = restart(data_dir, names[-1])
        try:
            write_everywhere(broker, names, per_topic)
        finally:
            broker.process.kill()
            broker.process.wait()
        broker, crash = restart(data_dir, names[0])
        try:
            delete_rate = delete_topics(broker, names, per_topic)
        finally:
            broker.stop()
    return ScaleRun(partitions, create_rate, metadata, rss_mb, clean, crash, delete_rate)


def mock_reference(partitions: int, per_topic: int) -> dict[str, float]:
    """The mock cluster's CreateTopics rate and Metadata time for the same topics."""
    names = topic_names(partitions, per_topic)
    mock = start_mock()
    try:
        return {
            "create_partitions_per_s": create_topics(mock, names, per_topic),
            "metadata_ms": metadata_ms(mock, partitions),
        }
    finally:
        mock.stop()


def report(run_result: ScaleRun, mock: dict[str, float] | None) -> str:
    r = run_result
    lines = [
        f"SC {r.partitions:,} partitions: CreateTopics {r.create_partitions_per_s:,.0f} "
        f"partitions/s, DeleteTopics {r.delete_partitions_per_s:,.0f}/s, Metadata "
        f"{r.metadata_ms:.0f} ms, RSS {r.rss_mb:.0f} MB",
    ]
    for label, restarted in (("clean shutdown", r.clean), ("SIGKILL", r.crash)):
        lines.append(
            f"SC {r.partitions:,} restart after {label}: ready in {restarted.ready_ms:,.0f} ms, "
            f"RSS {restarted.rss_mb:.0f} MB, {restarted.open_fds} fds, first produce "
            f"{restarted.first_produce_ms:.1f} ms"
        )
    if mock is not None:
        lines.append(
            f"SC {r.partitions:,} mock: CreateTopics {mock['create_partitions_per_s']:,.0f} "
            f"partitions/s, Metadata {mock['metadata_ms']:.0f} ms"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=50)
    parser.add_argument("--no-mock", action="store_true")
    args = parser.parse_args()
    result = run(args.partitions, args.per_topic)
    mock = None if args.no_mock else mock_reference(args.partitions, args.per_topic)
    print(report(result, mock))
    print(asdict(result))


if __name__ == "__main__":
    main()
