"""Hostile bytes against a running broker over TCP (hypothesis).

Invariant, checked after every input: the broker answered the frames it could read (whole
response frames, correlation ids of requests sent, in order) or closed that connection —
it never hangs on a half-closed one; a second, well-behaved connection opened before the
first input keeps working; the process is alive and logged no handler exception. At the
end: a topic written before the fuzzing reads back byte for byte, every segment and index
passes `minibroker dump-log --deep-iteration`, nothing was created outside the data
directory, and the broker's memory high-water mark stays below a bound.

The number of inputs per test is `MINIBROKER_FUZZ_EXAMPLES` (default 1000); `-s` prints the
inputs tried and the broker's VmHWM.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.handlers import load_all
from minibroker.handlers.registry import REGISTRY
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    RECORDS_COUNT_OFFSET,
    write_crc,
)
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from minibroker.records.records import build_batch
from tests.fuzz.broker_process import BrokerProcess, dump_log_problems
from tests.reference import GOLDEN_FRAMES
from tests.wire import WireClient, encode_request, request_frame

EXAMPLES = int(os.environ.get("MINIBROKER_FUZZ_EXAMPLES", "1000"))
MAX_REQUEST_BYTES = 4 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 1024 * 1024
# The broker at rest is ~60 MiB; a bound well below what one unchecked length would cost.
PEAK_RSS_LIMIT_KIB = 400 * 1024
KNOWN_TOPIC = "known-data-7f3a"
PRODUCE_TOPIC = "fuzz-produce"
CLOSE_WAIT_SECONDS = 20.0
NOW_MS = int(time.time() * 1000)

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)


@dataclass
class Target:
    broker: BrokerProcess
    guard: WireClient
    known_bytes: bytes
    inputs: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        self.inputs[kind] = self.inputs.get(kind, 0) + 1


def _golden_frames() -> list[bytes]:
    frames = [path.read_bytes() for path in sorted(GOLDEN_FRAMES.glob("*/*.bin"))]
    assert len(frames) > 90, f"golden frames missing in {GOLDEN_FRAMES}"
    return frames


def _local_request_frames() -> list[bytes]:
    """Valid frames for requests the golden set lacks or that carry hostile-looking fields."""
    batch = build_batch([(b"k", b"v", [("h", b"x")], NOW_MS)])
    topic_data = [{"name": PRODUCE_TOPIC, "partition_data": [{"index": 0, "records": batch}]}]
    bodies = [
        (
            ApiKey.Produce,
            9,
            encode_request(ApiKey.Produce, 9, acks=1, timeout_ms=1000, topic_data=topic_data),
        ),
        (
            ApiKey.Produce,
            3,
            encode_request(ApiKey.Produce, 3, acks=-1, timeout_ms=1000, topic_data=topic_data),
        ),
        (
            ApiKey.CreateTopics,
            5,
            encode_request(
                ApiKey.CreateTopics,
                5,
                timeout_ms=1000,
                validate_only=True,
                topics=[
                    {
                        "name": "fuzz-created",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
            ),
        ),
        (
            ApiKey.Metadata,
            4,
            encode_request(
                ApiKey.Metadata, 4, topics=[{"name": PRODUCE_TOPIC}], allow_auto_topic_creation=True
            ),
        ),
        (
            ApiKey.ListOffsets,
            5,
            encode_request(
                ApiKey.ListOffsets,
                5,
                replica_id=-1,
                isolation_level=0,
                topics=[
                    {
                        "name": PRODUCE_TOPIC,
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                        ],
                    }
                ],
            ),
        ),
    ]
    return [request_frame(key, version, 1, body)[4:] for key, version, body in bodies]


SEED_FRAMES: list[bytes] = []


def _seed_frames() -> list[bytes]:
    if not SEED_FRAMES:
        SEED_FRAMES.extend(_golden_frames() + _local_request_frames())
    return SEED_FRAMES


# -- the broker under test ------------------------------------------------------------------


def _produce(client: WireClient, topic: str, records: bytes) -> Any:
    topic_data = [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]
    return client.call(ApiKey.Produce, 9, acks=-1, timeout_ms=5000, topic_data=topic_data)


def _fetch_all(client: WireClient, topic: str) -> bytes:
    partitions = [
        {
            "partition": 0,
            "current_leader_epoch": -1,
            "fetch_offset": 0,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
    ]
    response = client.call(
        ApiKey.Fetch,
        12,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[{"topic": topic, "partitions": partitions}],
        forgotten_topics_data=[],
        rack_id="",
    )
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR
    return bytes(partition.records or b"")


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    load_all()
    root = tmp_path_factory.mktemp("fuzz")
    broker = BrokerProcess(
        root / "data",
        root / "broker.log",
        {
            "socket.request.max.bytes": str(MAX_REQUEST_BYTES),
            "minibroker.max.decompressed.batch.bytes": str(MAX_DECOMPRESSED_BYTES),
            "log.segment.bytes": "65536",
        },
    )
    address = broker.start()
    guard = WireClient(address)
    topics = [{"name": KNOWN_TOPIC}, {"name": PRODUCE_TOPIC}]
    guard.call(ApiKey.Metadata, 4, topics=topics, allow_auto_topic_creation=True)
    for index in range(3):
        batch = build_batch([(b"key-%d" % index, b"value-%d" % index, [], NOW_MS)])
        answer = _produce(guard, KNOWN_TOPIC, batch)
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
    fuzz_target = Target(broker, guard, _fetch_all(guard, KNOWN_TOPIC))
    yield fuzz_target
    try:
        assert broker.alive(), "the broker died"
        assert _fetch_all(guard, KNOWN_TOPIC) == fuzz_target.known_bytes
        peak = broker.peak_rss_kib()
        total = sum(fuzz_target.inputs.values())
        print(f"\nfuzz: {total} inputs tried {dict(sorted(fuzz_target.inputs.items()))}")
        print(f"fuzz: broker VmHWM {peak / 1024:.1f} MiB")
        assert peak < PEAK_RSS_LIMIT_KIB
        guard.close()
        assert broker.stop() == 0
        assert broker.logged_tracebacks() == []
        assert dump_log_problems(root / "data") == []
        assert sorted(p.name for p in root.iterdir()) == ["broker.log", "data"]
    finally:
        if broker.alive():
            broker.kill()


# -- sending one hostile input and checking the invariant ----------------------------------


def _complete_frame_ids(data: bytes) -> list[int]:
    """Correlation ids of the whole frames the broker can read from `data` before it stops
    (at a frame cut short, a bad size or one over the limit)."""
    ids: list[int] = []
    pos = 0
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or size > MAX_REQUEST_BYTES or pos + 4 + size > len(data):
            break
        if size >= 8:
            ids.append(struct.unpack_from(">i", data, pos + 8)[0])
        pos += 4 + size
    return ids


def _exchange(address: str, data: bytes, answers: int) -> bytes:
    """Send `data`, wait for `answers` response frames (or the broker closing), half-close,
    and read everything the broker sends until it closes."""
    host, _, port = address.partition(":")
    with socket.create_connection((host, int(port)), timeout=CLOSE_WAIT_SECONDS) as sock:
        received = bytearray()
        try:
            sock.sendall(data)
            while len(_response_ids(received, whole_only=True)) < answers:
                chunk = sock.recv(65536)
                if not chunk:
                    return bytes(received)
                received += chunk
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the broker closed early: allowed
        except OSError as exc:
            if exc.errno != errno.ENOTCONN:  # reset by the broker before our half-close
                raise
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            except TimeoutError:
                raise AssertionError("the broker neither answered nor closed") from None
            if not chunk:
                break
            received += chunk
    return bytes(received)


def _response_ids(received: bytes | bytearray, whole_only: bool = False) -> list[int]:
    ids: list[int] = []
    pos = 0
    while pos < len(received):
        if whole_only and pos + 8 > len(received):
            break
        assert pos + 8 <= len(received), "a response frame cut short"
        (size,) = struct.unpack_from(">i", received, pos)
        assert size >= 4, f"bad response size {size}"
        if whole_only and pos + 4 + size > len(received):
            break
        assert pos + 4 + size <= len(received), "a response frame cut short"
        ids.append(struct.unpack_from(">i", received, pos + 4)[0])
        pos += 4 + size
    return ids


def _is_subsequence(items: list[int], of: list[int]) -> bool:
    remaining = iter(of)
    return all(any(item == candidate for candidate in remaining) for item in items)


def _check(target: Target, kind: str, data: bytes, answers: int = 0) -> bytes:
    target.count(kind)
    received = _exchange(target.broker.address, data, answers)
    answered = _response_ids(received)
    assert _is_subsequence(answered, _complete_frame_ids(data)), (answered, data[:64])
    assert target.broker.alive(), "the broker died"
    response = target.guard.call(
        ApiKey.ApiVersions, 3, client_software_name="guard", client_software_version="1"
    )
    assert response.error_code == ErrorCode.NO_ERROR
    assert target.broker.logged_tracebacks() == []
    return received


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


# -- strategies -----------------------------------------------------------------------------

SPECIAL_INT32 = [-(2**31), -2, -1, 0, 1, 0x7FFF, 0xFFFF, 2**31 - 1, MAX_REQUEST_BYTES + 1]
SPECIAL_INT16 = [-(2**15), -2, -1, 0, 0x7FFF]


@st.composite
def mutated_frame(draw: st.DrawFn) -> bytes:
    """A real client's request with a few hostile edits."""
    frame = bytearray(draw(st.sampled_from(_seed_frames())))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, max(0, len(frame) - 1)))
        edit = draw(
            st.sampled_from(
                ["flip", "int32", "int16", "varint", "insert", "delete", "truncate", "utf8"]
            )
        )
        if edit == "flip" and frame:
            frame[position] ^= 1 << draw(st.integers(0, 7))
        elif edit == "int32":
            frame[position : position + 4] = struct.pack(">i", draw(st.sampled_from(SPECIAL_INT32)))
        elif edit == "int16":
            frame[position : position + 2] = struct.pack(">h", draw(st.sampled_from(SPECIAL_INT16)))
        elif edit == "varint":
            run = b"\xff" * draw(st.integers(1, 12)) + draw(
                st.sampled_from([b"\x7f", b"\x01", b""])
            )
            frame[position : position + 1] = run
        elif edit == "insert":
            frame[position:position] = draw(st.binary(min_size=1, max_size=16))
        elif edit == "delete":
            del frame[position : position + draw(st.integers(1, 16))]
        elif edit == "truncate":
            del frame[position:]
        elif edit == "utf8":
            frame[position : position + 2] = draw(
                st.sampled_from([b"\xc3\x28", b"\xff\xfe", b"\x00\x00", b"\xed\xa0"])
            )
    payload = bytes(frame)
    framing = draw(st.sampled_from(["exact", "exact", "exact", "short", "long", "twice"]))
    if framing == "short":
        return _framed(payload)[: 4 + len(payload) // 2]
    if framing == "long":
        return struct.pack(">i", len(payload) + draw(st.integers(1, 1000))) + payload
    if framing == "twice":
        return _framed(payload) + _framed(payload)
    return _framed(payload)


@st.composite
def random_body_for_a_served_api(draw: st.DrawFn) -> bytes:
    """A well-formed header for a served API and version, then random bytes."""
    spec = draw(st.sampled_from(sorted(REGISTRY.values(), key=lambda s: int(s.api_key))))
    version = draw(st.integers(spec.min_version, spec.max_version))
    body = draw(st.binary(max_size=200))
    return request_frame(int(spec.api_key), version, draw(st.integers(-5, 5)), body)


@st.composite
def hostile_batch(draw: st.DrawFn) -> bytes:
    """A record batch whose records or header lie, with a CRC that matches the lie (so it
    gets past the CRC check to the record checks)."""
    records = draw(
        st.lists(
            st.tuples(st.binary(max_size=8) | st.none(), st.binary(max_size=32) | st.none()),
            min_size=1,
            max_size=5,
        )
    )
    codec = draw(st.sampled_from([NONE, NONE, GZIP, SNAPPY, LZ4, ZSTD]))
    batch = bytearray(
        build_batch([(k, v, [("h", b"1")], NOW_MS) for k, v in records], compression=codec)
    )
    edit = draw(st.sampled_from(["records", "count", "varint", "length", "none"]))
    if edit == "records" and len(batch) > HEADER_SIZE:
        for _ in range(draw(st.integers(1, 3))):
            position = draw(st.integers(HEADER_SIZE, len(batch) - 1))
            batch[position] = draw(st.integers(0, 255))
    elif edit == "count":
        value = draw(st.sampled_from([*SPECIAL_INT32, len(records) + 1, len(records) - 1]))
        offset = draw(st.sampled_from([RECORDS_COUNT_OFFSET, LAST_OFFSET_DELTA_OFFSET]))
        struct.pack_into(">i", batch, offset, value)
    elif edit == "varint" and len(batch) > HEADER_SIZE:
        position = draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[position:position] = b"\xff" * draw(st.integers(1, 11))
    elif edit == "length":
        struct.pack_into(">i", batch, LENGTH_OFFSET, draw(st.sampled_from(SPECIAL_INT32)))
    if edit != "length":
        struct.pack_into(">i", batch, LENGTH_OFFSET, len(batch) - LOG_OVERHEAD)
    write_crc(batch)
    return bytes(batch)


# -- the tests ------------------------------------------------------------------------------


@FUZZ_SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes(target: Target, data: bytes) -> None:
    _check(target, "random bytes", data)


@FUZZ_SETTINGS
@given(size=st.sampled_from([*SPECIAL_INT32, 4, 7, 8, 12]), rest=st.binary(max_size=64))
def test_length_prefixes(target: Target, size: int, rest: bytes) -> None:
    _check(target, "length prefix", struct.pack(">i", size) + rest)


@FUZZ_SETTINGS
@given(frame=random_body_for_a_served_api())
def test_random_bodies(target: Target, frame: bytes) -> None:
    _check(target, "random body", frame)


@FUZZ_SETTINGS
@given(frame=mutated_frame())
def test_mutated_client_requests(target: Target, frame: bytes) -> None:
    _check(target, "mutated request", frame)


@FUZZ_SETTINGS
@given(batch=hostile_batch(), version=st.sampled_from([3, 7, 9, 11]))
def test_lying_record_batches(target: Target, batch: bytes, version: int) -> None:
    topic_data = [{"name": PRODUCE_TOPIC, "partition_data": [{"index": 0, "records": batch}]}]
    body = encode_request(ApiKey.Produce, version, acks=1, timeout_ms=1000, topic_data=topic_data)
    received = _check(target, "hostile batch", request_frame(ApiKey.Produce, version, 7, body), 1)
    assert _response_ids(received) == [7]
    error = _produce_error(received, version)
    assert error != ErrorCode.UNKNOWN_SERVER_ERROR


def _produce_error(received: bytes, version: int) -> int:
    from minibroker.protocol.codec import is_flexible, response_class

    pos = 8 + (1 if is_flexible(ApiKey.Produce, version) else 0)
    body = response_class(ApiKey.Produce).decode(received[pos:], version=version)
    return int(body.responses[0].partition_responses[0].error_code)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batch_expanding_past_the_limit(target: Target, codec: int) -> None:
    value = bytes(2 * MAX_DECOMPRESSED_BYTES)
    batch = build_batch([(None, value, [], NOW_MS)], compression=codec)
    assert len(batch) < 1 << 20
    topic_data = [{"name": PRODUCE_TOPIC, "partition_data": [{"index": 0, "records": batch}]}]
    body = encode_request(ApiKey.Produce, 9, acks=1, timeout_ms=1000, topic_data=topic_data)
    received = _check(target, "decompression bomb", request_frame(ApiKey.Produce, 9, 3, body), 1)
    assert _produce_error(received, 9) == ErrorCode.INVALID_RECORD


def test_huge_varint_run_is_rejected_quickly(target: Target) -> None:
    """A compact array count made of 3 MiB of 0xff bytes: closed, not decoded for minutes."""
    body = b"\xff" * (3 * 1024 * 1024) + b"\x01"
    received = _check(target, "varint run", request_frame(ApiKey.Metadata, 12, 1, body))
    assert received == b""


def test_many_tagged_structs_do_not_copy_the_frame_each(target: Target) -> None:
    """200k array elements, each with a tagged-field section, in a 4 MiB frame."""
    count = 200_000
    topic = b"\x00" * 16 + b"\x02a" + b"\x01\x05\x00"  # id, name "a", one empty unknown tag
    array = bytes([(count + 1) & 0x7F | 0x80, ((count + 1) >> 7) & 0x7F | 0x80, (count + 1) >> 14])
    body = array + topic * count + b"\x00\x00\x00\x00"
    filler = b"\x00" * (MAX_REQUEST_BYTES - len(body) - 64)
    _check(target, "tagged structs", request_frame(ApiKey.Metadata, 12, 2, body + filler))
