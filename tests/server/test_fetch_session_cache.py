"""The fetch session cache (minibroker/cluster/fetch_sessions.py) as Kafka's FetchManager and
FetchSessionCache: contexts, session updates, incremental answers and eviction."""

from __future__ import annotations

import random
import uuid

from minibroker.cluster.fetch_sessions import (
    EVICTION_MS,
    Answer,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    Requested,
    SessionErrorContext,
    SessionlessContext,
    Wanted,
    next_epoch,
)
from minibroker.cluster.state import Partition
from minibroker.log.config import LogConfig
from minibroker.log.memory import MemoryPartitionLog
from minibroker.protocol.errors import ErrorCode

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
NOW = 1_000_000


def item(index: int, offset: int = 0, topic: uuid.UUID | str = TOPIC_ID) -> Requested:
    name = topic if isinstance(topic, str) else "t"
    return Requested((topic, index), name, Wanted(offset, 1 << 20))


def answer(hw: int, log_start: int = 0, records: bool = False, error: int = 0) -> Answer:
    return Answer(ErrorCode(error), hw, log_start, records)


def new_session(
    cache: FetchSessionCache, items: list[Requested], now: int = NOW, version: int = 18
) -> int:
    context = cache.new_context(version, 0, 0, items, [], now)
    assert isinstance(context, FullContext)
    return context.respond([(i.key, answer(5)) for i in items], now).session_id


def test_next_epoch_wraps_to_one_and_keeps_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


def test_full_fetch_with_epoch_zero_creates_a_session_answering_every_partition() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    items = [item(0), item(1)]
    context = cache.new_context(13, 0, 0, items, [], NOW)
    assert context.partitions(lambda _: None) == items
    answered = context.respond([(i.key, answer(3)) for i in items], NOW)
    assert answered.error == ErrorCode.NO_ERROR
    assert answered.session_id != 0 and cache.get(answered.session_id) is not None
    assert answered.included == [i.key for i in items]
    session = cache.get(answered.session_id)
    assert session is not None and session.epoch == 1 and session.uses_topic_ids


def test_final_epoch_is_sessionless_and_closes_the_session_it_names() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0)])
    context = cache.new_context(18, session_id, -1, [item(0)], [], NOW)
    assert isinstance(context, SessionlessContext) and not isinstance(context, FullContext)
    assert context.respond([(item(0).key, answer(1))], NOW).session_id == 0
    assert cache.get(session_id) is None


def test_a_full_fetch_naming_a_session_closes_it_and_opens_another() -> None:
    cache = FetchSessionCache(10)
    old = new_session(cache, [item(0)])
    context = cache.new_context(18, old, 0, [item(1)], [], NOW)
    new = context.respond([(item(1).key, answer(1))], NOW).session_id
    assert cache.get(old) is None and new not in (0, old)


def test_incremental_errors_as_kafka() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0)])
    unknown = cache.new_context(18, session_id + 1, 1, [], [], NOW)
    assert unknown.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    wrong_epoch = cache.new_context(18, session_id, 2, [], [], NOW)
    assert wrong_epoch.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    names = cache.new_context(12, session_id, 1, [], [], NOW)
    assert isinstance(names, SessionErrorContext)
    assert names.error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    assert names.respond([], NOW).session_id == 0
    # None of the errors used the epoch up.
    assert isinstance(cache.new_context(18, session_id, 1, [], [], NOW), IncrementalContext)


def test_a_names_session_refuses_topic_id_versions() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0, topic="t")], version=12)
    context = cache.new_context(13, session_id, 1, [], [], NOW)
    assert context.error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_incremental_fetch_answers_only_partitions_with_changes() -> None:
    cache = FetchSessionCache(10)
    items = [item(0), item(1), item(2)]
    session_id = new_session(cache, items)  # every partition told high watermark 5
    context = cache.new_context(18, session_id, 1, [], [], NOW)
    assert [i.key for i in context.partitions(lambda _: None)] == [i.key for i in items]
    answers = [
        (items[0].key, answer(5)),  # nothing new
        (items[1].key, answer(6)),  # high watermark moved
        (items[2].key, answer(5, records=True)),  # records
    ]
    answered = context.respond(answers, NOW)
    assert answered.included == [items[1].key, items[2].key]
    # Partitions that returned records go last; what was told is remembered.
    context = cache.new_context(18, session_id, 2, [], [], NOW)
    assert [i.key for i in context.partitions(lambda _: None)] == [
        items[0].key,
        items[1].key,
        items[2].key,
    ]
    assert context.respond([(k, a) for k, a in answers], NOW).included == [items[2].key]


