"""R1: the broker's cost per small request. One raw connection sends single-message Produce
requests (acks=1, 100-byte value, Produce v9: what librdkafka sends at linger 0), keeping
`--window` of them in flight, for `--seconds`; reports requests per second and the broker
process's CPU microseconds per request (its /proc utime + stime over the run), which is what
to compare on a shared host. The client is a socket loop sending one pre-encoded frame
again and again, so nearly all the CPU it measures is the broker's.

    python -m benchmarks.request_rate [--window 64] [--seconds 5] [--bootstrap HOST:PORT]

`--idempotent` sends an idempotent producer's batches instead (producer id and epoch from
InitProducerId, each request the next sequence), as the Java client does by default.

`--sweep` paces the requests instead (open loop: each is due at its slot of the rate, sent
when due, answered in order on the one connection) at rising rates, measures every request's
send→answer latency, and reports the highest rate whose answer p99 stays within 5 ms:

    python -m benchmarks.request_rate --sweep [--seconds 3]

Without --bootstrap it starts `minibroker serve` on disk (a topic `r1` is created); with it,
it drives a broker already running (e.g. under a profiler) and reports requests/s only.
"""

from __future__ import annotations

import argparse
import contextlib
import select
import socket
import struct
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks import procstat
from benchmarks.brokers import RunningBroker, connect, receive, start_minibroker
from benchmarks.stats import percentile
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import request_class, response_class
from minibroker.records.batch import BASE_SEQUENCE_OFFSET, write_crc
from minibroker.records.records import build_batch

if TYPE_CHECKING:
    from benchmarks.tls import TlsClient

TOPIC = "r1"
PRODUCE_VERSION = 9
_SIZE = struct.Struct(">i")
SWEEP_RATES = (2_000, 5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 35_000, 40_000, 50_000)
P99_LIMIT_MS = 5.0
# A paced run stops sending when this many requests wait for answers: the broker has fallen
# behind for good, and the latencies say so already.
PACED_BACKLOG = 20_000


def produce_frame(topic: str, value: bytes, batch: bytes | None = None) -> bytes:
    """A single-message Produce of `value` (or of `batch`, when given)."""
    cls = request_class(ApiKey.Produce)
    assert cls is not None
    if batch is None:
        batch = build_batch([(None, value, [], int(time.time() * 1000))])
    partition = cls.fields["topic_data"].data_class.fields["partition_data"].data_class
    topic_data = cls.fields["topic_data"].data_class
    message = cls(
        version=PRODUCE_VERSION,
        transactional_id=None,
        acks=1,
        timeout_ms=30_000,
        topic_data=[topic_data(name=topic, partition_data=[partition(index=0, records=batch)])],
    )
    header = struct.pack(">hhih", ApiKey.Produce, PRODUCE_VERSION, 1, 2) + b"r1" + b"\x00"
    body = header + bytes(message.encode(version=PRODUCE_VERSION))
    return _SIZE.pack(len(body)) + body


class ProducerFrames:
    """Single-message Produce frames of one idempotent producer (enable.idempotence: the
    Java client's default), each with the next sequence: a copy of one frame with the
    batch's base sequence and CRC rewritten."""

    def __init__(self, topic: str, value: bytes, producer_id: int, producer_epoch: int) -> None:
        batch = build_batch(
            [(None, value, [], int(time.time() * 1000))],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0,
        )
        self._frame = bytearray(produce_frame(topic, value, batch))
        self._batch_at = self._frame.index(batch)
        self._batch_size = len(batch)
        self.sequence = 0

    def take(self, count: int) -> bytes:
        """The next `count` frames, concatenated."""
        frames = []
        at = self._batch_at
        batch = memoryview(self._frame)[at : at + self._batch_size]
        for _ in range(count):
            _SIZE.pack_into(batch, BASE_SEQUENCE_OFFSET, self.sequence)
            write_crc(batch)
            frames.append(bytes(self._frame))
            self.sequence += 1
        return b"".join(frames)


