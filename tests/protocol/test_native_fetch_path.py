"""Fetch's native fast path (`handlers/fetch_native.py`) against the pure handler: the same
request frames sent to two brokers alike (same topics, ids and records), one through
`dispatch` with the fast path and one with it off, give identical answers (bytes),
whichever of the two answers each request.

The generated requests mix the common case (a consumer's sessionless fetch) with what the
fast path hands back (versions below 12, fetch sessions, follower replica ids, forgotten
topics) and with what the handler's own functions answer inside it (unknown topics and
partitions, offsets out of range, leader epochs, size limits, read_committed); long polls
are compared when they time out and when an append ends them, and a cancelled one leaves no
listener behind. Mutated frames check that `plain_fetch` takes only what the pure decoder
accepts, with the same fields, and the one-partition answer built in C from its template is
`fetch_frame`'s for any offsets and records' size. The native run uses the built extension
even under MINIBROKER_PURE_PYTHON=1; skipped only when it was not built."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.cluster.fetch_sessions import Requested, Wanted
from minibroker.config import BrokerConfig
from minibroker.handlers import fetch_native
from minibroker.handlers.fetch import PartitionRead, fetch_frame
from minibroker.log.blob import FileRegion
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame, RequestHeader, decode_body, decode_header
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.server.broker import Broker
from minibroker.server.context import RequestContext, Session
from minibroker.server.dispatch import dispatch
from tests.wire import encode_request, request_frame

native = pytest.importorskip("minibroker.protocol._accel")

TOPICS = ("a", "b")
PARTITIONS = 2
BATCHES = 3  # one-message batches in each partition, then a large one
LARGE = 70_000


def _broker(data_dir: Path | None) -> Broker:
    settings_ = {"listeners": "PLAINTEXT://127.0.0.1:0"}
    if data_dir is not None:
        settings_["log.dirs"] = str(data_dir)
    return Broker(BrokerConfig(settings_), in_memory=data_dir is None)


def _append(broker: Broker, topic: str, index: int, value: bytes) -> None:
    partition = broker.cluster.partition(topic, index)
    assert partition is not None
    batch = bytearray(build_batch([(None, value, [], 1_700_000_000_000)]))
    partition.log.append(batch, partition.leader_epoch, 1_700_000_000_000)
    partition.notify_appended()


def _twin_brokers(data_dirs: tuple[Path, Path] | None = None) -> tuple[Broker, Broker]:
    """Two brokers with the same topics (the same ids) and records; partition 1 of each
    topic is left empty."""
    fast, pure = (_broker(None if data_dirs is None else d) for d in data_dirs or (None, None))
    for name in TOPICS:
        topic_id = uuid.uuid4()
        for broker in (fast, pure):
            with mock.patch("uuid.uuid4", return_value=topic_id):
                broker.cluster.create_topic(name, PARTITIONS, {})
            for n in range(BATCHES):
                _append(broker, name, 0, b"v%d" % n * 20)
            _append(broker, name, 0, b"x" * LARGE)  # on disk: served as a file region
    return fast, pure


def _native(plain_fetch: Any) -> Any:
    return mock.patch.object(fetch_native, "native_plain_fetch", plain_fetch)


def _bytes(answered: Any) -> bytes | None:
    if answered is None or isinstance(answered, bytearray):
        return answered if answered is None else bytes(answered)
    assert isinstance(answered, EncodedFrame)
    parts = []
    for part in answered.parts:
        if isinstance(part, FileRegion):
            parts.append(part.read())
            part.close()
        else:
            parts.append(bytes(part))  # type: ignore[call-overload]
    return b"".join(parts)


async def _answer(broker: Broker, frame: bytes) -> bytes | None:
    listener = broker.config.listeners[0]
    return _bytes(await dispatch(broker, bytearray(frame[4:]), listener, Session()))


_partitions = st.lists(
    st.fixed_dictionaries(
        {
            "topic": st.sampled_from([*TOPICS, "missing"]),
            "partition": st.sampled_from([0, 0, 1, 5]),
            "fetch_offset": st.sampled_from([0, 1, BATCHES, BATCHES + 1, BATCHES + 2, -1]),
            "partition_max_bytes": st.sampled_from([1, 100, 1 << 20, 0]),
            "current_leader_epoch": st.sampled_from([-1, -1, 0, 3]),
        }
    ),
    min_size=0,
    max_size=4,
)
_requests = st.fixed_dictionaries(
    {
        "version": st.sampled_from([4, 11, 12, 13, 15, 16, 16, 17, 18]),
        "session": st.sampled_from([(0, -1), (0, -1), (0, -1), (7, -1), (7, 2)]),
        "replica_id": st.sampled_from([-1, -1, -1, 2]),
        "isolation_level": st.sampled_from([0, 1]),
        "max_bytes": st.sampled_from([1, 200, 52_428_800]),
        "min_bytes": st.sampled_from([0, 1]),
        "forgotten": st.sampled_from([False, False, False, True]),
        "partitions": _partitions,
    }
)


def _frame(
    request: dict[str, Any], broker: Broker, correlation_id: int, max_wait_ms: int = 0
) -> bytes:
    version = request["version"]
    session_id, epoch = request["session"]
    topics: dict[str, list[dict[str, Any]]] = {}
    for wanted in request["partitions"]:
        fields = {key: value for key, value in wanted.items() if key != "topic"}
        topics.setdefault(wanted["topic"], []).append(fields)
    body = encode_request(
        ApiKey.Fetch,
        version,
        replica_id=request["replica_id"],
        max_wait_ms=max_wait_ms,
        min_bytes=request["min_bytes"],
        max_bytes=request["max_bytes"],
        isolation_level=request["isolation_level"],
        session_id=session_id,
        session_epoch=epoch,
        topics=[
            {"topic": name, "topic_id": _topic_id(broker, name), "partitions": partitions}
            for name, partitions in topics.items()
        ],
        forgotten_topics_data=[
            {"topic": "a", "topic_id": _topic_id(broker, "a"), "partitions": [0]}
        ]
        if request["forgotten"]
        else [],
        rack_id="",
    )
    return request_frame(ApiKey.Fetch, version, correlation_id, body)


def _topic_id(broker: Broker, name: str) -> uuid.UUID:
    topic = broker.cluster.topics.get(name)
    return uuid.UUID(int=7) if topic is None else topic.topic_id


async def _agree(fast: Broker, pure: Broker, frames: list[bytes]) -> int:
    """Sends the frames to both; the number the fast path answered itself."""
    real_answer = fetch_native.answer
    taken = []

    def answer(*args: Any) -> Any:
        answered = real_answer(*args)
        taken.append(answered is not None)
        return answered

    for frame in frames:
        with _native(native.plain_fetch), mock.patch.object(fetch_native, "answer", answer):
            got = await _answer(fast, frame)
        with _native(None):
            expected = await _answer(pure, frame)
        assert got == expected
    return sum(taken)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_requests, min_size=1, max_size=8))
def test_both_paths_answer_alike(requests: list[dict[str, Any]]) -> None:
    fast, pure = _twin_brokers()
    frames = [_frame(request, fast, n) for n, request in enumerate(requests)]
    asyncio.run(_agree(fast, pure, frames))


_COMMON: dict[str, Any] = {
    "version": 16,
    "session": (0, -1),
    "replica_id": -1,
    "isolation_level": 0,
    "max_bytes": 52_428_800,
    "min_bytes": 1,
    "forgotten": False,
    "partitions": [
        {
            "topic": "a",
            "partition": 0,
            "fetch_offset": 1,
            "partition_max_bytes": 1,
            "current_leader_epoch": -1,
        }
    ],
}


def test_on_disk_logs_alike(tmp_path: Path) -> None:
    """Records served as file regions, at every offset and with both isolation levels."""
    fast, pure = _twin_brokers((tmp_path / "fast", tmp_path / "pure"))
    requests = [
        {**_COMMON, "version": version, "isolation_level": isolation, "partitions": [wanted]}
        for version in (12, 16)
        for isolation in (0, 1)
        for offset in range(BATCHES + 2)
        for wanted in [{**_COMMON["partitions"][0], "fetch_offset": offset}]
    ]
    frames = [_frame(request, fast, n) for n, request in enumerate(requests)]
    assert asyncio.run(_agree(fast, pure, frames)) == len(frames)


def test_long_polls_alike() -> None:
    """A long poll that times out, and one that an append ends, answered alike."""
    fast, pure = _twin_brokers()
    empty = {**_COMMON["partitions"][0], "partition": 1, "fetch_offset": 0}
    request = {**_COMMON, "partitions": [empty]}

    async def poll(broker: Broker, append_after: float | None) -> tuple[bytes | None, float]:
        frame = _frame(request, broker, 3, max_wait_ms=300 if append_after else 30)
        started = time.monotonic()
        answering = asyncio.ensure_future(_answer(broker, frame))
        if append_after is not None:
            await asyncio.sleep(append_after)
            _append(broker, "a", 1, b"late")
        answered = await answering
        return answered, time.monotonic() - started

    async def both(append_after: float | None) -> list[tuple[bytes | None, float]]:
        with _native(native.plain_fetch):
            got = await poll(fast, append_after)
        with _native(None):
            expected = await poll(pure, append_after)
        return [got, expected]

    (timed_out, waited), (expected, _) = asyncio.run(both(None))
    assert timed_out == expected and waited >= 0.03
    (woken, waited), (expected, _) = asyncio.run(both(0.05))
    assert woken == expected and b"late" in (woken or b"") and waited < 0.3


def test_a_cancelled_long_poll_stops_listening() -> None:
    fast, _pure = _twin_brokers()
    empty = {**_COMMON["partitions"][0], "partition": 1, "fetch_offset": 0}
    frame = _frame({**_COMMON, "partitions": [empty]}, fast, 1, max_wait_ms=10_000)
    partition = fast.cluster.partition("a", 1)
    assert partition is not None

    async def cancelled() -> None:
        with _native(native.plain_fetch):
            answering = asyncio.ensure_future(_answer(fast, frame))
            await asyncio.sleep(0.01)
            assert len(partition.append_listeners) == 1
            answering.cancel()
            with pytest.raises(asyncio.CancelledError):
                await answering

    asyncio.run(cancelled())
    assert not partition.append_listeners


def test_the_common_request_is_taken_natively() -> None:
    fast, _pure = _twin_brokers()
    frame = bytearray(_frame(_COMMON, fast, 5)[4:])
    listener = fast.config.listeners[0]

    async def answer() -> Any:
        loop = asyncio.get_running_loop()
        return fetch_native.answer(fast, memoryview(frame), listener, Session(), loop)

    with _native(native.plain_fetch):
        answered = asyncio.run(answer())
    assert isinstance(answered, bytearray)  # from the one-partition template
    assert b"v1" * 20 in answered


def test_a_topic_recreated_under_its_name_is_known_by_its_new_id_only() -> None:
    """The fast path remembers topics by id: one deleted and created again under the same
    name answers UNKNOWN_TOPIC_ID by its old id, as the handler does."""
    fast, pure = _twin_brokers()
    old_frame = _frame(_COMMON, fast, 1)
    recreated_id = uuid.uuid4()

    async def fetches() -> None:
        assert await _agree(fast, pure, [old_frame]) == 1
        for broker in (fast, pure):
            broker.cluster.delete_topic("a")
            with mock.patch("uuid.uuid4", return_value=recreated_id):
                broker.cluster.create_topic("a", PARTITIONS, {})
            _append(broker, "a", 0, b"new")
        new_frame = _frame(
            {**_COMMON, "partitions": [{**_COMMON["partitions"][0], "fetch_offset": 0}]}, fast, 2
        )
        assert await _agree(fast, pure, [old_frame, new_frame]) == 2
        old_answer = await _answer(fast, old_frame)
        assert old_answer is not None and b"new" not in old_answer
        assert b"new" in (await _answer(fast, new_frame) or b"")

    asyncio.run(fetches())


_SOLO, _ = _twin_brokers()


@settings(max_examples=300, deadline=None)
@given(_requests, st.data())
def test_plain_fetch_takes_only_what_the_pure_decoder_accepts(
    request: dict[str, Any], data: Any
) -> None:
    """Mutated frames: whatever `plain_fetch` takes, the pure decoder takes too, with the
    same fields, and it is a consumer's sessionless fetch."""
    frame = bytearray(_frame(request, _SOLO, 7)[4:])
    for _ in range(data.draw(st.integers(0, 3))):
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    plain = native.plain_fetch(memoryview(frame))
    if plain is None:
        return
    header, pos = decode_header(memoryview(frame))
    body = decode_body(ApiKey.Fetch, header.api_version, memoryview(frame), pos)
    version = header.api_version
    replica_id = body.replica_id if version < 15 else body.replica_state
    assert (replica_id, body.session_id, body.session_epoch) in ((-1, 0, -1), (None, 0, -1))
    assert not body.forgotten_topics_data
    assert plain[:7] == (
        version,
        header.correlation_id,
        header.client_id,
        body.max_wait_ms,
        body.min_bytes,
        body.max_bytes,
        body.isolation_level,
    )
    decoded = [
        (
            topic.topic if version < 13 else topic.topic_id.bytes,
            p.partition,
            p.current_leader_epoch,
            p.fetch_offset,
            p.partition_max_bytes,
            p.log_start_offset,
            p.last_fetched_epoch,
        )
        for topic in body.topics
        for p in topic.partitions
    ]
    assert plain[7] == decoded


