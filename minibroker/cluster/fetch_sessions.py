"""Incremental fetch sessions (KIP-227): Kafka's FetchSession, FetchSessionCache and
FetchManager.newContext as pure logic (no I/O, no clock: callers pass `now_ms`).

A full fetch (epoch 0) asks for a session; the cache creates one when it has a free slot or
can evict one, and the response carries its id (0 when none was made). The client's next
fetches are incremental (that id, epoch 1, 2, ...): they name only the partitions added or
changed (their new fetch offset and limits), forget partitions through `ForgottenTopicsData`,
and get back only the partitions with something to say: records, a new high watermark or log
start offset, or an error (`CachedPartition.must_respond`, Kafka's `maybeUpdateResponseData`).
Partitions that returned records move to the end of the session's order, as Kafka rotates
them. A full fetch naming a session id closes that session; epoch -1 (FINAL_EPOCH) never
creates one (sessionless fetch).

An incremental fetch costs what changed, not what the session holds: a session listens to
each partition it read (`Partition.append_listeners`, which every change a fetch could see
notifies: appends, high watermark, log start and last stable offset moves, leader changes,
deletion) and keeps the partitions it must read again (`FetchSession.pending`): those
notified, those the request added or changed, those last answered with an error or that had
more to read than they returned. A partition read with nothing to say leaves it. Kafka's
broker reads every partition of the session on each fetch; what it answers (Kafka's
`updateAndGenerateResponseData`) is the same, since a partition left out is one whose answer
would be unchanged. A long poll on a session waits on the session itself, which wakes its
waiters on any change to one of its partitions.

Errors as Kafka's `FetchManager.newContext` gives them: an unknown session id gets
FETCH_SESSION_ID_NOT_FOUND, the wrong epoch INVALID_FETCH_SESSION_EPOCH, a request version on
the other side of v13 from the session's (topic ids against names)
FETCH_SESSION_TOPIC_ID_ERROR; an incremental fetch that leaves its session empty closes it
and is answered sessionless. Partitions are keyed by topic id from v13 and by topic name
before (Kafka's `CachedPartition` equality); a session keeps a topic's name once it has
resolved it, so a topic deleted and re-created under the same name reaches the handler with
the session's old id (Kafka then answers INCONSISTENT_TOPIC_ID).

Cache eviction is Kafka's `FetchSessionCacheShard.tryEvict`, on a single shard (Kafka splits
the slots over 8 shards picked round-robin; one shard evicts by the same rules over all
sessions): a session unused for longer than `EVICTION_MS` (Kafka's 120 s) is evicted first;
otherwise the least valuable evictable session (unprivileged before privileged, fewer
partitions first, then lower id) is evicted when the new one is worth at least as much. A
session is evictable by a consumer's only once it is older than `EVICTION_MS`; by a
follower's (privileged) at once if it is a consumer's.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.cluster.state import Partition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
FIRST_TOPIC_ID_VERSION = 13
_INT32_MAX = 2**31 - 1

TopicKey = uuid.UUID | str
"""A topic as a fetch names it: its id from v13, its name before."""
PartitionKey = tuple[TopicKey, int]
TopicNames = Callable[[uuid.UUID], str | None]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(slots=True)
class Wanted:
    """One partition's fetch parameters, as a request gives them (a session keeps them)."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1


@dataclass(slots=True)
class Requested:
    """A partition to read: its key, its topic's name (None: unknown topic id), what the
    fetch wants of it, and where an incremental fetch has it from its session."""

    key: PartitionKey
    topic: str | None
    wanted: Wanted
    cached: CachedPartition | None = None


class Answer(NamedTuple):
    """What a response says of a partition, as far as a session cares (a named tuple: one is
    made per partition and fetch, and a frozen dataclass costs several times as much):
    `partition`, the one read (None: not found), and `settled`, that it had nothing more to
    read (no error, no records, the fetch offset at the readable end)."""

    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    has_records: bool
    partition: Partition | None = None
    settled: bool = False


