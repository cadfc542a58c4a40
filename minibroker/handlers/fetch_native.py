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
(`fetch_answer`).

A fetch that must wait is a `PendingFetch` rather than a task: it listens to its partitions'
appends as the handler's long poll does, and its deadline (the handler's: `max_wait_ms` from
after the first read) is in `Deadlines`, one timer per millisecond in which any wait ends,
for all the waiting fetches of a loop. On an append it reads again in the next loop iteration
(as the handler's task would run then), and answers once `min_bytes` are there, a partition
has an error, or the deadline has passed; at the deadline it reads once more and answers.

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
from minibroker.handlers.fetch import PartitionRead, collect, fetch_frame, poll_min_bytes
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame, RequestHeader
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import FetchedPartition, FetchedTopic, encode_fetch_response
from minibroker.records.accel import pure_python_forced
from minibroker.server.context import NO_ENTRY_ERRORS, RequestContext, Session

if TYPE_CHECKING:
    from minibroker.cluster.state import Cluster, Topic
    from minibroker.config import Listener
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

_FIRST_TOPIC_ID_VERSION = 13
_CONSUMER = -1  # the replica id of a consumer's fetch
_ZERO_ID = uuid.UUID(int=0)
# Enum members from the module: read from their class, each is a metaclass lookup (~0.3 µs).
_FETCH = ApiKey.Fetch
_NO_ERROR = ErrorCode.NO_ERROR

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
    version = ctx.header.api_version
    topic_key, index = read.key
    committed = read.aborted_transactions is not None
    # A topic id by its int: a UUID's hash is a Python method.
    by = topic_key.int if isinstance(topic_key, uuid.UUID) else topic_key
    key = (version, by, index, committed)
    head = _templates.get(key)
    if head is None:
        head = _template(version, read.requested.topic or "", topic_key, index, committed)
        if len(_templates) >= _MAX_TEMPLATES:
            _templates.clear()
        _templates[key] = head
    assert _fetch_answer is not None  # (this path runs only with the accelerator)
    return _fetch_answer(
        head,
        ctx.header.correlation_id,
        read.high_watermark,
        read.last_stable_offset,
        read.log_start_offset,
        records,
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
            known = _known_topics.get(topic)  # `_known_topic`'s first test inline
            if known is None or cluster.topics.get(known.name) is not known:
                known = _known_topic(cluster, topic)
            # the topic's own id object when known: the handler compares it cheaply
            topic_key: uuid.UUID | str = _topic_id(topic) if known is None else known.topic_id
            name = None if known is None else known.name
        else:
            assert isinstance(topic, str)
            topic_key = name = topic
        wanted = Wanted(offset, max_bytes, leader_epoch, log_start, last_epoch)
        items.append(Requested((topic_key, index), name, wanted))
    return items


_known_topics: dict[bytes, Topic] = {}


def _known_topic(cluster: Cluster, raw: bytes) -> Topic | None:
    """`cluster.topics_by_id.get` for the id's bytes. Remembered topics are checked to still
    be the cluster's under their name, which no UUID hash or comparison (Python methods) is
    needed for; a deleted one stays remembered only until its id is fetched again or the
    memory is cleared."""
    topic = _known_topics.get(raw)
    if topic is not None and cluster.topics.get(topic.name) is topic:
        return topic
    topic = cluster.topics_by_id.get(_topic_id(raw))
    if topic is None:
        _known_topics.pop(raw, None)
    else:
        if len(_known_topics) >= _MAX_TOPIC_IDS:
            _known_topics.clear()
        _known_topics[raw] = topic
    return topic


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
        "_items",
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
        items: list[Requested],
        partitions: list[Partition],
        min_bytes: int,
        deadline: float,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._ctx = ctx
        self._request = request
        self._items = items
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
        last = Deadlines.last  # `Deadlines.of`'s first test inline: this runs per long poll
        self._deadlines = last if last is not None and last.loop is loop else Deadlines.of(loop)
        self._tick: int | None = self._deadlines.add(self, deadline)

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
        if not self._reading_again:
            self._reading_again = True
            self._loop.call_soon(self._read_again)

    def _read_again(self) -> None:
        self._reading_again = False
        if self._state != self._WAITING:
            return
        try:
            reads, total, has_error = collect(self._ctx, self._request, self._items, _CONSUMER)
            if total < self._min_bytes and not has_error and self._loop.time() < self._deadline:
                for read in reads:
                    read.drop_records()
                return
            self._finish(_frame(self._ctx, reads))
        except Exception:
            self._failed()

    def expire(self) -> None:
        """The deadline passed (`Deadlines`): read once more and answer."""
        if self._state != self._WAITING:
            return
        self._tick = None
        try:
            reads, _total, _has_error = collect(self._ctx, self._request, self._items, _CONSUMER)
            self._finish(_frame(self._ctx, reads))
        except Exception:
            self._failed()

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
        self._ticks: dict[int, dict[PendingFetch, None]] = {}

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

    def add(self, pending: PendingFetch, deadline: float) -> int:
        tick = math.ceil(deadline * 1000)
        waiting = self._ticks.get(tick)
        if waiting is None:
            waiting = self._ticks[tick] = {}
            self.loop.call_at(tick / 1000, self._expire, tick)
        waiting[pending] = None
        return tick

    def remove(self, pending: PendingFetch, tick: int) -> None:
        waiting = self._ticks.get(tick)
        if waiting is not None:
            waiting.pop(pending, None)

    def _expire(self, tick: int) -> None:
        for pending in self._ticks.pop(tick, {}):
            pending.expire()
