"""Fetch's native fast path: a consumer's sessionless fetch without its decoding, its session,
and the task its long poll would need.

`plain_fetch` (minibroker/protocol/_accel.c) reads the whole request frame and answers only
for the common shape: Fetch v12-18, replica id -1 (no ReplicaState), session id 0 and epoch
-1 (what librdkafka sends; KIP-227 sessions stay with the handler), no forgotten topics, no
tagged fields. Such a fetch is served by the handler's own functions (`handlers/fetch.py`:
`collect` reads the partitions, `fetch_frame` encodes the answer), so its answer is the
handler's to the byte; what this path leaves out is what cannot apply to it: the request
decoding, the fetch session (a sessionless context answers every partition), authorization
and quotas (`dispatch` calls `answer` only when neither is configured), down-conversion and
zstd checks (below v10). The answer to a fetch of one partition is framed from a cached
template of the same encoder's bytes, as the produce path's answers are, in one C call
(`fetch_answer`). A fetch of one partition in the common state (a known topic's partition led
here and online, the leader epoch current, the offset within the log, records in memory, no
aborted transaction) is read without `collect` (`_lean_answer`, `_read_partition`'s steps
inline, no `PartitionRead`); anything else goes to `collect`.

A fetch that must wait is a `PendingFetch` rather than a task: it listens to its partitions'
appends as the handler's long poll does, and its deadline (the handler's: `max_wait_ms` from
after the first read) is in `Deadlines`, one timer per millisecond in which any wait ends,
for all the waiting fetches of a loop. On an append it reads again in the next loop iteration
(as the handler's task would run then), and answers once `min_bytes` are there, a partition
has an error, or the deadline has passed; at the deadline it reads once more and answers.
A lean long poll whose partition was not notified since its read (every change a fetch could
see notifies: appends, offsets moving, leader changes, deletion, the log going offline) and
is still the same partition, log and leader epoch answers at its deadline from that read.

MINIBROKER_PURE_PYTHON=1 (or no built accelerator) turns the path off.
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeAlias

from minibroker.cluster.fetch_sessions import Requested, Wanted
from minibroker.cluster.state import Partition
from minibroker.handlers.fetch import (
    READ_COMMITTED,
    PartitionRead,
    collect,
    fetch_frame,
    poll_min_bytes,
)
from minibroker.log import OffsetOutOfRange
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame, RequestHeader
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import FetchedPartition, FetchedTopic, encode_fetch_response
from minibroker.records.accel import pure_python_forced
from minibroker.server.context import NO_ENTRY_ERRORS, RequestContext, Session

if TYPE_CHECKING:
    from minibroker.cluster.state import Cluster, Topic
    from minibroker.config import Listener
    from minibroker.log.base import PartitionLog
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

_FIRST_TOPIC_ID_VERSION = 13
_CONSUMER = -1  # the replica id of a consumer's fetch
_ZERO_ID = uuid.UUID(int=0)
# Enum members from the module: read from their class, each is a metaclass lookup (~0.3 µs).
_FETCH = ApiKey.Fetch
_NO_ERROR = ErrorCode.NO_ERROR
_NO_RECORDS = b""

PlainPartition: TypeAlias = tuple["str | bytes", int, int, int, int, int, int]
"""(topic name, or id bytes from v13; partition; current leader epoch; fetch offset;
partition max bytes; log start offset; last fetched epoch)"""
Plain: TypeAlias = tuple[int, int, str, int, int, int, int, list[PlainPartition]]
"""What `plain_fetch` answers: (version, correlation id, client id, max wait ms, min bytes,
max bytes, isolation level, the partitions in request order)."""
Answer: TypeAlias = "bytearray | EncodedFrame"


class PlainRequest(NamedTuple):
    """The request fields `handlers/fetch.py` reads, as the decoded request has them."""

    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int


Builder: TypeAlias = Callable[..., bytearray]


def _load() -> tuple[Callable[[memoryview], Plain | None] | None, Builder | None]:
    """The request walk (None when the pure path is forced or the accelerator not built) and
    the answer builder, a one-partition answer from its template in one call (only ever
    called once the walk took a request; the encoder is its reference)."""
    try:
        from minibroker.protocol._accel import fetch_answer, plain_fetch
    except ImportError:
        return None, None
    return (None if pure_python_forced() else plain_fetch), fetch_answer


native_plain_fetch, _fetch_answer = _load()


def answer(
    broker: Broker,
    frame: memoryview,
    listener: Listener,
    session: Session,
    loop: asyncio.AbstractEventLoop,
) -> Answer | PendingFetch | None:
    """The answer frame, or the long poll still waiting for it; None when this path does not
    take the request."""
    plain = None if native_plain_fetch is None else native_plain_fetch(frame)
    if plain is None:
        return None
    if len(plain[7]) == 1:
        lean = _lean_answer(broker, plain, listener, session, loop)
        if lean is not None:
            return lean
    version, correlation_id, client_id, max_wait_ms = plain[:4]
    # The named tuples made by `tuple.__new__`: their own `__new__` is a Python function.
    header = tuple.__new__(RequestHeader, (_FETCH, version, correlation_id, client_id))
    ctx = tuple.__new__(RequestContext, (broker, header, listener, session, NO_ENTRY_ERRORS))
    request = tuple.__new__(PlainRequest, plain[3:7])
    items = _requested(broker.cluster, version, plain[7])
    reads, total, has_error = collect(ctx, request, items, _CONSUMER)
    if has_error or max_wait_ms <= 0:
        return _frame(ctx, reads)
    min_bytes = poll_min_bytes(ctx, request)
    partitions = []
    for read in reads:
        if read.partition is not None:
            partitions.append(read.partition)
    if total >= min_bytes or not partitions:
        return _frame(ctx, reads)
    for read in reads:
        if read.records:
            read.drop_records()
    deadline = loop.time() + max_wait_ms / 1000
    return PendingFetch(ctx, request, items, partitions, min_bytes, deadline, loop)


class Lean(NamedTuple):
    """What the lean read of a one-partition fetch found: the partition as the handler would
    name it, and the offsets it would answer (its fetch offset at the readable end: nothing
    to read). A long poll answers from it at its deadline when nothing was appended since
    (no notification, the same log and leader epoch)."""

    topic_key: uuid.UUID | str
    name: str
    partition_index: int
    wanted: PlainPartition
    committed: bool
    partition: Partition
    log: object
    leader_epoch: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


def _lean_answer(
    broker: Broker,
    plain: Plain,
    listener: Listener,
    session: Session,
    loop: asyncio.AbstractEventLoop,
) -> Answer | PendingFetch | None:
    """The handler's answer to a one-partition fetch, read without its `collect`: only for a
    known topic's partition led here (not replicated), its log online, the leader epoch
    unchecked or current, the fetch offset within the log, and records that come back in
    memory with no aborted transaction. None for anything else: `collect` answers it (the
    lean read having changed nothing). `_read_partition` is the specification of each test."""
    version, correlation_id, _client_id, max_wait_ms, min_bytes, max_bytes, isolation = plain[:7]
    wanted = plain[7][0]
    topic_ref, index, leader_epoch, offset, partition_max_bytes = wanted[:5]
    cluster = broker.cluster
    if version >= _FIRST_TOPIC_ID_VERSION:
        assert isinstance(topic_ref, bytes)
        topic = cluster.topics_by_id_bytes.get(topic_ref)
        if topic is None:
            return None
        topic_key: uuid.UUID | str = topic.topic_id
    else:
        assert isinstance(topic_ref, str)
        topic = cluster.topics.get(topic_ref)
        if topic is None:
            return None
        topic_key = topic_ref
    partitions = topic.partitions
    if not 0 <= index < len(partitions):
        return None
    partition = partitions[index]
    if partition.replication is not None:
        return None
    nodes = broker.nodes
    if len(nodes.brokers) > 1 and nodes.leader_error(partition, broker.node_id) is not None:
        return None
    log = partition.log
    if log.storage_error is not None or (0 <= leader_epoch != partition.leader_epoch):
        return None
    high_watermark = log_end = log.log_end_offset
    log_start = log.log_start_offset
    last_stable = partition.ongoing_txns.last_stable_offset(high_watermark, log_start)
    committed = isolation == READ_COMMITTED
    upper = last_stable if committed else high_watermark
    if offset > log_end:
        return None
    offsets = (high_watermark, last_stable, log_start)
    records: bytes = _NO_RECORDS
    if not log_start <= offset >= upper:
        try:
            read = _lean_records(log, offset, partition_max_bytes, max_bytes, upper, committed)
        except OSError:  # the log went offline reading it
            return _storage_error(broker, plain, listener, session, (topic_key, topic), offsets)
        if read is None:
            return None
        records = read
    poll_bytes = min_bytes if min_bytes < max_bytes else max_bytes  # `poll_min_bytes`
    if max_wait_ms <= 0 or len(records) >= poll_bytes:
        return _framed(
            version, correlation_id, (topic_key, index), topic.name, committed, offsets, records
        )
    if records:  # fewer than `min_bytes`: the handler's long poll, which reads them again
        return None
    ctx, request = _context(broker, plain, listener, session)
    found = tuple.__new__(
        Lean,
        (
            topic_key,
            topic.name,
            index,
            wanted,
            committed,
            partition,
            log,
            partition.leader_epoch,
            high_watermark,
            last_stable,
            log_start,
        ),
    )
    deadline = loop.time() + max_wait_ms / 1000
    return PendingFetch(ctx, request, found, [partition], poll_bytes, deadline, loop)


def _context(
    broker: Broker, plain: Plain, listener: Listener, session: Session
) -> tuple[RequestContext, PlainRequest]:
    """The request's context and the fields the handler's functions read."""
    # The named tuples made by `tuple.__new__`: their own `__new__` is a Python function.
    header = tuple.__new__(RequestHeader, (_FETCH, plain[0], plain[1], plain[2]))
    ctx = tuple.__new__(RequestContext, (broker, header, listener, session, NO_ENTRY_ERRORS))
    return ctx, tuple.__new__(PlainRequest, plain[3:7])


def _storage_error(
    broker: Broker,
    plain: Plain,
    listener: Listener,
    session: Session,
    topic: tuple[uuid.UUID | str, Topic],
    offsets: tuple[int, int, int],
) -> Answer:
    """`_read_partition`'s answer when the log fails as it is read: KAFKA_STORAGE_ERROR with
    the offsets read before."""
    ctx, _request = _context(broker, plain, listener, session)
    (requested,) = _requested(broker.cluster, plain[0], plain[7])
    read = PartitionRead(requested, ErrorCode.KAFKA_STORAGE_ERROR)
    read.partition = topic[1].partitions[requested.key[1]]
    read.high_watermark, read.last_stable_offset, read.log_start_offset = offsets
    return _frame(ctx, [read])


def _lean_records(
    log: PartitionLog,
    offset: int,
    partition_max_bytes: int,
    max_bytes: int,
    upper: int,
    committed: bool,
) -> bytes | None:
    """`_read_partition`'s read, and `collect`'s aborted transactions for read_committed:
    the records in memory, or None when the handler must answer (an error, a file region,
    an aborted transaction)."""
    if max_bytes > 0:
        limit = partition_max_bytes if partition_max_bytes < max_bytes else max_bytes
    else:
        limit = 0
    try:
        found = log.read_batches(offset, limit if limit > 1 else 1, upper)
    except OffsetOutOfRange:
        return None
    if found is None:
        return _NO_RECORDS
    records = found.records
    if not isinstance(records, bytes):
        records.close()
        return None
    if committed and records and log.collect_aborted_txns(offset, found.next_offset):
        return None
    return records


def _frame(ctx: RequestContext, reads: list[PartitionRead]) -> Answer:
    """The handler's answer to a sessionless fetch: every partition read. One partition read
    without error, with its records in memory, is framed from a template."""
    if len(reads) == 1:
        read = reads[0]
        if (
            read.error == _NO_ERROR
            and not read.aborted_transactions
            and isinstance(read.records, bytes)
        ):
            return _single_partition_frame(ctx, read, read.records)
    return fetch_frame(ctx, _NO_ERROR, 0, reads)


# A one-partition answer is its template's head (up to the preferred read replica), the
# records' compact length, the records, and the partition's, topic's and response's empty
# tagged fields (`_TAIL`). `fetch_answer` patches into the head the frame size and
# correlation id at 0, and the high watermark, last stable offset and log start offset
# before the aborted transactions' one-byte length (null or empty) and the preferred read
# replica.
_TAIL = b"\x00\x00\x00"
_TemplateKey: TypeAlias = tuple[int, "int | str", int, bool]
_templates: dict[_TemplateKey, bytes] = {}
_MAX_TEMPLATES = 4096


def _single_partition_frame(ctx: RequestContext, read: PartitionRead, records: bytes) -> bytearray:
    return _framed(
        ctx.header.api_version,
        ctx.header.correlation_id,
        read.key,
        read.requested.topic or "",
        read.aborted_transactions is not None,
        (read.high_watermark, read.last_stable_offset, read.log_start_offset),
        records,
    )


def _framed(
    version: int,
    correlation_id: int,
    key: tuple[uuid.UUID | str, int],
    name: str,
    committed: bool,
    offsets: tuple[int, int, int],
    records: bytes,
) -> bytearray:
    """The answer of one partition without error: its key and topic name, whether it lists
    aborted transactions (none: read_committed), its high watermark, last stable and log
    start offsets, and its records."""
    topic_key, index = key
    # A topic id by its int: a UUID's hash is a Python method.
    by = topic_key.int if isinstance(topic_key, uuid.UUID) else topic_key
    template_key = (version, by, index, committed)
    head = _templates.get(template_key)
    if head is None:
        head = _template(version, name, topic_key, index, committed)
        if len(_templates) >= _MAX_TEMPLATES:
            _templates.clear()
        _templates[template_key] = head
    assert _fetch_answer is not None  # (this path runs only with the accelerator)
    high_watermark, last_stable_offset, log_start_offset = offsets
    return _fetch_answer(
        head, correlation_id, high_watermark, last_stable_offset, log_start_offset, records
    )


def _template(
    version: int, name: str, topic_key: uuid.UUID | str, index: int, committed: bool
) -> bytes:
    """The head of the handler's encoding of an answer with no records."""
    topic_id = topic_key if isinstance(topic_key, uuid.UUID) else _ZERO_ID
    aborted: list[tuple[int, int]] | None = [] if committed else None
    partition = FetchedPartition(index, ErrorCode.NO_ERROR, 0, 0, 0, aborted, b"")
    topic = FetchedTopic(name, topic_id, [partition])
    (encoded,) = encode_fetch_response(version, 0, ErrorCode.NO_ERROR, [topic])
    assert isinstance(encoded, bytes) and encoded.endswith(b"\x01" + _TAIL)
    return encoded[: -1 - len(_TAIL)]


