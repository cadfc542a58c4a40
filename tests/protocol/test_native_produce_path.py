"""Produce's native fast path (`handlers/produce_native.py`) against the pure handler: the
same request frames sent to two brokers alike, one through `dispatch` with the fast path and
one with it off, give identical answers (bytes) and identical logs (stored batch bytes,
offsets, high watermark, producer state), whichever of the two answers each request.

The generated requests mix the common case with what the fast path hands back (unknown
topics and partitions, LogAppendTime, compacted, recompressing and small-limit topics,
corrupt CRCs, transactional ids, compressed batches, acks 0/-1/2, old timestamps) and with
idempotent producers whose epochs and sequences repeat, skip and go back (duplicates,
out-of-order sequences, fenced epochs); streams of idempotent batches mostly each the next
in sequence (the path's `next_in_sequence`), on disk with the producer state reloaded from
its snapshots between rounds, give the same snapshot files too; mutated frames check that
`plain_produce` takes only what the pure decoder and validator accept; in a cluster,
partitions led elsewhere and acks=all on replicated partitions are left to the handler. The
native run uses the built extension even under MINIBROKER_PURE_PYTHON=1; skipped only when it
was not built."""

from __future__ import annotations

import asyncio
import struct
import tempfile
import time
import uuid
from pathlib import Path
from random import Random
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.config import BrokerConfig
from minibroker.handlers import produce_native
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import decode_header
from minibroker.protocol.produce_request import decode_produce_request
from minibroker.records.compression import GZIP, NONE
from minibroker.records.records import build_batch
from minibroker.records.validate import InvalidRecords, ValidationConfig, validate_produce_records
from minibroker.server.broker import Broker
from minibroker.server.context import Session
from minibroker.server.dispatch import dispatch
from minibroker.testing import KafkaCluster
from tests.wire import encode_request, request_frame

native = pytest.importorskip("minibroker.protocol._accel")

TOPICS: dict[str, dict[str, str]] = {
    "plain": {},
    "isr": {"min.insync.replicas": "2"},
    "append-time": {"message.timestamp.type": "LogAppendTime"},
    "compacted": {"cleanup.policy": "compact"},
    "gzip": {"compression.type": "gzip"},
    "uncompressed": {"compression.type": "uncompressed"},
    "small": {"max.message.bytes": "150"},
    "recent": {"message.timestamp.before.max.ms": "3600000"},
}
PARTITIONS = 2
HOUR_MS = 3_600_000


def _broker(data_dir: Path | None) -> Broker:
    settings_ = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    if data_dir is not None:
        settings_["log.dirs"] = str(data_dir)
    return Broker(BrokerConfig(settings_), in_memory=data_dir is None)


def _twin_brokers(data_dirs: tuple[Path, Path] | None) -> tuple[Broker, Broker]:
    """Two brokers with the same topics (the same topic ids)."""
    fast, pure = (_broker(None if data_dirs is None else d) for d in data_dirs or (None, None))
    for name, configs in TOPICS.items():
        topic_id = uuid.uuid4()
        for broker in (fast, pure):
            with mock.patch("uuid.uuid4", return_value=topic_id):
                broker.cluster.create_topic(name, PARTITIONS, configs)
    return fast, pure


def _native(plain_produce: Any) -> Any:
    return mock.patch.object(produce_native, "native_plain_produce", plain_produce)


def _answer(broker: Broker, frame: bytes, readonly: bool) -> Any:
    listener = broker.config.listeners[0]
    sent = frame[4:] if readonly else bytearray(frame[4:])
    answered = asyncio.run(dispatch(broker, sent, listener, Session()))
    if answered is None or isinstance(answered, bytearray):
        return answered
    return b"".join(bytes(part) for part in answered.parts)  # type: ignore[arg-type]


def _state(broker: Broker) -> list[Any]:
    state = []
    for name in TOPICS:
        for index in range(PARTITIONS):
            partition = broker.cluster.partition(name, index)
            assert partition is not None
            log = partition.log
            stored = log.read(log.log_start_offset, 1 << 30)
            table = broker.producers._table(partition)
            producers = sorted((pid, repr(entry)) for pid, entry in table.items())
            state.append((name, index, stored, partition.high_watermark, producers))
    return state


