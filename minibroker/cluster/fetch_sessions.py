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
from dataclasses import dataclass
from typing import NamedTuple

from minibroker.protocol.errors import ErrorCode

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
    made per partition and fetch, and a frozen dataclass costs several times as much)."""

    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    has_records: bool


@dataclass(slots=True)
class CachedPartition:
    topic: str | None
    wanted: Wanted
    high_watermark: int = -1
    log_start_offset: int = -1
    # Set by the fetch handler when the partition was last answered with nothing to say: what
    # that answer was made of. While the partition's state is the same, the next incremental
    # fetch skips it without reading (it would again have nothing to say).
    quiet: object = None

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
    # What an incremental fetch reads, in order, kept until the partitions, their order or
    # what is wanted of them change (an idle session's fetch builds nothing).
    reads: list[Requested] | None = None

    @property
    def size(self) -> int:
        return len(self.partitions)

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(self, requested: Iterable[Requested], forgotten: Iterable[PartitionKey]) -> None:
        """Add the partitions an incremental fetch names, update the ones it changes (their
        topic name stays the one resolved when added) and drop the forgotten ones."""
        for item in requested:
            cached = self.partitions.get(item.key)
            if cached is None:
                self.partitions[item.key] = CachedPartition(item.topic, item.wanted)
            else:
                cached.wanted = item.wanted
                cached.quiet = None
            self.reads = None
        for key in forgotten:
            self.partitions.pop(key, None)
            self.reads = None


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
            return {
                key: CachedPartition(
                    by_key[key].topic,
                    by_key[key].wanted,
                    answer.high_watermark,
                    answer.log_start_offset,
                )
                for key, answer in answers
            }

        session_id = self.cache.maybe_create_session(
            now_ms, self.privileged, len(answers), self.uses_topic_ids, cached
        )
        return SessionAnswer(ErrorCode.NO_ERROR, session_id, [key for key, _ in answers])


class IncrementalContext(FetchContext):
    """Every partition of the session is read (but those the handler finds quiet); only those
    with changes are answered."""

    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.expected_epoch = next_epoch(request_epoch)

    def partitions(self, topic_names: TopicNames) -> list[Requested]:
        session = self.session
        if session.reads is not None:
            return session.reads
        found = []
        resolved = True
        for key, cached in session.partitions.items():
            topic_key = key[0]
            if cached.topic is None and isinstance(topic_key, uuid.UUID):
                cached.topic = topic_names(topic_key)
                resolved = resolved and cached.topic is not None
            found.append(Requested(key, cached.topic, cached.wanted, cached))
        if resolved:  # else the next fetch tries to name the unknown topic ids again
            session.reads = found
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
            if cached is None or not cached.must_respond(answer, update=True):
                continue
            included.append(key)
            if answer.has_records:  # rotate: partitions that returned data go last
                session.partitions[key] = session.partitions.pop(key)
                session.reads = None
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
        return session

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