_topic_ids: dict[bytes, uuid.UUID] = {}
_MAX_TOPIC_IDS = 4096


def _requested(cluster: Cluster, version: int, partitions: list[PlainPartition]) -> list[Requested]:
    """The handler's `_requested`, from `plain_fetch`'s partitions."""
    items = []
    for topic, index, leader_epoch, offset, max_bytes, log_start, last_epoch in partitions:
        if version >= _FIRST_TOPIC_ID_VERSION:
            assert isinstance(topic, bytes)
            known = cluster.topics_by_id_bytes.get(topic)
            # the topic's own id object when known: the handler compares it cheaply
            topic_key: uuid.UUID | str = _topic_id(topic) if known is None else known.topic_id
            name = None if known is None else known.name
        else:
            assert isinstance(topic, str)
            topic_key = name = topic
        wanted = Wanted(offset, max_bytes, leader_epoch, log_start, last_epoch)
        items.append(Requested((topic_key, index), name, wanted))
    return items


def _topic_id(raw: bytes) -> uuid.UUID:
    topic_id = _topic_ids.get(raw)
    if topic_id is None:
        if len(_topic_ids) >= _MAX_TOPIC_IDS:
            _topic_ids.clear()
        topic_id = _topic_ids[raw] = uuid.UUID(bytes=raw)
    return topic_id