def init_producer_id(bootstrap: str, tls: TlsClient | None = None) -> tuple[int, int]:
    """A producer id and epoch from InitProducerId v4 without a transactional id, as an
    idempotent producer asks."""
    cls = request_class(ApiKey.InitProducerId)
    assert cls is not None
    version = 4
    message = cls(
        version=version,
        transactional_id=None,
        transaction_timeout_ms=60_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    header = struct.pack(">hhih", ApiKey.InitProducerId, version, 1, 2) + b"r1" + b"\x00"
    body = header + bytes(message.encode(version=version))
    with connect(bootstrap, tls) as sock:
        sock.sendall(_SIZE.pack(len(body)) + body)
        pending = b""
        while len(pending) < 4 or len(pending) < 4 + _SIZE.unpack_from(pending)[0]:
            pending += receive(sock, 1 << 16)
    # size, correlation id, the response header's tagged fields (none)
    answer = response_class(ApiKey.InitProducerId).decode(pending[9:], version=version)
    if answer.error_code:
        raise RuntimeError(f"InitProducerId failed: error {answer.error_code}")
    return answer.producer_id, answer.producer_epoch


Frames: TypeAlias = "bytes | ProducerFrames"


def take(frames: Frames, count: int) -> bytes:
    return frames * count if isinstance(frames, bytes) else frames.take(count)


def drive(
    bootstrap: str, frames: Frames, window: int, seconds: float, tls: TlsClient | None = None
) -> int:
    """Send `frames` (one frame again and again, or an idempotent producer's) with `window`
    requests in flight for `seconds`; answered requests."""
    with connect(bootstrap, tls) as sock:
        sock.sendall(take(frames, window))
        pending = b""
        answered = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pending += receive(sock, 1 << 20)
            done = 0
            while len(pending) >= 4:
                size = _SIZE.unpack_from(pending)[0] + 4
                if len(pending) < size:
                    break
                pending = pending[size:]
                done += 1
            answered += done
            if done:
                sock.sendall(take(frames, done))
        return answered


def paced(bootstrap: str, frame: bytes, rate: int, seconds: float) -> list[float]:
    """Send `frame` at `rate` per second for `seconds`; each answer's latency in ms, measured
    from the moment its request was due (a late send counts against the broker too)."""
    host, _, port = bootstrap.rpartition(":")
    due_times: deque[float] = deque()
    latencies: list[float] = []
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        pending = b""
        unsent = bytearray()
        started = time.perf_counter()
        total = int(rate * seconds)
        sent = 0
        while len(latencies) < sent or sent < total:
            now = time.perf_counter()
            due = min(total, int((now - started) * rate) + 1)
            if due > sent and len(due_times) < PACED_BACKLOG:
                due_times.extend(started + i / rate for i in range(sent, due))
                unsent += frame * (due - sent)
                sent = due
            elif now - started > seconds + 10:
                break
            if unsent:
                with contextlib.suppress(BlockingIOError):
                    del unsent[: sock.send(unsent)]
            next_due = started + sent / rate if sent < total else now + 0.01
            select.select([sock], [sock] if unsent else [], [], max(0.0, next_due - now))
            try:
                pending += sock.recv(1 << 20)
            except BlockingIOError:
                continue
            now = time.perf_counter()
            position = 0
            while len(pending) - position >= 4:
                end = position + 4 + _SIZE.unpack_from(pending, position)[0]
                if end > len(pending):
                    break
                position = end
                latencies.append((now - due_times.popleft()) * 1000)
            pending = pending[position:]
    return latencies


def sweep(bootstrap: str, seconds: float) -> list[dict[str, float]]:
    """p50/p99 at each rate of SWEEP_RATES, until p99 exceeds twice the limit."""
    frame = produce_frame(TOPIC, b"v" * 100)
    rows = []
    for rate in SWEEP_RATES:
        ordered = sorted(paced(bootstrap, frame, rate, seconds))
        row = {
            "rate": rate,
            "answered_per_s": len(ordered) / seconds,
            "p50_ms": percentile(ordered, 0.5),
            "p99_ms": percentile(ordered, 0.99),
        }
        rows.append(row)
        print(
            f"R1 paced {rate:,}/s: p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms",
            flush=True,
        )
        if row["p99_ms"] > 2 * P99_LIMIT_MS:
            break
    return rows


def highest_sustained(rows: list[dict[str, float]]) -> float:
    """The highest swept rate whose answers' p99 stayed within P99_LIMIT_MS (0 if none)."""
    return max((row["rate"] for row in rows if row["p99_ms"] <= P99_LIMIT_MS), default=0.0)


def create_topic(bootstrap: str, mock: bool = False, tls: TlsClient | None = None) -> None:
    """The topic, through the admin API; the mock, which does not create topics that way,
    creates it when asked for its metadata."""
    if mock:
        Producer({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(TOPIC, timeout=10)
        return
    settings = {} if tls is None else tls.client_settings()
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **settings})
    with contextlib.suppress(KafkaException):  # it exists already
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)


def measure(
    broker: RunningBroker, window: int, seconds: float, mock: bool = False, idempotent: bool = False
) -> dict[str, float]:
    create_topic(broker.bootstrap, mock, broker.tls)
    frames: Frames = produce_frame(TOPIC, b"v" * 100)
    if idempotent:
        frames = ProducerFrames(TOPIC, b"v" * 100, *init_producer_id(broker.bootstrap, broker.tls))
    drive(broker.bootstrap, frames, window, 0.5, broker.tls)  # warm up
    cpu = procstat.cpu_seconds(broker.pid)
    started = time.perf_counter()
    answered = drive(broker.bootstrap, frames, window, seconds, broker.tls)
    elapsed = time.perf_counter() - started
    cpu = procstat.cpu_seconds(broker.pid) - cpu
    return {
        "requests_per_s": answered / elapsed,
        "broker_cpu_us_per_request": cpu / answered * 1e6,
        "broker_cpu_fraction": cpu / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--bootstrap", help="drive this broker instead of starting one")
    parser.add_argument("--sweep", action="store_true", help="paced rates, answer latencies")
    parser.add_argument(
        "--idempotent", action="store_true", help="an idempotent producer's batches (not --sweep)"
    )
    args = parser.parse_args()
    if args.sweep:
        with tempfile.TemporaryDirectory() as tmp:
            broker = start_minibroker(Path(tmp))
            try:
                create_topic(broker.bootstrap)
                rows = sweep(broker.bootstrap, args.seconds)
            finally:
                broker.stop()
        print(
            f"highest rate with answer p99 <= {P99_LIMIT_MS} ms: {highest_sustained(rows):,.0f}/s"
        )
        return
    if args.bootstrap:
        create_topic(args.bootstrap)
        frame = produce_frame(TOPIC, b"v" * 100)
        answered = drive(args.bootstrap, frame, args.window, args.seconds)
        print(f"window {args.window}: {answered / args.seconds:,.0f} requests/s")
        return
    with tempfile.TemporaryDirectory() as tmp:
        broker = start_minibroker(Path(tmp))
        try:
            result = measure(broker, args.window, args.seconds, idempotent=args.idempotent)
        finally:
            broker.stop()
    print(
        f"window {args.window}: {result['requests_per_s']:,.0f} requests/s, "
        f"broker {result['broker_cpu_us_per_request']:.1f} CPU-µs per request "
        f"({result['broker_cpu_fraction']:.2f} of a core)"
    )


if __name__ == "__main__":
    main()