@dataclass(slots=True, eq=False)
class CachedPartition:
    topic: str | None
    wanted: Wanted
    high_watermark: int = -1
    log_start_offset: int = -1
    key: PartitionKey | None = None
    # The partition last read, which notifies the session of its changes (None: not found).
    partition: Partition | None = None
    order: int = 0  # its place in the session's order (higher: later)

    def must_respond(self, answer: Answer, update: bool) -> bool:
        """Whether an incremental response must list this partition (Kafka's
        `maybeUpdateResponseData`); with `update`, remember what it was told."""
        respond = answer.has_records
        if self.high_watermark != answer.high_watermark:
            respond = True
            if update:
                self.high_watermark = answer.high_watermark
        if self.log_start_offset != answer.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = answer.log_start_offset
        if answer.error != ErrorCode.NO_ERROR:
            # The high watermark is forgotten so that the partition is sent again once the
            # error has gone.
            respond = True
            if update:
                self.high_watermark = -1
        return respond


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, CachedPartition]
    cached_size: int = -1  # the size when last touched; -1: not in the cache
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    # Whom, and under which ACLs, the partitions were last all authorized for (the handler's
    # key): while it holds, a partition not pending is still authorized.
    authorized_as: object = None
    # The partitions the next incremental fetch reads (a subset of `partitions`).
    pending: set[CachedPartition] = field(default_factory=set)
    # Waiting long polls, called on any change to one of the partitions (the shape of
    # `Partition.append_listeners`, so that the handler waits on a session as on partitions).
    append_listeners: set[Callable[[Any], None]] = field(default_factory=set)
    _listened: dict[Partition, CachedPartition] = field(default_factory=dict)
    _next_order: int = 0
    _closed: bool = False  # out of the cache: a fetch still answering it listens to nothing

    def __post_init__(self) -> None:
        for key, cached in self.partitions.items():
            self._placed(key, cached)

    @property
    def size(self) -> int:
        return len(self.partitions)

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def __call__(self, partition: Partition) -> None:
        """A change to a partition it listens to: read it on the next fetch, wake long polls."""
        cached = self._listened.get(partition)
        if cached is not None:
            self.pending.add(cached)
        for waiter in list(self.append_listeners):
            waiter(self)

    def update(self, requested: Iterable[Requested], forgotten: Iterable[PartitionKey]) -> None:
        """Add the partitions an incremental fetch names, update the ones it changes (their
        topic name stays the one resolved when added) and drop the forgotten ones."""
        for item in requested:
            cached = self.partitions.get(item.key)
            if cached is None:
                cached = self.partitions[item.key] = CachedPartition(item.topic, item.wanted)
                self._placed(item.key, cached)
            else:
                cached.wanted = item.wanted
                self.pending.add(cached)
        for key in forgotten:
            gone = self.partitions.pop(key, None)
            if gone is not None:
                self.pending.discard(gone)
                self._listen(gone, None)

    def to_read(self, everything: bool) -> list[CachedPartition]:
        """The partitions an incremental fetch reads, in the session's order: the pending ones,
        or `everything`."""
        if everything:
            return list(self.partitions.values())
        return sorted(self.pending, key=_order)

    def answered(self, cached: CachedPartition, answer: Answer, rotate: bool) -> None:
        """A partition was answered: listen to the partition read, keep it pending unless it
        settled, and with `rotate` move it to the end of the session's order."""
        if cached.partition is not answer.partition:
            self._listen(cached, answer.partition)
        if answer.settled:
            self.pending.discard(cached)
        else:
            self.pending.add(cached)
        if rotate and cached.key is not None:
            self.partitions[cached.key] = self.partitions.pop(cached.key)
            cached.order = self._take_order()

    def close(self) -> None:
        """Stop listening to every partition (the session leaves the cache)."""
        self._closed = True
        for partition in self._listened:
            partition.append_listeners.discard(self)
        self._listened.clear()
        self.pending.clear()

    def _placed(self, key: PartitionKey, cached: CachedPartition) -> None:
        cached.key = key
        cached.order = self._take_order()
        if cached.partition is None:
            self.pending.add(cached)
        else:
            self._listened[cached.partition] = cached
            cached.partition.append_listeners.add(self)

    def _take_order(self) -> int:
        self._next_order += 1
        return self._next_order

    def _listen(self, cached: CachedPartition, partition: Partition | None) -> None:
        old = cached.partition
        if old is not None and self._listened.get(old) is cached:
            del self._listened[old]
            old.append_listeners.discard(self)
        cached.partition = partition
        if partition is not None and not self._closed:
            self._listened[partition] = cached
            partition.append_listeners.add(self)


def _order(cached: CachedPartition) -> int:
    return cached.order


class SessionAnswer(NamedTuple):
    """How to answer: the top-level error, the session id, and which of the partitions read
    go in the response (their keys, in order)."""

    error: ErrorCode
    session_id: int
    included: list[PartitionKey]


class FetchContext:
    """What one fetch reads and how its response is shaped (Kafka's FetchContext)."""

    error: ErrorCode | None = None

    def partitions(self, topic_names: TopicNames) -> list[Requested]:
        return []

    def respond(self, answers: Sequence[tuple[PartitionKey, Answer]], now_ms: int) -> SessionAnswer:
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """The session could not be used: the error, no partitions, session id 0."""

    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    def respond(self, answers: Sequence[tuple[PartitionKey, Answer]], now_ms: int) -> SessionAnswer:
        assert self.error is not None
        return SessionAnswer(self.error, INVALID_SESSION_ID, [])


class SessionlessContext(FetchContext):
    """Every requested partition, answered in full, without a session (id 0)."""

    def __init__(self, requested: list[Requested]) -> None:
        self.requested = requested

    def partitions(self, topic_names: TopicNames) -> list[Requested]:
        return self.requested

    def respond(self, answers: Sequence[tuple[PartitionKey, Answer]], now_ms: int) -> SessionAnswer:
        return SessionAnswer(ErrorCode.NO_ERROR, INVALID_SESSION_ID, [key for key, _ in answers])