_int64 = st.integers(-(2**63), 2**63 - 1)
# compact lengths of one, two and three bytes
_records = st.binary(max_size=300) | st.binary(min_size=16_370, max_size=16_400)


@settings(max_examples=200, deadline=None)
@given(
    version=st.integers(12, 18),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    index=st.integers(0, PARTITIONS - 1),
    offsets=st.tuples(_int64, _int64, _int64),
    committed=st.booleans(),
    records=_records,
)
def test_one_partition_answer_is_the_handlers(
    version: int,
    correlation_id: int,
    index: int,
    offsets: tuple[int, int, int],
    committed: bool,
    records: bytes,
) -> None:
    """The native path's one-partition answer (its template patched by `fetch_answer`) is
    the handler's `fetch_frame` to the byte, whatever the offsets and records' size."""
    broker = _broker(None)
    broker.cluster.create_topic("t", PARTITIONS, {})
    topic = broker.cluster.topics["t"]
    topic_key: uuid.UUID | str = topic.topic_id if version >= 13 else "t"
    header = RequestHeader(ApiKey.Fetch, version, correlation_id, "client")
    ctx = RequestContext(broker, header, broker.config.listeners[0], Session())
    read = PartitionRead(Requested((topic_key, index), "t", Wanted(0, 1 << 20)))
    read.high_watermark, read.last_stable_offset, read.log_start_offset = offsets
    read.records = records
    read.aborted_transactions = [] if committed else None
    native_answer = fetch_native._single_partition_frame(ctx, read, records)
    assert isinstance(native_answer, bytearray)
    assert bytes(native_answer) == _bytes(fetch_frame(ctx, ErrorCode.NO_ERROR, 0, [read]))


