"""FE and FM: the broker's CPU per Fetch when many consumers poll. `CONSUMERS` raw connections,
each with one Fetch in flight (v16, topics by id from a Metadata v12 request, no fetch session,
read_uncommitted: what librdkafka 2.16 sends) for a partition of its own (25 topics of 4
partitions, as the mock creates them), sent again as soon as it is answered:

- FE, empty long poll: the partitions stay empty, so every Fetch waits its `max_wait_ms`
  (10 ms) and is answered empty.
- FM, small batches: every partition holds `PRELOAD` one-message batches (100-byte values);
  each Fetch asks for the next offset with a partition limit of 1 byte, so that it is answered
  with exactly one batch (KIP-74: the first batch goes whole past the limit), and the offsets
  start over at 0 after the last one.

Reports Fetches answered per second and the broker process's CPU microseconds per Fetch (its
/proc utime + stime over the run). The client is a socket loop sending pre-encoded frames, so
the CPU measured is the broker's; librdkafka's mock cluster serves the same frames as the
reference (it answers one stored batch per partition, and holds an empty answer back, though
longer than `max_wait_ms`: ~1,400 empty answers/s where minibroker gives up to 10,000).

    python -m benchmarks.fetch_rate [--seconds 3] [--only FE,FM] [--bootstrap HOST:PORT]

Without --bootstrap it starts `minibroker serve` on disk and the mock; with it, it drives that
broker (e.g. one under a profiler) only.
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import socket
import struct
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks import procstat
from benchmarks.brokers import (
    MOCK,
    RunningBroker,
    connect,
    receive,
    start_minibroker,
    start_mock,
)
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import request_class, response_class
from minibroker.records.records import build_batch

if TYPE_CHECKING:
    from benchmarks.tls import TlsClient

CONSUMERS = 100
PARTITIONS = 4  # per topic: the mock cluster's auto-created topics have 4
PRELOAD = 100  # one-message batches per partition for FM
VALUE = b"v" * 100
MAX_WAIT_MS = 10
FETCH_VERSION = 16
METADATA_VERSION = 12
PRODUCE_VERSION = 9
EMPTY_TOPICS = "fe"
SMALL_TOPICS = "fm"
BATCH_HEADER = 61  # a RecordBatch's bytes before its records
_SIZE = struct.Struct(">i")
_OFFSET = struct.Struct(">q")
_MARKER = 0x0123456789ABCDEF  # a fetch offset found again in the encoded frame
_CLIENT_ID = b"fetch-rate"


@dataclass(frozen=True)
class FetchFrames:
    """Fetch frames for one partition: `frame(offset)` patches the fetch offset in."""

    template: bytes
    offset_at: int

    def frame(self, offset: int) -> bytes:
        at = self.offset_at
        return self.template[:at] + _OFFSET.pack(offset) + self.template[at + 8 :]


def _frame(api_key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
    header = struct.pack(">hhih", api_key, version, 1, len(_CLIENT_ID)) + _CLIENT_ID
    header += b"\x00" if flexible else b""  # request header v2: no tagged fields
    return _SIZE.pack(len(header) + len(body)) + header + body


def fetch_frames(
    topic_id: uuid.UUID, partition: int, partition_max_bytes: int, max_wait_ms: int = MAX_WAIT_MS
) -> FetchFrames:
    cls = request_class(ApiKey.Fetch)
    assert cls is not None
    topic_class = cls.fields["topics"].data_class
    partition_class = topic_class.fields["partitions"].data_class
    wanted = partition_class(
        partition=partition,
        current_leader_epoch=-1,
        fetch_offset=_MARKER,
        log_start_offset=-1,
        partition_max_bytes=partition_max_bytes,
    )
    message = cls(
        version=FETCH_VERSION,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=52_428_800,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[topic_class(topic_id=topic_id, partitions=[wanted])],
        forgotten_topics_data=[],
        rack_id="",
    )
    body = bytes(message.encode(version=FETCH_VERSION))
    template = _frame(ApiKey.Fetch, FETCH_VERSION, body, flexible=True)
    return FetchFrames(template, template.index(_OFFSET.pack(_MARKER)))


def topic_names(prefix: str) -> list[str]:
    return [f"{prefix}-{n}" for n in range(CONSUMERS // PARTITIONS)]


def preload_frame(topics: list[str]) -> bytes:
    """One Produce (acks=1) with a one-message batch for each partition of `topics`."""
    cls = request_class(ApiKey.Produce)
    assert cls is not None
    topic_class = cls.fields["topic_data"].data_class
    partition_class = topic_class.fields["partition_data"].data_class
    batch = build_batch([(None, VALUE, [], int(time.time() * 1000))])
    message = cls(
        version=PRODUCE_VERSION,
        transactional_id=None,
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            topic_class(
                name=topic,
                partition_data=[partition_class(index=i, records=batch) for i in range(PARTITIONS)],
            )
            for topic in topics
        ],
    )
    body = bytes(message.encode(version=PRODUCE_VERSION))
    return _frame(ApiKey.Produce, PRODUCE_VERSION, body, flexible=True)


def answer_sizes(pending: bytearray, keep: bool = False) -> list[int]:
    """The sizes of the whole answers at the start of `pending`, removed from it (unless
    `keep`)."""
    sizes = []
    position = 0
    while len(pending) - position >= 4:
        end = position + 4 + _SIZE.unpack_from(pending, position)[0]
        if end > len(pending):
            break
        sizes.append(end - position)
        position = end
    if not keep:
        del pending[:position]
    return sizes


@dataclass
class _Consumer:
    sock: socket.socket
    frames: FetchFrames
    offset: int = 0
    pending: bytearray | None = None

    def send_next(self, offsets: int) -> None:
        self.sock.sendall(self.frames.frame(self.offset))
        self.offset = (self.offset + 1) % offsets if offsets else 0


def poll(
    bootstrap: str,
    prefix: str,
    offsets: int,
    seconds: float,
    check: Callable[[int], None],
    tls: TlsClient | None = None,
) -> int:
    """Each of `CONSUMERS` connections fetches its partition of the topics named `prefix`-n
    for `seconds`, one
    Fetch in flight, offsets 0..`offsets`-1 over and over (always 0 when `offsets` is 0);
    `check` sees each answer's size. Returns the Fetches answered."""
    limit = 1 if offsets else 1 << 20
    ids = topic_ids(bootstrap, topic_names(prefix), tls)
    consumers = [
        _Consumer(
            connect(bootstrap, tls), fetch_frames(ids[topic], index, limit), pending=bytearray()
        )
        for topic in topic_names(prefix)
        for index in range(PARTITIONS)
    ]
    answered = 0
    with selectors.DefaultSelector() as selector:
        try:
            for consumer in consumers:
                selector.register(consumer.sock, selectors.EVENT_READ, consumer)
                consumer.send_next(offsets)
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                for key, _ in selector.select(0.1):
                    consumer = key.data
                    assert consumer.pending is not None
                    consumer.pending += receive(consumer.sock, 1 << 16)
                    for size in answer_sizes(consumer.pending):
                        check(size)
                        answered += 1
                        consumer.send_next(offsets)
        finally:
            for consumer in consumers:
                consumer.sock.close()
    return answered