_producers = st.one_of(
    st.just((-1, -1, -1)),
    st.tuples(st.sampled_from([1000, 1001]), st.sampled_from([0, 1]), st.integers(0, 4)),
)
_records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=8)),
        st.one_of(st.none(), st.binary(max_size=120)),
        st.lists(st.tuples(st.text(max_size=3), st.binary(max_size=3)), max_size=1),
        st.sampled_from([0, -1, -10 * HOUR_MS]),
    ),
    min_size=1,
    max_size=3,
)
_requests = st.fixed_dictionaries(
    {
        "version": st.integers(9, 13),
        "topic": st.sampled_from([*TOPICS, "missing"]),
        "partition": st.sampled_from([0, 0, 1, 2]),
        "acks": st.sampled_from([1, 1, 1, 0, -1, 2]),
        "transactional_id": st.sampled_from([None, None, None, "txn"]),
        "producer": _producers,
        "records": _records,
        "compression": st.sampled_from([NONE, NONE, NONE, GZIP]),
        "corrupt": st.sampled_from([False, False, False, True]),
        "readonly": st.booleans(),
    }
)


def _frame(request: dict[str, Any], broker: Broker, correlation_id: int) -> bytes:
    now = int(time.time() * 1000)
    producer_id, epoch, sequence = request["producer"]
    batch = bytearray(
        build_batch(
            [(k, v, h, -1 if t == -1 else now + t) for k, v, h, t in request["records"]],
            compression=request["compression"],
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
    )
    if request["corrupt"]:
        batch[-1] ^= 0xFF
    version = request["version"]
    topic = broker.cluster.topics.get(request["topic"])
    topic_id = topic.topic_id if topic is not None else uuid.UUID(int=7)
    body = encode_request(
        ApiKey.Produce,
        version,
        transactional_id=request["transactional_id"],
        acks=request["acks"],
        timeout_ms=1000,
        topic_data=[
            {
                "name": request["topic"] if version < 13 else "",
                "topic_id": topic_id,
                "partition_data": [{"index": request["partition"], "records": bytes(batch)}],
            }
        ],
    )
    return request_frame(ApiKey.Produce, version, correlation_id, body)


def _agree(fast: Broker, pure: Broker, requests: list[dict[str, Any]]) -> int:
    """Sends the requests to both; the number the fast path answered itself."""
    native_answers: list[bool] = []

    def answer(broker: Broker, frame: memoryview) -> Any:
        answered = real_answer(broker, frame)
        native_answers.append(answered is not produce_native.UNHANDLED)
        return answered

    real_answer = produce_native.answer
    for correlation_id, request in enumerate(requests):
        frame = _frame(request, fast, correlation_id)
        # One clock for both: answers such as INVALID_TIMESTAMP's name the bounds of now.
        with mock.patch("time.time_ns", return_value=time.time_ns()):
            with _native(native.plain_produce), mock.patch.object(produce_native, "answer", answer):
                got = _answer(fast, frame, request["readonly"])
            with _native(None):
                expected = _answer(pure, frame, request["readonly"])
        assert got == expected, request
    assert _state(fast) == _state(pure)
    return sum(native_answers)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_requests, min_size=1, max_size=12))
def test_both_paths_answer_and_store_alike(requests: list[dict[str, Any]]) -> None:
    fast, pure = _twin_brokers(None)
    _agree(fast, pure, requests)


_COMMON: dict[str, Any] = {
    "version": 9,
    "topic": "plain",
    "partition": 0,
    "acks": 1,
    "transactional_id": None,
    "producer": (-1, -1, -1),
    "records": [(None, b"v" * 100, [], 0)],
    "compression": NONE,
    "corrupt": False,
    "readonly": False,
}


def test_on_disk_logs_alike(tmp_path: Path) -> None:
    fast, pure = _twin_brokers((tmp_path / "fast", tmp_path / "pure"))
    idempotent = [{**_COMMON, "producer": (1000, 0, seq)} for seq in (0, 1, 1, 3, 2, 2)]
    # The duplicates and the out-of-order sequence 3 are the handler's to answer.
    assert _agree(fast, pure, [_COMMON] * 5 + idempotent) == 5 + 3