# ---- the lean read of one partition (`_lean_answer`) and its long poll's deadline ----------

_states = st.fixed_dictionaries(
    {
        "open_txn_at": st.sampled_from([None, None, 0, 1, BATCHES]),
        "aborted": st.sampled_from([None, (0, 1), (1, 2), (BATCHES, BATCHES)]),
        "leader_epoch": st.sampled_from([0, 0, 3]),
        "log_start": st.sampled_from([0, 0, 1, BATCHES]),
    }
)
_one_partition = st.fixed_dictionaries(
    {
        "topic": st.sampled_from(["a", "a", "missing"]),
        "partition": st.sampled_from([0, 0, 0, 1, 5]),
        "fetch_offset": st.sampled_from([0, 1, 2, BATCHES, BATCHES + 1, BATCHES + 2, -1]),
        "partition_max_bytes": st.sampled_from([1, 100, 1 << 20, 0]),
        "current_leader_epoch": st.sampled_from([-1, -1, 0, 3, 5]),
    }
)


def _set_state(broker: Broker, state: dict[str, Any]) -> None:
    """The same partition state in both twins: an open transaction, an aborted one in the
    transaction index, a leader epoch, a log start offset."""
    partition = broker.cluster.partition("a", 0)
    assert partition is not None
    if state["open_txn_at"] is not None:
        partition.ongoing_txns.begin(42, state["open_txn_at"])
    if state["aborted"] is not None:
        first, last = state["aborted"]
        partition.log.append_aborted_txn(43, first, last, first)
    partition.leader_epoch = state["leader_epoch"]
    if state["log_start"]:
        partition.delete_records_before(state["log_start"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _states,
    st.lists(
        st.fixed_dictionaries(
            {
                "version": st.sampled_from([12, 13, 16, 18]),
                "isolation_level": st.sampled_from([0, 1]),
                "max_bytes": st.sampled_from([0, 1, 200, 52_428_800]),
                "min_bytes": st.sampled_from([0, 1, 100_000]),
                "wanted": _one_partition,
            }
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_one_partition_fetches_alike_in_any_state(
    state: dict[str, Any], requests: list[dict[str, Any]]
) -> None:
    """One-partition fetches (what the lean read answers, or hands to `collect`) under open
    and aborted transactions, leader epochs and a moved log start: the handler's bytes."""
    fast, pure = _twin_brokers()
    for broker in (fast, pure):
        _set_state(broker, state)
    frames = [
        _frame({**_COMMON, **request, "partitions": [request["wanted"]]}, fast, n)
        for n, request in enumerate(requests)
    ]
    asyncio.run(_agree(fast, pure, frames))


def _poll_both(
    change: Any, request: dict[str, Any], max_wait_ms: int = 40
) -> tuple[bytes | None, bytes | None]:
    """The same long poll on both twins, `change(broker)` made to each while it waits."""
    fast, pure = _twin_brokers()

    async def poll(broker: Broker) -> bytes | None:
        frame = _frame(request, broker, 9, max_wait_ms=max_wait_ms)
        answering = asyncio.ensure_future(_answer(broker, frame))
        await asyncio.sleep(0.01)
        change(broker)
        return await answering

    async def both() -> tuple[bytes | None, bytes | None]:
        with _native(native.plain_fetch):
            got = await poll(fast)
        with _native(None):
            expected = await poll(pure)
        return got, expected

    return asyncio.run(both())


_EMPTY_POLL = {
    **_COMMON,
    "partitions": [{**_COMMON["partitions"][0], "partition": 1, "fetch_offset": 0}],
}


def _epoch_bumped_unnotified(broker: Broker) -> None:
    partition = broker.cluster.partition("a", 1)
    assert partition is not None
    partition.leader_epoch += 1  # no notification: the deadline's read must see it


@pytest.mark.parametrize(
    "change",
    [
        lambda broker: broker.cluster.delete_topic("a"),
        _epoch_bumped_unnotified,
        lambda broker: None,
    ],
    ids=["topic deleted", "leader epoch bumped without notification", "nothing"],
)
@pytest.mark.parametrize("leader_epoch", [-1, 0])
def test_a_waiting_lean_fetch_answers_as_the_handler(change: Any, leader_epoch: int) -> None:
    wanted = {**_EMPTY_POLL["partitions"][0], "current_leader_epoch": leader_epoch}
    got, expected = _poll_both(change, {**_EMPTY_POLL, "partitions": [wanted]})
    assert got == expected and got is not None


def test_a_long_poll_for_more_than_there_is_answers_as_the_handler() -> None:
    """Records read, but fewer than `min_bytes`: read again at the deadline, as the
    handler's long poll does, an append meanwhile included."""
    request = {**_COMMON, "min_bytes": 100_000}

    def appended(broker: Broker) -> None:
        _append(broker, "a", 0, b"late")

    for change in (appended, lambda broker: None):
        got, expected = _poll_both(change, request)
        assert got == expected and b"v1" * 20 in (got or b"")


def test_a_lean_long_poll_reads_again_only_after_a_change() -> None:
    """At its deadline a lean long poll answers from its first read when nothing changed,
    and reads again when its partition was notified meanwhile (once on the notification,
    once at the deadline)."""
    fast, _pure = _twin_brokers()
    frame = _frame(_EMPTY_POLL, fast, 9, max_wait_ms=20)
    partition = fast.cluster.partition("a", 1)
    assert partition is not None
    reads = []
    real_collect = fetch_native.collect

    def collect(*args: Any) -> Any:
        reads.append(args)
        return real_collect(*args)

    async def poll(notify: bool) -> bytes | None:
        answering = asyncio.ensure_future(_answer(fast, frame))
        await asyncio.sleep(0.005)
        if notify:
            partition.notify_appended()  # a change that leaves nothing to read
        return await answering

    async def both() -> tuple[bytes | None, bytes | None]:
        with _native(native.plain_fetch), mock.patch.object(fetch_native, "collect", collect):
            quiet = await poll(False)
            assert not reads
            notified = await poll(True)
        return quiet, notified

    quiet, notified = asyncio.run(both())
    assert len(reads) == 2 and quiet == notified


@pytest.mark.parametrize("isolation_level", [0, 1])
def test_a_log_failing_as_it_is_read_answers_as_the_handler(isolation_level: int) -> None:
    """KAFKA_STORAGE_ERROR with the offsets read before the failure, from either path."""
    fast, pure = _twin_brokers()
    failing = OSError("the disk went away")
    patches = []
    for broker in (fast, pure):
        partition = broker.cluster.partition("a", 0)
        assert partition is not None
        method = "read_batches" if isolation_level == 0 else "collect_aborted_txns"
        patches.append(mock.patch.object(partition.log, method, side_effect=failing))
    request = {**_COMMON, "isolation_level": isolation_level}
    with patches[0], patches[1]:
        assert asyncio.run(_agree(fast, pure, [_frame(request, fast, 4)])) == 1
