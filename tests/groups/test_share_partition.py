"""The share-partition state machine (groups/share/partition.py): acquisition, acknowledgement
types, locks, the delivery count limit, the start offset, and Kafka's errors; a hypothesis
test drives random members and operations and checks that no record is ever settled twice."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.groups.records import RecordFormatError
from minibroker.groups.share.partition import (
    FINISHED,
    AcknowledgeError,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    RecordState,
    ShareLimits,
    SharePartition,
)
from minibroker.groups.share.state_records import (
    ShareSnapshot,
    ShareStateKey,
    StateBatch,
    coordinator_key,
    decode_key,
    decode_snapshot,
    encode_key,
    encode_snapshot,
)
from minibroker.protocol.errors import ErrorCode

LIMITS = ShareLimits(delivery_count_limit=3, max_in_flight=100, lock_duration_ms=1000)
ACCEPT, RELEASE, REJECT, GAP, RENEW = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.GAP,
    AcknowledgeType.RENEW,
)


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def states(share: SharePartition) -> dict[int, RecordState]:
    return {offset: record.state for offset, record in share.records()}


def test_new_batches_are_acquired_with_one_delivery() -> None:
    share = SharePartition(10, LIMITS)
    share.acquire_new("a", 10, 14, now_ms=0)
    assert share.acquired_ranges(range(10, 15)) == [AcquiredRange(10, 14, 1)]
    assert (share.start_offset, share.end_offset, share.in_flight) == (10, 15, 5)
    assert set(states(share).values()) == {RecordState.ACQUIRED}


def test_accepting_everything_moves_the_start_offset_past_it() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 4, now_ms=0)
    share.acknowledge("a", [ack(0, 4, ACCEPT)], now_ms=1)
    assert (share.start_offset, share.end_offset, states(share)) == (5, 5, {})


def test_per_offset_types_and_the_start_offset_stopping_at_an_unsettled_record() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 4, now_ms=0)
    share.acknowledge("a", [ack(0, 4, ACCEPT, REJECT, RELEASE, GAP, ACCEPT)], now_ms=1)
    assert share.start_offset == 2
    assert states(share) == {
        2: RecordState.AVAILABLE,
        3: RecordState.ARCHIVED,
        4: RecordState.ACKNOWLEDGED,
    }
    assert share.available_offsets(10) == [2]


def test_a_released_record_is_redelivered_with_its_delivery_count() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 2, now_ms=0)
    share.acknowledge("a", [ack(1, 1, RELEASE)], now_ms=1)
    share.acquire("b", share.available_offsets(10), now_ms=2)
    assert share.acquired_ranges([1]) == [AcquiredRange(1, 1, 2)]
    with pytest.raises(AcknowledgeError) as refused:
        share.acknowledge("a", [ack(1, 1, ACCEPT)], now_ms=3)
    assert refused.value.error == ErrorCode.INVALID_RECORD_STATE
    share.acknowledge("b", [ack(1, 1, ACCEPT)], now_ms=3)


def test_the_delivery_count_limit_archives_a_poison_record() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 0, now_ms=0)
    for delivery in range(2, LIMITS.delivery_count_limit + 1):
        share.acknowledge("a", [ack(0, 0, RELEASE)], now_ms=delivery)
        share.acquire("a", share.available_offsets(1), now_ms=delivery)
        assert share.acquired_ranges([0]) == [AcquiredRange(0, 0, delivery)]
    share.acknowledge("a", [ack(0, 0, RELEASE)], now_ms=10)
    assert (share.start_offset, share.available_offsets(10)) == (1, [])


def test_expired_locks_make_records_available_and_renew_extends_a_lock() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 1, now_ms=0)
    share.acknowledge("a", [ack(1, 1, RENEW)], now_ms=900)
    assert share.next_lock_expiry_ms() == 1000
    assert share.expire_locks(1000) == 1
    assert states(share) == {0: RecordState.AVAILABLE, 1: RecordState.ACQUIRED}
    assert share.expire_locks(1900) == 1
    assert share.available_offsets(10) == [0, 1]


def test_a_member_released_at_session_close_gives_back_only_its_records() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 1, now_ms=0)
    share.acquire_new("b", 2, 3, now_ms=0)
    assert share.release_member("a") == 2
    assert states(share)[2] == RecordState.ACQUIRED
    assert share.available_offsets(10) == [0, 1]


def test_records_released_at_session_close_count_as_never_delivered() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 0, now_ms=0)
    for delivery in range(2, LIMITS.delivery_count_limit + 1):
        share.acknowledge("a", [ack(0, 0, RELEASE)], now_ms=delivery)
        share.acquire("a", share.available_offsets(1), now_ms=delivery)
    # at the limit, yet a session close makes it available again, one delivery fewer
    assert share.release_member("a") == 1
    share.acquire("b", share.available_offsets(1), now_ms=10)
    assert share.acquired_ranges([0]) == [AcquiredRange(0, 0, LIMITS.delivery_count_limit)]


def test_the_in_flight_limit_stops_new_acquisitions() -> None:
    share = SharePartition(0, ShareLimits(3, 4, 1000))
    share.acquire_new("a", 0, 3, now_ms=0)
    assert not share.can_acquire_new()
    share.acknowledge("a", [ack(0, 0, ACCEPT)], now_ms=1)
    assert share.can_acquire_new()


def test_control_records_are_archived_as_they_enter() -> None:
    share = SharePartition(0, LIMITS)
    share.archive_new(0, 0)
    assert (share.start_offset, share.end_offset) == (1, 1)
    share.acquire_new("a", 1, 2, now_ms=0)
    share.archive_new(3, 3)
    assert share.start_offset == 1 and share.end_offset == 4


def test_a_moved_log_start_drops_what_was_in_flight_below_it() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 4, now_ms=0)
    share.move_start_to(3)
    assert sorted(states(share)) == [3, 4]
    share.acquire_new("a", 8, 9, now_ms=0)  # the log start moved past the end
    assert (share.start_offset, sorted(states(share))) == (8, [8, 9])


def test_offsets_below_the_start_offset_are_skipped() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 3, now_ms=0)
    share.acknowledge("a", [ack(0, 1, ACCEPT)], now_ms=1)
    share.acknowledge("a", [ack(0, 3, ACCEPT)], now_ms=2)
    assert share.start_offset == 4


@pytest.mark.parametrize(
    ("batches", "error", "message"),
    [
        ([ack(3, 2, ACCEPT)], ErrorCode.INVALID_REQUEST, "greater than last offset"),
        ([ack(0, 2, ACCEPT), ack(2, 3, ACCEPT)], ErrorCode.INVALID_REQUEST, "overlap"),
        ([ack(0, 2, ACCEPT, ACCEPT)], ErrorCode.INVALID_REQUEST, "Size of acknowledge types"),
        ([ack(0, 0, 7)], ErrorCode.INVALID_REQUEST, "Invalid acknowledge type"),
        ([ack(5, 6, ACCEPT)], ErrorCode.INVALID_REQUEST, "past acquired records"),
        ([ack(3, 5, ACCEPT)], ErrorCode.INVALID_REQUEST, "past acquired records"),
    ],
)
def test_malformed_acknowledgements_are_refused(
    batches: list[AcknowledgementBatch], error: ErrorCode, message: str
) -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 4, now_ms=0)
    with pytest.raises(AcknowledgeError, match=message) as refused:
        share.acknowledge("a", batches, now_ms=1)
    assert refused.value.error == error


def test_a_refused_acknowledgement_changes_nothing() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 2, now_ms=0)
    share.acknowledge("a", [ack(1, 1, ACCEPT)], now_ms=1)
    before = states(share)
    with pytest.raises(AcknowledgeError) as refused:
        share.acknowledge("a", [ack(0, 0, ACCEPT), ack(1, 1, ACCEPT)], now_ms=2)
    assert refused.value.error == ErrorCode.INVALID_RECORD_STATE
    assert states(share) == before


# ---- property: random members, fetches, acknowledgements and expiries ----------------------

MEMBERS = ("a", "b", "c")
Step = tuple[str, str, int, int, int]  # action, member, three numbers
_members = st.sampled_from(MEMBERS)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("fetch"), _members, st.integers(1, 4), st.just(0), st.just(0)),
        st.tuples(
            st.just("ack"),
            _members,
            st.integers(0, 30),
            st.integers(0, 3),
            st.sampled_from([int(ACCEPT), int(RELEASE), int(REJECT)]),
        ),
        st.tuples(st.just("expire"), st.just(""), st.integers(0, 3000), st.just(0), st.just(0)),
        st.tuples(st.just("close"), _members, st.just(0), st.just(0), st.just(0)),
    ),
    max_size=60,
)


def _fetch(share: SharePartition, member: str, size: int, now: int) -> None:
    available = share.available_offsets(size)
    if available:
        share.acquire(member, available, now)
    elif share.can_acquire_new():
        share.acquire_new(member, share.end_offset, share.end_offset + size - 1, now)


def _acknowledge(
    share: SharePartition, member: str, batch: AcknowledgementBatch, now: int
) -> list[int]:
    """The offsets this acknowledgement settled (none if refused, which changes nothing)."""
    before = states(share)
    try:
        share.acknowledge(member, [batch], now)
    except AcknowledgeError:
        assert states(share) == before
        return []
    if batch.types[0] == RELEASE:
        return []
    return [o for o in range(batch.first_offset, batch.last_offset + 1) if o in before]


@settings(max_examples=200, deadline=None)
@given(_steps)
def test_no_record_is_settled_twice_and_every_offset_is_settled_or_in_flight(
    steps: list[Step],
) -> None:
    share = SharePartition(0, ShareLimits(3, 12, 1000))
    settled: set[int] = set()
    now = 0
    for action, member, first, length, kind in steps:
        now += 10
        if action == "fetch":
            _fetch(share, member, first, now)
        elif action == "ack":
            done = _acknowledge(share, member, ack(first, first + length, kind), now)
            assert settled.isdisjoint(done)
            settled.update(done)
        elif action == "expire":
            now += first
            share.expire_locks(now)
        else:
            share.release_member(member)
        assert {o for o, _ in share.records()} == set(range(share.start_offset, share.end_offset))
        for offset, record in share.records():
            assert offset not in settled or record.state in FINISHED
            assert record.delivery_count <= 3
            assert (record.state == RecordState.ACQUIRED) == (record.member_id is not None)
    assert all(offset < share.end_offset for offset in settled)


# ---- stored state -------------------------------------------------------------------------


def test_stored_runs_restore_the_same_state_with_acquired_records_available() -> None:
    share = SharePartition(0, LIMITS)
    share.acquire_new("a", 0, 5, now_ms=0)
    share.acknowledge("a", [ack(1, 4, REJECT, RELEASE, ACCEPT, ACCEPT)], now_ms=1)
    runs = share.durable_runs()
    assert runs == [
        (0, 0, RecordState.AVAILABLE, 1),  # acquired: stored as available
        (1, 1, RecordState.ARCHIVED, 1),
        (2, 2, RecordState.AVAILABLE, 1),
        (3, 4, RecordState.ACKNOWLEDGED, 1),
        (5, 5, RecordState.AVAILABLE, 1),
    ]
    restored = SharePartition.restored(share.start_offset, runs, LIMITS)
    assert (restored.start_offset, restored.end_offset) == (0, 6)
    assert restored.available_offsets(10) == [0, 2, 5]
    assert restored.durable_runs() == runs


def test_share_snapshot_records_round_trip() -> None:
    key = ShareStateKey("workers", uuid.UUID(int=7), 3)
    snapshot = ShareSnapshot(0, 1, 2, 100, (StateBatch(100, 104, 0, 2), StateBatch(105, 105, 4, 5)))
    key_bytes, value_bytes = encode_key(key), encode_snapshot(snapshot)
    assert key_bytes[:2] == b"\x00\x00"  # record type 0: ShareSnapshot
    assert value_bytes[:2] == b"\x00\x00"  # value version 0
    assert decode_key(key_bytes) == key
    assert decode_snapshot(value_bytes) == snapshot
    assert coordinator_key(key) == "workers:AAAAAAAAAAAAAAAAAAAABw:3"  # Kafka's Uuid.toString
    with pytest.raises(RecordFormatError):
        decode_snapshot(value_bytes[:-3])