class FullContext(SessionlessContext):
    """Every requested partition, answered in full; a session holding them is created when the
    cache allows, and its id answered."""

    def __init__(
        self,
        cache: FetchSessionCache,
        requested: list[Requested],
        uses_topic_ids: bool,
        privileged: bool,
    ) -> None:
        super().__init__(requested)
        self.cache = cache
        self.uses_topic_ids = uses_topic_ids
        self.privileged = privileged

    def respond(self, answers: Sequence[tuple[PartitionKey, Answer]], now_ms: int) -> SessionAnswer:
        by_key = {item.key: item for item in self.requested}

        def cached() -> dict[PartitionKey, CachedPartition]:
            # A partition that settled is listened to and left out of the next fetch; the
            # others (errors, more to read) are read by it.
            return {
                key: CachedPartition(
                    by_key[key].topic,
                    by_key[key].wanted,
                    answer.high_watermark,
                    answer.log_start_offset,
                    partition=answer.partition if answer.settled else None,
                )
                for key, answer in answers
            }

        session_id = self.cache.maybe_create_session(
            now_ms, self.privileged, len(answers), self.uses_topic_ids, cached
        )
        return SessionAnswer(ErrorCode.NO_ERROR, session_id, [key for key, _ in answers])


class IncrementalContext(FetchContext):
    """The session's partitions that may have changed are read (all of them with
    `read_all`); only those with changes are answered."""

    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.expected_epoch = next_epoch(request_epoch)
        self.read_all = False
        self.authorized_as: object = None  # the session's once answered

    def partitions(self, topic_names: TopicNames) -> list[Requested]:
        found = []
        for cached in self.session.to_read(self.read_all):
            key = cached.key
            assert key is not None
            topic_key = key[0]
            if cached.topic is None and isinstance(topic_key, uuid.UUID):
                cached.topic = topic_names(topic_key)
            found.append(Requested(key, cached.topic, cached.wanted, cached))
        return found

    def respond(self, answers: Sequence[tuple[PartitionKey, Answer]], now_ms: int) -> SessionAnswer:
        session = self.session
        if session.epoch != self.expected_epoch:
            # Another fetch of this session came in while this one waited (Kafka: a
            # duplicate request).
            return SessionAnswer(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, [])
        included = []
        for key, answer in answers:
            cached = session.partitions.get(key)
            if cached is None:
                continue
            respond = cached.must_respond(answer, update=True)
            # rotate: partitions that returned data go last
            session.answered(cached, answer, rotate=respond and answer.has_records)
            if respond:
                included.append(key)
        if self.read_all:  # every partition was authorized for `authorized_as`
            session.authorized_as = self.authorized_as
        return SessionAnswer(ErrorCode.NO_ERROR, session.id, included)


class FetchSessionCache:
    """One broker's fetch sessions (`max.incremental.fetch.session.cache.slots`)."""

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int = EVICTION_MS,
        rng: random.Random | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self.sessions: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.cached_size = -1
            session.close()
        return session

    def clear(self) -> None:
        """Close every session (the broker stops)."""
        for session_id in list(self.sessions):
            self.remove(session_id)

    def new_context(
        self,
        version: int,
        session_id: int,
        epoch: int,
        requested: list[Requested],
        forgotten: Sequence[PartitionKey],
        now_ms: int,
        *,
        privileged: bool = False,
    ) -> FetchContext:
        """Kafka's FetchManager.newContext."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):  # a full fetch
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # any session a full fetch names is closed
            if epoch == FINAL_EPOCH:
                return SessionlessContext(requested)
            uses_topic_ids = version >= FIRST_TOPIC_ID_VERSION
            return FullContext(self, requested, uses_topic_ids, privileged)
        session = self.sessions.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= FIRST_TOPIC_ID_VERSION):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(requested, forgotten)
        if not session.partitions:
            self.remove(session.id)
            return SessionlessContext(requested)
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return IncrementalContext(session, epoch)

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        size: int,
        uses_topic_ids: bool,
        partitions: Callable[[], dict[PartitionKey, CachedPartition]],
    ) -> int:
        """The new session's id, or 0 when the cache is full and nothing could be evicted."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(
            privileged, (privileged, size, 0), now_ms
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            self._new_session_id(),
            privileged,
            uses_topic_ids,
            now_ms,
            now_ms,
            next_epoch(INITIAL_EPOCH),
            partitions(),
        )
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Record a use: last-used time, size, and whether it may be evicted now."""
        session.last_used_ms = now_ms
        session.cached_size = session.size
        old_enough = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old_enough
        session.evictable_by_all = old_enough

    def _new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _INT32_MAX - 1)
            if session_id not in self.sessions:
                return session_id

    def _try_evict(self, privileged: bool, key: tuple[bool, int, int], now_ms: int) -> bool:
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            self.remove(stalest.id)
            return True
        candidates = [
            session
            for session in self.sessions.values()
            if (session.evictable_by_privileged if privileged else session.evictable_by_all)
        ]
        if not candidates:
            return False
        least = min(candidates, key=FetchSession.evictable_key)
        if key < least.evictable_key():
            return False
        self.remove(least.id)
        return True