def request(bootstrap: str, frame: bytes, count: int, tls: TlsClient | None) -> None:
    """Send `frame` `count` times on one connection and wait for every answer."""
    with connect(bootstrap, tls) as sock:
        sock.sendall(frame * count)
        pending = bytearray()
        answered = 0
        while answered < count:
            chunk = receive(sock, 1 << 20)
            if not chunk:
                raise RuntimeError("the broker closed the connection while preloading")
            pending += chunk
            answered += len(answer_sizes(pending))


def topic_ids(
    bootstrap: str, names: list[str], tls: TlsClient | None = None
) -> dict[str, uuid.UUID]:
    """The ids of topics `names`, from a Metadata v12 answer (what librdkafka asks)."""
    cls = request_class(ApiKey.Metadata)
    assert cls is not None
    topic_class = cls.fields["topics"].data_class
    message = cls(
        version=METADATA_VERSION,
        topics=[topic_class(name=name, topic_id=uuid.UUID(int=0)) for name in names],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    body = bytes(message.encode(version=METADATA_VERSION))
    with connect(bootstrap, tls) as sock:
        sock.sendall(_frame(ApiKey.Metadata, METADATA_VERSION, body, flexible=True))
        pending = bytearray()
        while not (sizes := answer_sizes(pending, keep=True)):
            pending += receive(sock, 1 << 16)
    # size, correlation id, the response header's tagged fields (none)
    answer = response_class(ApiKey.Metadata).decode(bytes(pending[9 : sizes[0]]), version=12)
    return {topic.name: topic.topic_id for topic in answer.topics}


def create_topics(
    bootstrap: str, names: list[str], mock: bool, tls: TlsClient | None = None
) -> None:
    """`names` with `PARTITIONS` partitions each: the mock creates them when asked for their
    metadata, minibroker through the admin API."""
    if mock:
        Producer({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=10)
        for name in names:
            Producer({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(name, timeout=10)
        return
    settings = {} if tls is None else tls.client_settings()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **settings})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names])
    for future in futures.values():
        with contextlib.suppress(KafkaException):  # it exists already
            future.result(10)