class PendingFetch:
    """A waiting long poll of this path, which the connection holds as it would the task of a
    waiting request (`done`, `result`, `cancel`, one done callback). It is its partitions'
    append listener itself, as a bound method kept in it would make a reference cycle (and
    each fetch garbage for the collector)."""

    __slots__ = (
        "_callback",
        "_ctx",
        "_deadline",
        "_deadlines",
        "_fresh",
        "_items",
        "_lean",
        "_loop",
        "_min_bytes",
        "_partitions",
        "_reading_again",
        "_request",
        "_result",
        "_state",
        "_tick",
    )

    _WAITING, _DONE, _CANCELLED = range(3)

    def __init__(
        self,
        ctx: RequestContext,
        request: PlainRequest,
        items: list[Requested] | Lean,
        partitions: list[Partition],
        min_bytes: int,
        deadline: float,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """`items`: the partitions to read again, or what a lean read found of its one."""
        self._ctx = ctx
        self._request = request
        if isinstance(items, Lean):
            self._items: list[Requested] | None = None
            self._lean: Lean | None = items
        else:
            self._items, self._lean = items, None
        self._fresh = self._lean is not None  # nothing notified since the lean read
        self._partitions = partitions
        self._min_bytes = min_bytes
        self._deadline = deadline
        self._loop = loop
        self._state = self._WAITING
        self._result: Answer | None = None
        self._callback: Callable[[PendingFetch], object] | None = None
        self._reading_again = False
        for partition in partitions:
            partition.append_listeners.add(self)  # not a bound method: no reference cycle
        # (`Deadlines.of`'s first test, and the deadline's tick added inline: once per long poll)
        deadlines = Deadlines.last
        if deadlines is None or deadlines.loop is not loop:
            deadlines = Deadlines.of(loop)
        self._deadlines = deadlines
        tick = math.ceil(deadline * 1000)
        waiting = deadlines.ticks.get(tick)
        if waiting is None:
            waiting = deadlines.new_tick(tick)
        waiting[self] = None
        self._tick: int | None = tick

    # ---- what the connection asks of a task ----

    def done(self) -> bool:
        return self._state != self._WAITING

    def cancelled(self) -> bool:
        return self._state == self._CANCELLED

    def exception(self) -> BaseException | None:
        return None  # a failure is answered with the handler's error frame (`_failed`)

    def result(self) -> Answer:
        assert self._result is not None
        return self._result

    def add_done_callback(self, callback: Callable[[PendingFetch], object]) -> None:
        self._callback = callback

    def cancel(self) -> bool:
        if self._state != self._WAITING:
            return False
        self._stop_waiting()
        self._state = self._CANCELLED
        return True

    async def outcome(self) -> Answer:
        """The answer, for a caller that is a coroutine (`dispatch`); cancelling it cancels
        the fetch."""
        woken: asyncio.Future[None] = self._loop.create_future()

        def wake(_: PendingFetch) -> None:
            if not woken.done():
                woken.set_result(None)

        self.add_done_callback(wake)
        try:
            await woken
        finally:
            self.cancel()
        return self.result()

    # ---- the long poll ----

    def __call__(self, _: Partition) -> None:
        """An append to one of the partitions."""
        self._fresh = False
        if not self._reading_again:
            self._reading_again = True
            self._loop.call_soon(self._read_again)

    def _read_again(self) -> None:
        self._reading_again = False
        if self._state != self._WAITING:
            return
        try:
            reads, total, has_error = collect(self._ctx, self._request, self._read(), _CONSUMER)
            if total < self._min_bytes and not has_error and self._loop.time() < self._deadline:
                for read in reads:
                    read.drop_records()
                return
            self._finish(_frame(self._ctx, reads))
        except Exception:
            self._failed()

    def expire(self) -> None:
        """The deadline passed (`Deadlines`): read once more and answer; a lean read not
        notified since answers from what it found, when its partition is still the topic's,
        with the same log and leader epoch (every change a fetch could see notifies; these
        are checked in case one did not)."""
        if self._state != self._WAITING:
            return
        self._tick = None
        try:
            lean = self._lean
            if self._fresh and lean is not None:
                # (`_finish` inline, and of `_stop_waiting` what is left: once per long poll)
                topic = self._ctx.broker.cluster.topics.get(lean.name)
                index, partition = lean.partition_index, lean.partition
                if (
                    topic is not None
                    and index < len(topic.partitions)
                    and topic.partitions[index] is partition
                    and partition.log is lean.log
                    and partition.leader_epoch == lean.leader_epoch
                ):
                    partition.append_listeners.discard(self)
                    header = self._ctx.header
                    self._result = _framed(
                        header.api_version,
                        header.correlation_id,
                        (lean.topic_key, index),
                        lean.name,
                        lean.committed,
                        (lean.high_watermark, lean.last_stable_offset, lean.log_start_offset),
                        _NO_RECORDS,
                    )
                    self._state = self._DONE
                    if self._callback is not None:
                        self._callback(self)
                    return
            reads, _total, _has_error = collect(self._ctx, self._request, self._read(), _CONSUMER)
            self._finish(_frame(self._ctx, reads))
        except Exception:
            self._failed()

    def _read(self) -> list[Requested]:
        """The partitions to read again (made from the lean read's on first use)."""
        items = self._items
        if items is None:
            lean = self._lean
            assert lean is not None
            _ref, index, leader_epoch, offset, max_bytes, log_start, last_epoch = lean.wanted
            wanted = Wanted(offset, max_bytes, leader_epoch, log_start, last_epoch)
            items = self._items = [Requested((lean.topic_key, index), lean.name, wanted)]
        return items

    def _failed(self) -> None:
        """As `dispatch` answers a handler's exception."""
        from minibroker.server.dispatch import error_frame

        version, correlation_id = self._ctx.api_version, self._ctx.header.correlation_id
        log.exception("Fetch v%d failed", version)
        self._finish(error_frame(ApiKey.Fetch, version, correlation_id))

    def _finish(self, result: Answer) -> None:
        self._stop_waiting()
        self._result = result
        self._state = self._DONE
        if self._callback is not None:
            self._callback(self)

    def _stop_waiting(self) -> None:
        for partition in self._partitions:
            partition.append_listeners.discard(self)
        if self._tick is not None:
            self._deadlines.remove(self, self._tick)
            self._tick = None


class Deadlines:
    """The waiting fetches of one loop by the millisecond their wait ends (rounded up, as
    Kafka's purgatory ticks in milliseconds): one timer per millisecond that has any, instead
    of one per fetch."""

    _of_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ticks: dict[int, dict[PendingFetch, None]] = {}

    last: Deadlines | None = None  # the last loop's, as a weak dictionary's get is slow

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> Deadlines:
        last = cls.last
        if last is not None and last.loop is loop:
            return last
        deadlines = cls._of_loop.get(loop)
        if deadlines is None:
            deadlines = cls._of_loop[loop] = cls(loop)
        cls.last = deadlines
        return deadlines

    def new_tick(self, tick: int) -> dict[PendingFetch, None]:
        """The fetches waiting until millisecond `tick` (none yet), and its timer."""
        waiting: dict[PendingFetch, None] = {}
        self.ticks[tick] = waiting
        loop = self.loop
        # (`call_later`: uvloop's `call_at` is a wrapper of it)
        loop.call_later(tick / 1000 - loop.time(), self._expire, tick)
        return waiting

    def remove(self, pending: PendingFetch, tick: int) -> None:
        waiting = self.ticks.get(tick)
        if waiting is not None:
            waiting.pop(pending, None)

    def _expire(self, tick: int) -> None:
        for pending in self.ticks.pop(tick, {}):
            pending.expire()
