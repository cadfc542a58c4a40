"""SC: cost with many partitions — CreateTopics and DeleteTopics rates, Metadata for every
partition, restart after a clean shutdown and after SIGKILL with data in every partition, RSS
and open descriptors. No mock reference: librdkafka's mock cluster names no controller, so
its CreateTopics cannot be driven by an admin client, and it keeps nothing across restarts.

python -m benchmarks.scale [--partitions 10000] [--per-topic 50] [--groups 1000]
    [--connections 10000] [--memory] [--session 5000]

`--memory` also runs the partitions on an in-process `KafkaBroker` in memory storage;
`--session N` measures the broker's CPU per incremental fetch of an N-partition session.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks import procstat
from benchmarks.brokers import RunningBroker, start_minibroker
from minibroker.testing import KafkaBroker

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


class Reachable(Protocol):
    @property
    def bootstrap(self) -> str: ...


def _admin(broker: Reachable) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})


def topic_names(partitions: int, per_topic: int) -> list[str]:
    return [f"scale-{index:05d}" for index in range(partitions // per_topic)]


def create_topics(broker: Reachable, names: list[str], per_topic: int) -> float:
    """Partitions created per second, TOPICS_PER_REQUEST topics per CreateTopics request."""
    admin = _admin(broker)
    started = time.perf_counter()
    for first in range(0, len(names), TOPICS_PER_REQUEST):
        chunk = [NewTopic(name, per_topic, 1) for name in names[first : first + TOPICS_PER_REQUEST]]
        for future in admin.create_topics(chunk, request_timeout=120).values():
            future.result()
    return len(names) * per_topic / (time.perf_counter() - started)


def delete_topics(broker: Reachable, names: list[str], per_topic: int) -> float:
    admin = _admin(broker)
    started = time.perf_counter()
    for first in range(0, len(names), TOPICS_PER_REQUEST):
        chunk = names[first : first + TOPICS_PER_REQUEST]
        for future in admin.delete_topics(chunk, request_timeout=120).values():
            future.result()
    return len(names) * per_topic / (time.perf_counter() - started)


# Metadata v12 for all topics: header v2 (api key, version, correlation id, client id "bench",
# no tags), then a null topic array, no auto-creation, no authorized operations, no tags.
_METADATA_ALL = struct.pack(">hhih", 3, 12, 1, 5) + b"bench" + b"\x00" + b"\x00\x00\x00\x00"
_METADATA_REQUEST = struct.pack(">i", len(_METADATA_ALL)) + _METADATA_ALL


def metadata_ms(broker: Reachable, partitions: int) -> float:
    """Best of five Metadata requests for every topic, from sending the request to the last
    byte of the answer (raw; a client's own parsing of 10,000 partitions is not counted);
    then confluent-kafka's view of it must list every partition."""
    host, port = broker.bootstrap.rsplit(":", 1)
    best = float("inf")
    with socket.create_connection((host, int(port))) as sock:
        for _ in range(5):
            started = time.perf_counter()
            sock.sendall(_METADATA_REQUEST)
            _receive_exactly(sock, struct.unpack(">i", _receive_exactly(sock, 4))[0])
            best = min(best, time.perf_counter() - started)
    found = _admin(broker).list_topics(timeout=60)
    listed = sum(len(t.partitions) for t in found.topics.values() if t.topic.startswith("scale-"))
    if listed != partitions:
        raise RuntimeError(f"Metadata listed {listed} partitions, not {partitions}")
    return best * 1000


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise RuntimeError("the broker closed the connection")
        data += chunk
    return bytes(data)


def write_everywhere(broker: RunningBroker, names: list[str], per_topic: int) -> None:
    """One record in every partition (the active segments then hold unflushed data)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "log_level": 3})
    for name in names:
        for partition in range(per_topic):
            producer.produce(name, b"x" * 100, partition=partition)
        producer.poll(0)
    if producer.flush(600):
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


@dataclass
class InProcessRun:
    partitions: int
    start_ms: float
    create_partitions_per_s: float
    metadata_ms: float
    rss_growth_mb: float
    delete_partitions_per_s: float


@dataclass
class _InProcess:
    bootstrap: str


def in_memory(partitions: int, per_topic: int) -> InProcessRun:
    """The same topics on an in-process `KafkaBroker` in memory storage (the fixture's
    broker): its start, CreateTopics and DeleteTopics rates, Metadata, and how much this
    process grew for the partitions."""
    names = topic_names(partitions, per_topic)
    rss_before = procstat.rss_bytes(os.getpid())
    started = time.perf_counter()
    with KafkaBroker(storage="memory") as broker:
        start_ms = (time.perf_counter() - started) * 1000
        reachable = _InProcess(broker.bootstrap_servers)
        create_rate = create_topics(reachable, names, per_topic)
        metadata = metadata_ms(reachable, partitions)
        growth_mb = (procstat.rss_bytes(os.getpid()) - rss_before) / 1e6
        delete_rate = delete_topics(reachable, names, per_topic)
    return InProcessRun(partitions, start_ms, create_rate, metadata, growth_mb, delete_rate)


def report_in_memory(r: InProcessRun) -> str:
    return (
        f"SC {r.partitions:,} partitions, in-process KafkaBroker in memory: started in "
        f"{r.start_ms:.1f} ms, CreateTopics {r.create_partitions_per_s:,.0f} partitions/s, "
        f"DeleteTopics {r.delete_partitions_per_s:,.0f}/s, Metadata {r.metadata_ms:.0f} ms, "
        f"process RSS +{r.rss_growth_mb:.0f} MB"
    )


SESSION_PARTITIONS_PER_TOPIC = 50
SESSION_FETCHES = 200


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _varint(len(data) + 1) + data


def _fetch_v12(
    correlation_id: int, session_id: int, epoch: int, topics: dict[str, int], offset: int
) -> bytes:
    """Fetch v12 (flexible, topics by name), max_wait 0: every partition of `topics` from
    `offset` (an incremental fetch with topics {} names none)."""
    body = struct.pack(">iiiibii", -1, 0, 1, 16 << 20, 0, session_id, epoch)
    body += _varint(len(topics) + 1)
    for name, partitions in topics.items():
        body += _compact_string(name) + _varint(partitions + 1)
        for index in range(partitions):
            body += struct.pack(">iiqiqi", index, -1, offset, -1, -1, 1 << 20) + b"\x00"
        body += b"\x00"
    body += _varint(1) + _compact_string("") + b"\x00"  # no forgotten topics, no rack
    header = struct.pack(">hhih", 1, 12, correlation_id, 5) + b"bench" + b"\x00"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _fetch(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    return _receive_exactly(sock, struct.unpack(">i", _receive_exactly(sock, 4))[0])


def fetch_session_cost(partitions: int) -> dict[str, float]:
    """Broker CPU per incremental fetch of a session holding `partitions` partitions, all idle,
    and with one of them appended to before each fetch (`serve --in-memory`, raw Fetch v12)."""
    names = topic_names(partitions, SESSION_PARTITIONS_PER_TOPIC)
    broker = start_minibroker(Path("."), in_memory=True)
    try:
        admin = _admin(broker)
        for start in range(0, len(names), TOPICS_PER_REQUEST):
            chunk = names[start : start + TOPICS_PER_REQUEST]
            new = [NewTopic(name, SESSION_PARTITIONS_PER_TOPIC, 1) for name in chunk]
            for future in admin.create_topics(new, request_timeout=120).values():
                future.result()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
        host, port = broker.bootstrap.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            topics = dict.fromkeys(names, SESSION_PARTITIONS_PER_TOPIC)
            full = _fetch(sock, _fetch_v12(1, 0, 0, topics, 0))
            session_id = struct.unpack_from(">i", full, 4 + 1 + 4 + 2)[0]
            if session_id == 0:
                raise RuntimeError("the broker made no fetch session")
            epoch = 1
            result: dict[str, float] = {"partitions": partitions}
            for label, appending in (("idle_cpu_ms", False), ("one_changed_cpu_ms", True)):
                used = 0.0
                for _ in range(SESSION_FETCHES):
                    if appending:
                        producer.produce(names[0], b"x", partition=0)
                        producer.flush(10)
                    before = procstat.cpu_seconds(broker.pid)
                    _fetch(sock, _fetch_v12(epoch + 1, session_id, epoch, {}, 0))
                    used += procstat.cpu_seconds(broker.pid) - before
                    epoch += 1
                result[label] = used / SESSION_FETCHES * 1000
        return result
    finally:
        broker.stop()


_API_VERSIONS = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
_API_VERSIONS_REQUEST = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS


def _round_trip_ms(sock: socket.socket) -> float:
    started = time.perf_counter()
    sock.sendall(_API_VERSIONS_REQUEST)
    _receive_exactly(sock, struct.unpack(">i", _receive_exactly(sock, 4))[0])
    return (time.perf_counter() - started) * 1000


def _active_latency_ms(broker: RunningBroker, requests: int = 2000) -> tuple[float, float]:
    """p50 and p99 of ApiVersions round trips on one active connection."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        times = sorted(_round_trip_ms(sock) for _ in range(requests))
    return times[len(times) // 2], times[int(len(times) * 0.99)]


def idle_connections(count: int) -> dict[str, float]:
    """RSS and an active connection's answer times without and with `count` idle connections
    (each answered one ApiVersions, as a client that connected and then waits)."""
    with tempfile.TemporaryDirectory() as tmp:
        broker = start_minibroker(Path(tmp))
        host, port = broker.bootstrap.rsplit(":", 1)
        idle: list[socket.socket] = []
        try:
            rss_before = broker.rss_bytes() / 1e6
            p50_before, p99_before = _active_latency_ms(broker)
            for _ in range(count):
                sock = socket.create_connection((host, int(port)))
                _round_trip_ms(sock)
                idle.append(sock)
            time.sleep(1.0)
            p50_after, p99_after = _active_latency_ms(broker)
            rss_after = broker.rss_bytes() / 1e6
        finally:
            for sock in idle:
                sock.close()
            broker.stop()
    return {
        "connections": count,
        "rss_mb_before": rss_before,
        "rss_mb_after": rss_after,
        "p50_ms_before": p50_before,
        "p99_ms_before": p99_before,
        "p50_ms_after": p50_after,
        "p99_ms_after": p99_after,
    }


def groups_restart(groups: int) -> dict[str, float]:
    """`groups` consumer groups with a committed offset each (AlterConsumerGroupOffsets),
    then a clean restart: ready time, and one group's offset read back."""
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        broker = start_minibroker(data_dir)
        try:
            admin = _admin(broker)
            admin.create_topics([NewTopic("offsets-source", 1, 1)])["offsets-source"].result()
            started = time.perf_counter()
            for index in range(groups):
                partitions = [TopicPartition("offsets-source", 0, index)]
                request = [ConsumerGroupTopicPartitions(f"group-{index:05d}", partitions)]
                for future in admin.alter_consumer_group_offsets(request).values():
                    future.result()
            commit_s = time.perf_counter() - started
        finally:
            broker.stop()
        started = time.perf_counter()
        broker = start_minibroker(data_dir)
        ready_ms = (time.perf_counter() - started) * 1000
        try:
            last = f"group-{groups - 1:05d}"
            request = [ConsumerGroupTopicPartitions(last, [TopicPartition("offsets-source", 0)])]
            admin = _admin(broker)  # kept: its futures end with it
            [future] = admin.list_consumer_group_offsets(request).values()
            offset = future.result(timeout=60).topic_partitions[0].offset
            if offset != groups - 1:
                raise RuntimeError(f"{last} has offset {offset} after the restart")
            rss_mb = broker.rss_bytes() / 1e6
        finally:
            broker.stop()
    return {
        "groups": groups,
        "commits_per_s": groups / commit_s,
        "ready_ms": ready_ms,
        "rss_mb": rss_mb,
    }


def report(run_result: ScaleRun) -> str:
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
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--per-topic", type=int, default=50)
    parser.add_argument("--groups", type=int, default=0, help="also: groups' restart")
    parser.add_argument("--connections", type=int, default=0, help="also: idle connections")
    parser.add_argument("--memory", action="store_true", help="also: in-process, in memory")
    parser.add_argument(
        "--session", type=int, default=0, help="also: a fetch session of this many partitions"
    )
    args = parser.parse_args()
    if args.partitions:
        result = run(args.partitions, args.per_topic)
        print(report(result))
        print(asdict(result))
    if args.partitions and args.memory:
        print(report_in_memory(in_memory(args.partitions, args.per_topic)))
    if args.session:
        print("SC fetch session:", fetch_session_cost(args.session))
    if args.groups:
        print("SC groups:", groups_restart(args.groups))
    if args.connections:
        print("SC idle connections:", idle_connections(args.connections))


if __name__ == "__main__":
    main()