def test_log_start_changes_and_errors_are_answered_and_errors_resent_once_gone() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0)])
    key = item(0).key
    context = cache.new_context(18, session_id, 1, [], [], NOW)
    assert context.respond([(key, answer(5, log_start=2))], NOW).included == [key]
    context = cache.new_context(18, session_id, 2, [], [], NOW)
    failed = answer(-1, log_start=2, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert context.respond([(key, failed)], NOW).included == [key]
    context = cache.new_context(18, session_id, 3, [], [], NOW)
    assert context.respond([(key, answer(5, log_start=2))], NOW).included == [key]
    context = cache.new_context(18, session_id, 4, [], [], NOW)
    assert context.respond([(key, answer(5, log_start=2))], NOW).included == []


def test_incremental_fetch_adds_updates_and_forgets_partitions() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0), item(1)])
    context = cache.new_context(18, session_id, 1, [item(2), item(0, offset=7)], [item(1).key], NOW)
    read = context.partitions(lambda _: None)
    assert [(i.key, i.wanted.fetch_offset) for i in read] == [
        (item(0).key, 7),
        (item(2).key, 0),
    ]


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0)])
    context = cache.new_context(18, session_id, 1, [], [item(0).key], NOW)
    assert isinstance(context, SessionlessContext)
    assert cache.get(session_id) is None


def test_an_overtaken_fetch_gets_invalid_epoch_with_its_session_id() -> None:
    cache = FetchSessionCache(10)
    session_id = new_session(cache, [item(0)])
    waiting = cache.new_context(18, session_id, 1, [], [], NOW)
    cache.new_context(18, session_id, 2, [], [], NOW)
    answered = waiting.respond([(item(0).key, answer(9, records=True))], NOW)
    assert (answered.error, answered.session_id, answered.included) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        session_id,
        [],
    )


def test_unknown_topic_names_are_resolved_later_and_kept_once_known() -> None:
    cache = FetchSessionCache(10)
    unknown = Requested((TOPIC_ID, 0), None, Wanted(0, 100))
    session_id = new_session(cache, [unknown])
    context = cache.new_context(18, session_id, 1, [], [], NOW)
    assert context.partitions(lambda _: None)[0].topic is None
    context = cache.new_context(18, session_id, 2, [], [], NOW)
    assert context.partitions(lambda _: "found")[0].topic == "found"
    context = cache.new_context(18, session_id, 3, [], [], NOW)
    assert context.partitions(lambda _: "other")[0].topic == "found"


def test_a_full_cache_makes_no_session() -> None:
    cache = FetchSessionCache(1)
    first = new_session(cache, [item(0)])
    assert new_session(cache, [item(0)]) == 0
    assert list(cache.sessions) == [first]
    assert (
        FetchSessionCache(0)
        .new_context(18, 0, 0, [item(0)], [], NOW)
        .respond([(item(0).key, answer(1))], NOW)
        .session_id
        == 0
    )


def test_a_stale_session_is_evicted() -> None:
    cache = FetchSessionCache(1)
    first = new_session(cache, [item(0)])
    second = new_session(cache, [item(0)], now=NOW + EVICTION_MS + 1)
    assert second != 0 and list(cache.sessions) == [second] and first != second


