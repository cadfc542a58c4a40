"""The state of one share partition (KIP-932), as Kafka 4.3's `SharePartition` keeps it.

Records between the share-partition start offset (SPSO, `start_offset`) and `end_offset` (one
past the last record ever acquired: Kafka's SPEO + 1) are in flight, each in a state:

    AVAILABLE     may be acquired (again) by any member
    ACQUIRED      delivered to one member, locked until it acknowledges or the lock expires
    ACKNOWLEDGED  accepted: done
    ARCHIVED      rejected, a gap, past the delivery count limit, or skipped: done

Acquiring a record counts a delivery. A released record (RELEASE, an expired lock, the
member's share session closing) becomes AVAILABLE again, or ARCHIVED once its delivery count
reached the limit (`share.delivery.count.limit`): a poison record stops being redelivered.
The SPSO moves past every finished record at the front, which also drops them. At most
`share.partition.max.record.locks` records are in flight: beyond that nothing new is acquired
(a batch is acquired whole, or, in record-limit mode, only the records the room left allows:
the rest of the batch is in flight AVAILABLE, delivered by a later fetch).

An acknowledgement names offset ranges with one type for the whole range or one per offset
(GAP 0, ACCEPT 1, RELEASE 2, REJECT 3, RENEW 4); it applies to a partition entirely or not at
all: a malformed one is INVALID_REQUEST, one naming a record this member has not acquired
INVALID_RECORD_STATE, with Kafka's messages. Offsets below the SPSO are skipped (already
finished), as Kafka skips them.

Nothing here reads the log or the clock: callers pass the offsets a fetch found and `now_ms`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum

from minibroker.protocol.errors import ErrorCode


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


FINISHED = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
# A stored run of in-flight records: first offset, last offset, state, delivery count.
DurableRun = tuple[int, int, RecordState, int]


@dataclass(frozen=True, slots=True)
class ShareLimits:
    delivery_count_limit: int
    max_in_flight: int
    lock_duration_ms: int
    renew_enabled: bool = True


@dataclass(slots=True)
class InFlightRecord:
    state: RecordState
    delivery_count: int
    member_id: str | None
    lock_expires_ms: int


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]


class AcknowledgeError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class SharePartition:
    def __init__(self, start_offset: int, limits: ShareLimits) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.limits = limits
        # Every offset in [start_offset, end_offset), in ascending order.
        self._records: dict[int, InFlightRecord] = {}
        self.changes = 0  # counts changes of state, so that a store writes only new ones

    @classmethod
    def restored(
        cls, start_offset: int, runs: Iterable[DurableRun], limits: ShareLimits
    ) -> SharePartition:
        """A share partition as its stored state left it: every in-flight record AVAILABLE,
        ACKNOWLEDGED or ARCHIVED with its delivery count (nothing is acquired after a
        restart: what was acquired is available again)."""
        share = cls(start_offset, limits)
        for first, last, state, count in runs:
            for offset in range(max(first, share.end_offset), last + 1):
                share._records[offset] = InFlightRecord(RecordState(state), count, None, 0)
            share.end_offset = max(share.end_offset, last + 1)
        for offset in range(start_offset, share.end_offset):
            share._records.setdefault(offset, InFlightRecord(RecordState.AVAILABLE, 0, None, 0))
        share._records = dict(sorted(share._records.items()))
        share._advance_start()
        return share

    def durable_runs(self) -> list[DurableRun]:
        """The in-flight records as stored: runs of consecutive offsets with one state and
        delivery count, an ACQUIRED record stored as AVAILABLE."""
        runs: list[DurableRun] = []
        for offset, record in self._records.items():
            state = RecordState.AVAILABLE if record.state == RecordState.ACQUIRED else record.state
            last = runs[-1] if runs else None
            if (
                last is not None
                and last[1] + 1 == offset
                and last[2:] == (state, record.delivery_count)
            ):
                runs[-1] = (last[0], offset, state, record.delivery_count)
            else:
                runs.append((offset, offset, state, record.delivery_count))
        return runs

    # ---- reading ---------------------------------------------------------------------------

    def records(self) -> Iterator[tuple[int, InFlightRecord]]:
        return iter(self._records.items())

    @property
    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    @property
    def room(self) -> int:
        """How many more records may enter flight (`share.partition.max.record.locks`)."""
        return self.limits.max_in_flight - self.in_flight

    def can_acquire_new(self) -> bool:
        return self.room > 0

    def has_available(self) -> bool:
        return any(r.state == RecordState.AVAILABLE for r in self._records.values())

    # ---- acquiring -------------------------------------------------------------------------

    def available_offsets(self, limit: int) -> list[int]:
        """Up to `limit` AVAILABLE in-flight offsets (released or expired), lowest first."""
        found: list[int] = []
        for offset, record in self._records.items():
            if len(found) >= limit:
                break
            if record.state == RecordState.AVAILABLE:
                found.append(offset)
        return found

    def acquire(self, member_id: str, offsets: Iterable[int], now_ms: int) -> None:
        """Acquire AVAILABLE in-flight records (from `available_offsets`)."""
        for offset in offsets:
            self._lock(self._records[offset], member_id, now_ms)

    def acquire_new(
        self,
        member_id: str,
        first_offset: int,
        last_offset: int,
        now_ms: int,
        last_acquired: int | None = None,
    ) -> None:
        """Acquire the records of a batch read from the log at `end_offset` or later (later:
        the log start moved past what was in flight), or only those up to `last_acquired`:
        the rest of the batch enters flight AVAILABLE with no delivery yet, tracked offset by
        offset (Kafka's record-limit mode, `InFlightBatch.maybeInitializeOffsetStateUpdate`)."""
        through = last_offset if last_acquired is None else last_acquired
        added = self._add_new(first_offset, last_offset)
        for record in added[: through - first_offset + 1]:
            self._lock(record, member_id, now_ms)

    def archive_new(self, first_offset: int, last_offset: int) -> None:
        """Records read from the log that are never delivered (control records; aborted
        transactions under read_committed): archived as they enter."""
        for record in self._add_new(first_offset, last_offset):
            record.state = RecordState.ARCHIVED
        self._advance_start()

    def _add_new(self, first_offset: int, last_offset: int) -> list[InFlightRecord]:
        if first_offset < self.end_offset:
            raise ValueError(f"offset {first_offset} is already in flight")
        if first_offset > self.end_offset:
            self.move_start_to(first_offset)
        added = []
        for offset in range(first_offset, last_offset + 1):
            record = InFlightRecord(RecordState.AVAILABLE, 0, None, 0)
            self._records[offset] = record
            added.append(record)
        self.end_offset = last_offset + 1
        return added

    def acquired_ranges(self, offsets: Iterable[int]) -> list[AcquiredRange]:
        """Consecutive offsets with one delivery count, as ShareFetch's AcquiredRecords."""
        ranges: list[AcquiredRange] = []
        for offset in offsets:
            count = self._records[offset].delivery_count
            last = ranges[-1] if ranges else None
            if last is not None and last.last_offset + 1 == offset and last.delivery_count == count:
                ranges[-1] = AcquiredRange(last.first_offset, offset, count)
            else:
                ranges.append(AcquiredRange(offset, offset, count))
        return ranges

    def _lock(self, record: InFlightRecord, member_id: str, now_ms: int) -> None:
        self.changes += 1
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.member_id = member_id
        record.lock_expires_ms = now_ms + self.limits.lock_duration_ms

    # ---- acknowledging ---------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: list[AcknowledgementBatch], now_ms: int) -> None:
        """Apply every batch or none (AcknowledgeError)."""
        check_batches(batches)
        updates = [
            (offset, kind)
            for batch in batches
            for offset, kind in self._checked_offsets(member_id, batch)
        ]
        for offset, kind in updates:
            self._apply(self._records[offset], kind, now_ms)
        self._advance_start()

    def _checked_offsets(
        self, member_id: str, batch: AcknowledgementBatch
    ) -> list[tuple[int, AcknowledgeType]]:
        if batch.first_offset >= self.end_offset:
            raise AcknowledgeError(
                ErrorCode.INVALID_REQUEST,
                "Batch record not found. The first offset in request is past acquired records.",
            )
        if batch.last_offset >= self.end_offset:
            raise AcknowledgeError(
                ErrorCode.INVALID_REQUEST,
                "Batch record not found. The last offset in request is past acquired records.",
            )
        checked = []
        for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
            record = self._records[offset]
            if record.state != RecordState.ACQUIRED:
                raise AcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE,
                    "The record state is invalid. The acknowledgement of delivery could not be "
                    "completed.",
                )
            if record.member_id != member_id:
                raise AcknowledgeError(
                    ErrorCode.INVALID_RECORD_STATE, "Member is not the owner of batch record"
                )
            checked.append((offset, _type_at(batch, offset)))
        return checked

    def _apply(self, record: InFlightRecord, kind: AcknowledgeType, now_ms: int) -> None:
        if kind == AcknowledgeType.ACCEPT:
            self._finish(record, RecordState.ACKNOWLEDGED)
        elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
            self._finish(record, RecordState.ARCHIVED)
        elif kind == AcknowledgeType.RELEASE:
            self._release(record)
        else:
            record.lock_expires_ms = now_ms + self.limits.lock_duration_ms

    # ---- releasing -------------------------------------------------------------------------

    def release_member(self, member_id: str) -> int:
        """Release every record `member_id` holds (its share session closed or it left).

        As Kafka's SharePartition does, such records count as fetched but never delivered to
        the application: their delivery count goes back down by one, and they are made
        available again even at the delivery count limit."""
        held = [
            r
            for r in self._records.values()
            if r.state == RecordState.ACQUIRED and r.member_id == member_id
        ]
        for record in held:
            self.changes += 1
            record.delivery_count -= 1
            record.state = RecordState.AVAILABLE
            record.member_id = None
        self._advance_start()
        return len(held)

    def expire_locks(self, now_ms: int) -> int:
        """Release every record whose acquisition lock expired at `now_ms`."""
        expired = [
            r
            for r in self._records.values()
            if r.state == RecordState.ACQUIRED and r.lock_expires_ms <= now_ms
        ]
        for record in expired:
            self._release(record)
        self._advance_start()
        return len(expired)

    def next_lock_expiry_ms(self) -> int | None:
        deadlines = [
            r.lock_expires_ms for r in self._records.values() if r.state == RecordState.ACQUIRED
        ]
        return min(deadlines) if deadlines else None

    def _release(self, record: InFlightRecord) -> None:
        self.changes += 1
        if record.delivery_count >= self.limits.delivery_count_limit:
            self._finish(record, RecordState.ARCHIVED)
        else:
            record.state = RecordState.AVAILABLE
            record.member_id = None

    def _finish(self, record: InFlightRecord, state: RecordState) -> None:
        self.changes += 1
        record.state = state
        record.member_id = None

    # ---- the start offset ------------------------------------------------------------------

    def move_start_to(self, offset: int) -> None:
        """The SPSO jumps to `offset` (log start moved, offsets reset): records below it are
        dropped whatever their state."""
        self.changes += 1
        for dropped in range(self.start_offset, min(offset, self.end_offset)):
            del self._records[dropped]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)

    def _advance_start(self) -> None:
        while self.start_offset < self.end_offset:
            if self._records[self.start_offset].state not in FINISHED:
                return
            del self._records[self.start_offset]
            self.start_offset += 1


def check_batches(batches: list[AcknowledgementBatch]) -> None:
    """Kafka's checks of a partition's acknowledgement batches (INVALID_REQUEST)."""
    previous_last = -1
    for batch in batches:
        if batch.first_offset > batch.last_offset:
            _invalid("First offset of acknowledgement batch is greater than last offset.")
        if batch.first_offset <= previous_last:
            _invalid("Acknowledgement batches overlap or are not in ascending order.")
        size = batch.last_offset - batch.first_offset + 1
        if len(batch.types) not in (1, size):
            _invalid("Size of acknowledge types must be 1 or equal to the number of offsets.")
        if any(kind not in AcknowledgeType._value2member_map_ for kind in batch.types):
            _invalid("Invalid acknowledge type.")
        previous_last = batch.last_offset


def _invalid(message: str) -> None:
    raise AcknowledgeError(ErrorCode.INVALID_REQUEST, message)


def _type_at(batch: AcknowledgementBatch, offset: int) -> AcknowledgeType:
    if len(batch.types) == 1:
        return AcknowledgeType(batch.types[0])
    return AcknowledgeType(batch.types[offset - batch.first_offset])