# An idempotent producer's steps: its next batch (mostly), a duplicate of one of its last
# batches, a gap, a sequence gone back, a new epoch from 0 or not, an older epoch.
_idempotent_steps = st.lists(
    st.tuples(
        st.sampled_from([1000, 1001]),
        st.sampled_from([0, 0, 1]),
        st.sampled_from(["next"] * 8 + ["duplicate", "gap", "back", "bump", "bump late", "fence"]),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=30,
)


def _idempotent_requests(steps: list[tuple[int, int, str, int]]) -> list[dict[str, Any]]:
    """Produce requests of idempotent producers, the sequences from a model of each producer
    on each partition (its epoch, next sequence and batches sent)."""
    epochs: dict[tuple[int, int], int] = {}
    following: dict[tuple[int, int], int] = {}
    sent: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    requests = []
    for producer_id, partition, kind, count in steps:
        key = (producer_id, partition)
        epoch, sequence, history = (
            epochs.get(key, 0),
            following.get(key, 0),
            sent.setdefault(key, []),
        )
        if kind == "duplicate" and history:
            epoch, sequence, count = history[-1 - count % len(history)]
        elif kind == "gap":
            sequence += 2
        elif kind == "back":
            sequence = max(0, sequence - 2)
        elif kind == "bump":
            epoch, sequence = epoch + 1, 0
            epochs[key] = epoch
        elif kind == "bump late":
            epoch, sequence = epoch + 1, 2
        elif kind == "fence":
            epoch -= 1
        if kind in ("next", "bump"):
            following[key] = sequence + count
            history.append((epoch, sequence, count))
        records = [(None, b"v" * 10, [], 0)] * count
        requests.append(
            {
                **_COMMON,
                "partition": partition,
                "producer": (producer_id, epoch, sequence),
                "records": records,
            }
        )
    return requests


def _reload_producer_state(broker: Broker) -> None:
    """The producer state written to snapshots and loaded again from them and the log."""
    broker.producers.close()
    for name in TOPICS:
        for index in range(PARTITIONS):
            partition = broker.cluster.partition(name, index)
            assert partition is not None
            broker.producers.reload(partition)


def _snapshots(data_dir: Path) -> list[tuple[str, bytes]]:
    return sorted(
        (str(path.relative_to(data_dir)), path.read_bytes())
        for path in data_dir.rglob("*.snapshot")
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_idempotent_steps, min_size=1, max_size=3))
def test_idempotent_producers_alike(rounds: list[list[tuple[int, int, str, int]]]) -> None:
    """Idempotent producers' batches, mostly each the next in sequence (the fast path's
    `next_in_sequence`), with duplicates, gaps and epoch changes (the handler's), on disk,
    the producer state reloaded from snapshots between rounds: the same answers, logs,
    producer state and snapshot files."""
    with tempfile.TemporaryDirectory() as tmp:
        dirs = (Path(tmp) / "fast", Path(tmp) / "pure")
        fast, pure = _twin_brokers(dirs)
        for steps in rounds:
            _agree(fast, pure, _idempotent_requests(steps))
            for broker in (fast, pure):
                _reload_producer_state(broker)
            assert _state(fast) == _state(pure)
            assert [name for name, _ in _snapshots(dirs[0])] == [
                name for name, _ in _snapshots(dirs[1])
            ]
            assert [data for _, data in _snapshots(dirs[0])] == [
                data for _, data in _snapshots(dirs[1])
            ]


def test_idempotent_batches_in_sequence_are_taken_natively(tmp_path: Path) -> None:
    """All are answered natively: the first batch of a producer the broker does not know
    after `check_append`, each next one in sequence without it."""
    fast, pure = _twin_brokers((tmp_path / "fast", tmp_path / "pure"))
    requests = _idempotent_requests([(1000, 0, "next", 1)] * 6)
    with mock.patch.object(
        fast.producers, "check_append", wraps=fast.producers.check_append
    ) as check:
        assert _agree(fast, pure, requests) == 6
    assert check.call_count == 1


def test_the_common_request_is_taken_natively() -> None:
    fast, _pure = _twin_brokers(None)
    frame = _frame({**_COMMON, "partition": 1, "records": [(b"k", b"v", [], 0)]}, fast, 5)
    with _native(native.plain_produce):
        answered = produce_native.answer(fast, memoryview(bytearray(frame[4:])))
    assert isinstance(answered, bytearray)
    assert struct.unpack_from(">ii", answered) == (len(answered) - 4, 5)


def test_a_recreated_topic_is_found_again() -> None:
    """The path remembers topics and partitions per request key: a topic deleted and created
    again under its name is the new one (by name, and by its new id), and the old id is
    the handler's to answer (UNKNOWN_TOPIC_ID)."""
    fast, pure = _twin_brokers(None)
    requests = [{**_COMMON, "version": version} for version in (9, 13)]
    assert _agree(fast, pure, requests) == 2
    old_id = fast.cluster.topics["plain"].topic_id
    new_id = uuid.uuid4()
    for broker in (fast, pure):
        broker.cluster.delete_topic("plain")
        with mock.patch("uuid.uuid4", return_value=new_id):
            broker.cluster.create_topic("plain", PARTITIONS, TOPICS["plain"])
    assert _agree(fast, pure, requests) == 2
    plain = fast.cluster.partition("plain", 0)
    assert plain is not None and plain.log.log_end_offset == 2
    with mock.patch.object(fast.cluster.topics["plain"], "topic_id", old_id):
        stale = bytearray(_frame(requests[1], fast, 9)[4:])
    with _native(native.plain_produce):
        assert produce_native.answer(fast, memoryview(stale)) is produce_native.UNHANDLED


_SOLO, _ = _twin_brokers(None)