def prepare(bootstrap: str, mock: bool = False, tls: TlsClient | None = None) -> None:
    """The empty topics of FE and the preloaded ones of FM."""
    create_topics(bootstrap, topic_names(EMPTY_TOPICS), mock, tls)
    create_topics(bootstrap, topic_names(SMALL_TOPICS), mock, tls)
    request(bootstrap, preload_frame(topic_names(SMALL_TOPICS)), PRELOAD, tls)


def _empty_answer_size() -> int:
    """A v16 answer with one partition, no aborted-transaction list and no records."""
    top = 4 + 4 + 1 + 4 + 2 + 4  # size, correlation id, tags, throttle time, error, session id
    topic = 1 + 16 + 1 + 1  # topics array, topic id, partitions array, its tags
    partition = 4 + 2 + 8 + 8 + 8 + 1 + 4 + 1 + 1  # ... aborted, preferred replica, records, tags
    return top + topic + partition + 1  # the response's tags


def _expect_empty(size: int) -> None:
    if size >= _empty_answer_size() + BATCH_HEADER:
        raise RuntimeError(f"FE: an answer of {size} bytes, not an empty one")


def _expect_batch(size: int) -> None:
    if size < _empty_answer_size() + BATCH_HEADER + len(VALUE):
        raise RuntimeError(f"FM: an answer of {size} bytes, without its one-message batch")


SCENARIOS: dict[str, tuple[str, int, Callable[[int], None]]] = {
    "FE": (EMPTY_TOPICS, 0, _expect_empty),
    "FM": (SMALL_TOPICS, PRELOAD, _expect_batch),
}


def drive(bootstrap: str, scenario: str, seconds: float, tls: TlsClient | None = None) -> int:
    prefix, offsets, check = SCENARIOS[scenario]
    return poll(bootstrap, prefix, offsets, seconds, check, tls)


def measure(broker: RunningBroker, scenario: str, seconds: float) -> dict[str, float]:
    """Fetches/s and broker CPU-µs per Fetch of one run (`prepare` first)."""
    drive(broker.bootstrap, scenario, 0.3, broker.tls)  # warm up
    cpu = procstat.cpu_seconds(broker.pid)
    started = time.perf_counter()
    answered = drive(broker.bootstrap, scenario, seconds, broker.tls)
    elapsed = time.perf_counter() - started
    cpu = procstat.cpu_seconds(broker.pid) - cpu
    return {
        "fetches_per_s": answered / elapsed,
        "broker_cpu_us_per_fetch": cpu / answered * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--only", default="FE,FM")
    parser.add_argument("--bootstrap", help="drive this broker instead of starting one")
    args = parser.parse_args()
    scenarios = args.only.split(",")
    if args.bootstrap:
        prepare(args.bootstrap)
        for scenario in scenarios:
            answered = drive(args.bootstrap, scenario, args.seconds)
            print(f"{scenario}: {answered / args.seconds:,.0f} Fetches/s")
        return
    with tempfile.TemporaryDirectory() as tmp:
        brokers = (start_minibroker(Path(tmp)), start_mock())
        try:
            for broker in brokers:
                prepare(broker.bootstrap, mock=broker.name == MOCK)
                for scenario in scenarios:
                    result = measure(broker, scenario, args.seconds)
                    print(
                        f"{scenario} {broker.name}: {result['fetches_per_s']:,.0f} Fetches/s, "
                        f"{result['broker_cpu_us_per_fetch']:.1f} broker CPU-µs per Fetch"
                    )
        finally:
            for broker in brokers:
                broker.stop()


if __name__ == "__main__":
    main()
