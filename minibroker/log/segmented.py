"""SegmentedLog: Kafka's UnifiedLog over a list of LogSegments, independent of where bytes live.

The file-backed and memory-backed partition logs differ only in how a segment's blobs are made
and removed, so both run exactly this code for offsets, rolls, reads, retention and truncation.
"""

from __future__ import annotations

import bisect
import functools
import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Concatenate, NoReturn, ParamSpec, TypeVar

from minibroker.records.batch import WritableBuffer

from .base import LogOfflineError, OffsetOutOfRange, RecordBatchTooLarge, StoredBatches
from .batch import parse_header, stamp
from .config import LogConfig
from .segment import LogSegment
from .syncs import GroupedSyncs
from .txnindex import AbortedTxn, AbortedTxnTracker

log = logging.getLogger(__name__)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def storage_operation(
    method: Callable[Concatenate[SegmentedLog, _P], _R],
) -> Callable[Concatenate[SegmentedLog, _P], _R]:
    """An operation that touches storage: refused once the log is offline, and any I/O error
    takes the log offline (its in-memory state may no longer match its files)."""

    def guarded(self: SegmentedLog, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if self.storage_error is not None:
            raise LogOfflineError(
                f"{self.topic}-{self.partition} is offline after a storage error: "
                f"{self.storage_error}"
            )
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            self.storage_error = exc
            log.error("%s-%d is now offline: %s", self.topic, self.partition, exc)
            if self.on_offline is not None:
                self.on_offline()
            raise LogOfflineError(f"{self.topic}-{self.partition}: {exc}") from exc

    functools.update_wrapper(guarded, method)
    return guarded


class SegmentedLog(ABC):
    def __init__(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig, now_ms: int
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.config = config
        self._segments: list[LogSegment] = []
        self._base_offsets: list[int] = []
        self._log_start_offset = 0
        self.recovery_point = 0
        self.unflushed_messages = 0
        self.oldest_unflushed_ms = now_ms
        # Called when the log start offset or the recovery point moves other than by retention
        # or flushing, so that the checkpoint files follow before the caller answers.
        self.on_checkpoint_needed: Callable[[], None] | None = None
        self.storage_error: OSError | None = None
        # Called when a storage error takes the log offline (fetchers must be told).
        self.on_offline: Callable[[], None] | None = None
        # Where the log cleaner's last pass stopped (cleaner.py); in memory only.
        self.first_dirty_offset = 0

    @abstractmethod
    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment: ...

    @abstractmethod
    def new_cleaned_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        """An empty segment the cleaner fills, not yet part of the log."""

    @abstractmethod
    def _swap_in(self, old: list[LogSegment], cleaned: LogSegment) -> None:
        """Make `cleaned` durable in place of `old` (the file log renames, as Kafka)."""

    @abstractmethod
    def delete(self, syncs: GroupedSyncs | None = None) -> None:
        """Remove the log and all its data (with `syncs`, durably once they complete)."""

    @abstractmethod
    def _segments_changed(self) -> None:
        """Hook: a segment was created or deleted (the file log syncs its directory on flush)."""

    # -- offsets and sizes ---------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset  # `_active`, inline: read by every fetch

    @property
    def size_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def _active(self) -> LogSegment:
        return self._segments[-1]

    def segments(self) -> list[tuple[int, int]]:
        return [(segment.base_offset, segment.size) for segment in self._segments]

    def segments_with_times(self) -> list[tuple[int, int, int]]:
        return [(s.base_offset, s.size, s.last_modified_ms) for s in self._segments]

    def _add_segment(self, segment: LogSegment) -> None:
        self._segments.append(segment)
        self._base_offsets.append(segment.base_offset)
        self._segments_changed()

    def _delete_oldest_segment(self) -> None:
        self._segments.pop(0).delete()
        self._base_offsets.pop(0)
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self._segments_changed()

    def _segment_index_for(self, offset: int) -> int:
        return max(bisect.bisect_right(self._base_offsets, offset) - 1, 0)

    def closed_segments(self) -> list[LogSegment]:
        return self._segments[:-1]

    @storage_operation
    def replace_segments(self, old: list[LogSegment], cleaned: LogSegment) -> None:
        """Put a cleaned segment in place of the consecutive closed segments it was made of."""
        first = self._segments.index(old[0])
        assert self._segments[first : first + len(old)] == old and old[-1] is not self._active
        self._swap_in(old, cleaned)
        self._segments[first : first + len(old)] = [cleaned]
        self._base_offsets[first : first + len(old)] = [cleaned.base_offset]
        self._segments_changed()
        self.rebuild_txn_indexes(first)

    # -- append and roll -----------------------------------------------------------------------

    @storage_operation
    def append(self, batch: WritableBuffer, leader_epoch: int, now_ms: int) -> int:
        if len(batch) > self.config.segment_bytes:
            raise RecordBatchTooLarge(
                f"batch of {len(batch)} bytes exceeds segment.bytes {self.config.segment_bytes}"
            )
        active = self._segments[-1]  # `_active`, inline: once per append
        base_offset = active.next_offset
        stamp(batch, base_offset, leader_epoch)
        header = parse_header(batch)
        if active.should_roll(self.config, header, now_ms):
            self.roll(now_ms)
            active = self._active
        active.append(batch, header, now_ms)
        if not self.unflushed_messages:
            self.oldest_unflushed_ms = now_ms
        self.unflushed_messages += header.last_offset_delta + 1
        if self.config.fsync_on_ack or self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        return base_offset

    def append_plain(
        self,
        batch: WritableBuffer,
        leader_epoch: int,
        now_ms: int,
        last_offset_delta: int,
        max_timestamp: int,
    ) -> int:
        """`append` for a caller that already read the batch's last offset delta and max
        timestamp (the native Produce path): the common append (the log online, no roll, index
        entry, flush or fsync due) is written through `LogSegment.append_in_place`, without
        the storage guard's wrapper, a header parse or the roll checks' calls; any other goes
        through `append`. The same result, state and errors as `append`."""
        config = self.config
        if (
            self.storage_error is not None
            or config.fsync_on_ack
            or self.unflushed_messages + last_offset_delta + 1 >= config.flush_messages
        ):
            return self.append(batch, leader_epoch, now_ms)
        try:
            base_offset = self._segments[-1].append_in_place(  # `_active`, inline
                batch, leader_epoch, last_offset_delta, max_timestamp, now_ms, config
            )
        except OSError as exc:
            self._storage_failed(exc)
        if base_offset < 0:
            return self.append(batch, leader_epoch, now_ms)
        if not self.unflushed_messages:
            self.oldest_unflushed_ms = now_ms
        self.unflushed_messages += last_offset_delta + 1
        return base_offset

    @storage_operation
    def _storage_failed(self, exc: OSError) -> NoReturn:
        """Raise `exc` through the storage guard: the log goes offline exactly as when an
        operation it wraps fails (LogOfflineError)."""
        raise exc

    @storage_operation
    def roll(self, now_ms: int) -> None:
        """Close the active segment and start a new one at the log end (no-op if it is empty)."""
        if self._active.size == 0:
            return
        self._active.on_become_inactive()
        self._add_segment(self._new_segment(self.log_end_offset, now_ms))

    # -- reads ---------------------------------------------------------------------------------

    @storage_operation
    def read(self, offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        found = self._read_batches(offset, max_bytes, upper_offset)
        return b"" if found is None else found.data()

    @storage_operation
    def read_batches(
        self, offset: int, max_bytes: int, upper_offset: int | None = None
    ) -> StoredBatches | None:
        return self._read_batches(offset, max_bytes, upper_offset)

    def _read_batches(
        self, offset: int, max_bytes: int, upper_offset: int | None
    ) -> StoredBatches | None:
        end = self.log_end_offset
        if offset < self._log_start_offset or offset > end:
            raise OffsetOutOfRange(
                f"offset {offset} outside [{self._log_start_offset}, {end}] "
                f"of {self.topic}-{self.partition}"
            )
        # (no `min`/`max` builtins, `_segment_index_for` inline: this runs for every fetch read)
        upper = end if upper_offset is None or upper_offset > end else upper_offset
        first = bisect.bisect_right(self._base_offsets, offset) - 1
        for segment in self._segments[first if first > 0 else 0 :]:
            if offset >= upper or segment.base_offset >= upper:
                break
            found = segment.read(offset, max_bytes, upper)
            if found is not None:
                return found
        return None

    @storage_operation
    def batch_for_timestamp(self, timestamp: int) -> bytes | None:
        for segment in self._segments:
            if segment.max_timestamp >= timestamp:
                found = segment.batch_for_timestamp(timestamp, self._log_start_offset)
                if found is not None:
                    return found
        return None

    @storage_operation
    def batch_with_max_timestamp(self) -> bytes | None:
        best: LogSegment | None = None
        for segment in self._segments:
            if best is None or segment.max_timestamp > best.max_timestamp:
                best = segment
        return None if best is None else best.batch_with_max_timestamp()

    # -- aborted transactions ------------------------------------------------------------------

    @storage_operation
    def append_aborted_txn(
        self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int
    ) -> None:
        index = self._active.txn_index
        created = not index.blob.exists()
        index.append(AbortedTxn(producer_id, first_offset, last_offset, last_stable_offset))
        if created:  # the segment's first entry created its file
            self._segments_changed()
        if self.recovery_point > last_offset:
            # The marker was flushed as it was appended: recovery will not rebuild this entry.
            index.flush()
            self._flush_directory()

    @storage_operation
    def collect_aborted_txns(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Kafka's `LocalLog.collectAbortedTransactions`: from the segment holding
        `start_offset`, until an entry's last stable offset reaches `upper_bound_offset`."""
        found: list[AbortedTxn] = []
        for segment in self._segments[self._segment_index_for(start_offset) :]:
            txns, complete = segment.txn_index.collect(start_offset, upper_bound_offset)
            found += txns
            if complete:
                break
        return found

    def rebuild_txn_indexes(self, first_position: int = 0) -> None:
        """Recompute the `.txnindex` of every segment from `first_position` on, replaying the
        batch headers from the oldest segment (a transaction may start segments earlier)."""
        tracker = AbortedTxnTracker()
        for position, segment in enumerate(self._segments):
            aborted = []
            for batch_position, header in segment.iter_headers(0):
                batch = segment.read_batch_at(batch_position, header) if header.is_control else None
                txn = tracker.on_batch(header, batch)
                if txn is not None:
                    aborted.append(txn)
            if position >= first_position:
                created = bool(aborted) and not segment.txn_index.blob.exists()
                segment.txn_index.reset(aborted)
                if created:
                    self._segments_changed()

    # -- truncation, deletion, retention -------------------------------------------------------

    def truncate_to(self, offset: int, now_ms: int | None = None) -> None:
        """Remove every batch holding an offset >= `offset` (whole batches)."""
        if offset >= self.log_end_offset:
            return
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset, now_ms)
            return
        while len(self._segments) > 1 and self._active.base_offset > offset:
            self._segments.pop().delete()
            self._base_offsets.pop()
            self._segments_changed()
        self._active.truncate_to(offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._set_log_start_offset(min(self._log_start_offset, self.log_end_offset))

    def truncate_fully_and_start_at(self, offset: int, now_ms: int | None = None) -> None:
        """Delete every segment and restart the log, empty, at `offset`."""
        for segment in self._segments:
            segment.delete()
        self._segments.clear()
        self._base_offsets.clear()
        self._add_segment(self._new_segment(offset, wall_clock_ms() if now_ms is None else now_ms))
        self.recovery_point = offset
        self._set_log_start_offset(offset)

    def delete_records_before(self, offset: int) -> int:
        if offset > self.log_end_offset:
            raise OffsetOutOfRange(
                f"offset {offset} is above the log end offset {self.log_end_offset} "
                f"of {self.topic}-{self.partition}"
            )
        if offset > self._log_start_offset:
            self._delete_segments_below_log_start(offset)
            self._set_log_start_offset(offset)
        return self._log_start_offset

    def _set_log_start_offset(self, offset: int) -> None:
        """Move the log start other than by retention, and have it checkpointed at once."""
        self._log_start_offset = offset
        if self.on_checkpoint_needed is not None:
            self.on_checkpoint_needed()

    def _delete_segments_below_log_start(self, log_start_offset: int) -> int:
        deleted = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= log_start_offset:
            self._delete_oldest_segment()
            deleted += 1
        return deleted

    def apply_retention(self, now_ms: int) -> int:
        """retention.ms and retention.bytes when cleanup.policy includes delete, and segments
        below the log start offset."""
        deleted = self._apply_time_and_size_retention(now_ms) if self.config.deletes else 0
        return deleted + self._delete_segments_below_log_start(self._log_start_offset)

    def _apply_time_and_size_retention(self, now_ms: int) -> int:
        deleted = 0
        retention_ms = self.config.retention_ms
        if retention_ms >= 0:
            while (
                len(self._segments) > 1
                and now_ms - self._segments[0].largest_timestamp > retention_ms
            ):
                self._delete_oldest_segment()
                deleted += 1
        if self.config.retention_bytes >= 0:
            excess = self.size_bytes - self.config.retention_bytes
            while len(self._segments) > 1 and excess >= self._segments[0].size:
                excess -= self._segments[0].size
                self._delete_oldest_segment()
                deleted += 1
        return deleted

    # -- durability and lifetime ---------------------------------------------------------------

    @storage_operation
    def flush(self) -> None:
        """fsync every segment that may hold unflushed data; the recovery point moves to the end."""
        for segment in self._segments[self._segment_index_for(self.recovery_point) :]:
            segment.flush()
        self._flush_directory()
        self.recovery_point = self.log_end_offset
        self.unflushed_messages = 0

    @abstractmethod
    def _flush_directory(self) -> None:
        """Hook: make created and deleted segment files durable."""

    @storage_operation
    def flush_if_due(self, now_ms: int) -> None:
        """flush.messages / flush.ms, and rolled segments not yet flushed (as Kafka flushes a
        segment after rolling it)."""
        if self.unflushed_messages and (
            self.unflushed_messages >= self.config.flush_messages
            or now_ms - self.oldest_unflushed_ms >= self.config.flush_ms
        ):
            self.flush()
        elif self.recovery_point < self._active.base_offset:
            for segment in self._segments[self._segment_index_for(self.recovery_point) : -1]:
                segment.flush()
            self._flush_directory()
            self.recovery_point = self._active.base_offset

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for segment in self._segments:
            segment.update_config(config)

    def close(self) -> None:
        if self.storage_error is None:
            self._active.on_become_inactive()
            self.flush()