@settings(max_examples=300, deadline=None)
@given(_requests, st.data())
def test_plain_produce_takes_only_what_the_pure_path_accepts(
    request: dict[str, Any], data: Any
) -> None:
    """Mutated frames: whatever `plain_produce` takes, the pure decoder and validator take
    too, with the same fields."""
    frame = bytearray(_frame(request, _SOLO, 7)[4:])
    for _ in range(data.draw(st.integers(0, 3))):
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    plain = native.plain_produce(memoryview(frame))
    if plain is None:
        return
    header, pos = decode_header(memoryview(frame))
    decoded = decode_produce_request(memoryview(frame), pos, header.api_version)
    assert decoded is not None and decoded[1] == len(frame)
    body = decoded[0]
    ((topic,),) = [body.topic_data]
    ((partition,),) = [topic.partition_data]
    name = topic.name if header.api_version < 13 else topic.topic_id.bytes
    assert body.transactional_id is None
    assert plain[:5] == (
        header.api_version,
        header.correlation_id,
        body.acks,
        name,
        partition.index,
    )
    start, stop = plain[5:7]
    assert bytes(frame[start:stop]) == bytes(partition.records)
    (batch,) = validate_produce_records(
        bytes(partition.records), ValidationConfig(), 0, produce_version=header.api_version
    )
    fields = (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.record_count)
    assert plain[9:13] == fields
    assert not batch.is_transactional
    assert batch.max_timestamp == max(-1, plain[7] + plain[14])


# The C CRC-32C sums rounds of three 8 KiB stripes at once, then of three 1 KiB stripes, then
# the rest byte by byte: lengths about each boundary.
_ROUNDS = (3 * 1024, 2 * 3 * 1024, 3 * 8192, 3 * 8192 + 3 * 1024, 2 * 3 * 8192 + 3 * 1024)


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(_ROUNDS).flatmap(lambda length: st.integers(length - 80, length + 80)),
    st.integers(0, 2**32),
)
def test_large_batches_crc_checked_across_stripes(value_size: int, seed: int) -> None:
    """Batches about as long as one or more CRC stripes: `plain_produce` takes the intact
    frame and refuses it with any byte of the checked part of its batch changed, as the
    pure validator does."""
    random = Random(seed)
    request = {**_COMMON, "records": [(None, random.randbytes(value_size), [], 0)]}
    frame = bytearray(_frame(request, _SOLO, 7)[4:])
    plain = native.plain_produce(memoryview(frame))
    assert plain is not None
    start, stop = plain[5:7]
    changed = random.randrange(start + 21, stop)  # the CRC covers the batch from attributes on
    frame[changed] ^= 1 << random.randrange(8)
    assert native.plain_produce(memoryview(frame)) is None
    with pytest.raises(InvalidRecords, match="computed crc"):
        validate_produce_records(bytes(frame[start:stop]), ValidationConfig(), 0)


def test_not_leader_and_replicated_acks_all_are_the_handlers(tmp_path: Path) -> None:
    """In a cluster: a partition led elsewhere, and acks=all on a replicated partition (min
    ISR, waiting for the followers), are answered by the handler (tests/replication and
    tests/server/test_produce_v13.py check those answers)."""
    with KafkaCluster(nodes=3, data_dir=tmp_path / "data") as cluster:
        cluster.create_topic("t", config={"min.insync.replicas": 2}, replication_factor=3)
        leader = cluster.leader("t", 0)
        other = next(node for node in cluster.live_nodes if node != leader)
        request = {**_COMMON, "topic": "t"}
        for node, acks in ((other, 1), (other, -1), (leader, -1)):
            broker = cluster.node(node)
            frame = bytearray(_frame({**request, "acks": acks}, broker, 1)[4:])
            with _native(native.plain_produce):
                assert produce_native.answer(broker, memoryview(frame)) is produce_native.UNHANDLED


_int64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(9, 13),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    name=st.text(min_size=1, max_size=30),
    topic_id=st.uuids(),
    index=st.integers(0, 2**31 - 1),
    base_offset=_int64,
    log_start_offset=_int64,
)
def test_produce_answer_is_the_encoders(
    version: int,
    correlation_id: int,
    name: str,
    topic_id: uuid.UUID,
    index: int,
    base_offset: int,
    log_start_offset: int,
) -> None:
    """`produce_answer` patches the template into exactly the frame the encoder makes."""
    topic_key: str | bytes = topic_id.bytes if version >= 13 else name
    no_error = produce_native.ErrorCode.NO_ERROR
    template = bytes(produce_native._encoded(version, 0, topic_key, index, no_error, 0, -1, None))
    expected = produce_native._encoded(
        version, correlation_id, topic_key, index, no_error, base_offset, log_start_offset, None
    )
    built = native.produce_answer(template, correlation_id, base_offset, log_start_offset)
    assert isinstance(built, bytearray) and built == expected