def test_a_bigger_session_evicts_an_old_enough_smaller_one() -> None:
    cache = FetchSessionCache(1)
    small = new_session(cache, [item(0)])
    # Used recently (not stale), but created long ago: evictable by a session worth more.
    later = NOW + EVICTION_MS + 1
    cache.touch(cache.sessions[small], later)
    assert new_session(cache, [item(0)], now=later) == 0  # same size, higher id: not worth more
    big = new_session(cache, [item(0), item(1)], now=later)
    assert big != 0 and list(cache.sessions) == [big]


def test_a_young_session_is_kept_from_consumers_but_not_from_followers() -> None:
    cache = FetchSessionCache(1)
    consumer = new_session(cache, [item(0)])
    assert new_session(cache, [item(i) for i in range(5)]) == 0
    context = cache.new_context(18, 0, 0, [item(0)], [], NOW, privileged=True)
    follower = context.respond([(item(0).key, answer(1))], NOW).session_id
    assert follower != 0 and list(cache.sessions) == [follower] and consumer != follower
    # A follower's young session is kept even from another follower with more partitions.
    two = [item(0), item(1)]
    context = cache.new_context(18, 0, 0, two, [], NOW, privileged=True)
    assert context.respond([(i.key, answer(1)) for i in two], NOW).session_id == 0


# ---- which partitions an incremental fetch reads ------------------------------------------


def partition(index: int) -> Partition:
    return Partition("t", index, MemoryPartitionLog("t", index, TOPIC_ID, LogConfig()))


def settled(found: Partition, hw: int = 5) -> Answer:
    return Answer(ErrorCode.NO_ERROR, hw, 0, False, found, settled=True)


def test_a_session_reads_only_the_partitions_notified_or_not_settled() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    parts = [partition(i) for i in range(3)]
    items = [item(i) for i in range(3)]
    context = cache.new_context(18, 0, 0, items, [], NOW)
    answers = [(items[0].key, settled(parts[0])), (items[1].key, settled(parts[1]))]
    answers.append((items[2].key, Answer(ErrorCode.NO_ERROR, 5, 0, True, parts[2])))
    session_id = context.respond(answers, NOW).session_id
    session = cache.get(session_id)
    assert session is not None
    # the two that settled are listened to; the one that returned records is read next
    assert [p.append_listeners for p in parts] == [{session}, {session}, set()]
    incremental = cache.new_context(18, session_id, 1, [], [], NOW)
    assert isinstance(incremental, IncrementalContext)
    assert [r.key for r in incremental.partitions(lambda _: None)] == [items[2].key]
    incremental.respond([(items[2].key, settled(parts[2]))], NOW)
    assert parts[2].append_listeners == {session}
    parts[1].notify_appended()
    nothing_new = cache.new_context(18, session_id, 2, [], [], NOW)
    assert [r.key for r in nothing_new.partitions(lambda _: None)] == [items[1].key]


def test_a_closed_session_stops_listening_even_when_a_fetch_answers_it_later() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    found = partition(0)
    context = cache.new_context(18, 0, 0, [item(0)], [], NOW)
    session_id = context.respond([(item(0).key, settled(found))], NOW).session_id
    found.notify_appended()
    incremental = cache.new_context(18, session_id, 1, [], [], NOW)
    assert isinstance(incremental, IncrementalContext)
    assert len(incremental.partitions(lambda _: None)) == 1
    cache.remove(session_id)  # evicted while its fetch waits
    assert found.append_listeners == set()
    recreated = partition(0)  # e.g. the topic was deleted and created again meanwhile
    answered = incremental.respond([(item(0).key, settled(recreated, hw=6))], NOW)
    assert answered.included == [item(0).key]
    assert found.append_listeners == recreated.append_listeners == set()


def test_forgetting_a_partition_stops_listening_to_it() -> None:
    cache = FetchSessionCache(10, rng=random.Random(1))
    parts = [partition(0), partition(1)]
    context = cache.new_context(18, 0, 0, [item(0), item(1)], [], NOW)
    answers = [(item(i).key, settled(parts[i])) for i in range(2)]
    session_id = context.respond(answers, NOW).session_id
    cache.new_context(18, session_id, 1, [], [item(1).key], NOW)
    assert [len(p.append_listeners) for p in parts] == [1, 0]
