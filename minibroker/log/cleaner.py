"""Log compaction for `cleanup.policy=compact` (and `compact,delete`) topics: Kafka's LogCleaner
at small scale, for both storage backends.

One pass over a log (`clean_log`), run from the broker's periodic timer every
`log.cleaner.backoff.ms` when `log.cleaner.enable` is true:

1. The cleanable range ends at the first uncleanable offset: the active segment's base offset,
   or earlier the base offset of the first segment with a record younger than
   `min.compaction.lag.ms`. Only closed segments wholly below it are cleaned.
2. The dirty part starts at the first dirty offset (where the previous pass stopped; kept in
   memory, so after a restart the whole log counts as dirty once). Nothing happens unless
   dirty bytes / (clean + dirty bytes) >= `min.cleanable.dirty.ratio`.
3. An offset map, key -> last offset, is built over the dirty part. Every cleanable segment
   is then copied keeping a record only if no later offset holds its key; a tombstone (null
   value) also goes once its segment is older than `delete.retention.ms`. Records without a
   key go, as Kafka's cleaner discards them.
4. Transactional and control batches are kept whole and their keys do not enter the map
   (simpler than Kafka, which drops aborted data and, past `delete.retention.ms`, the markers
   of transactions left empty): a committed transactional record therefore never removes an
   older non-transactional one, and nothing aborted can hide a live value.
5. A batch that loses records is rewritten with its base offset, last offset delta (so
   producer state stays consistent, as Kafka's `filterTo`), base timestamp and the retained
   records' bytes; offsets stay where they were, leaving gaps. A batch that loses them all
   goes. Consecutive segments are grouped into one cleaned segment while their sizes fit in
   `segment.bytes`; each cleaned segment gets fresh indexes, and replaces its group the way
   Kafka swaps segments (files: `.cleaned`, then `.swap`, old files `.deleted`, then renamed;
   an interrupted swap is completed when the log is opened, see partition.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

from minibroker.records.batch import (
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    write_crc,
)
from minibroker.records.compression import NONE, compress
from minibroker.records.records import read_varint, read_varlong, records_region

from .batch import parse_header
from .segment import LogSegment
from .segmented import SegmentedLog

log = logging.getLogger(__name__)

_INT32_MAX = 2147483647
_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class RawRecord:
    """One record of a batch, as its bytes, with what the cleaner decides on."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    is_tombstone: bool
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class CleanerStats:
    segments_cleaned: int
    bytes_before: int
    bytes_after: int
    records_removed: int


def iter_raw_records(batch: bytes, header: BatchHeader) -> Iterator[RawRecord]:
    """The records of a stored (validated) batch, each with its own bytes kept as they are."""
    buf, pos, end = records_region(batch, header, _MAX_DECOMPRESSED_BYTES)
    view = memoryview(buf)
    for _ in range(header.records_count):
        start = pos
        length, pos = read_varint(view, pos)
        record_end = pos + length
        timestamp_delta, pos = read_varlong(view, pos + 1)  # after the attributes byte
        offset_delta, pos = read_varint(view, pos)
        key_length, pos = read_varint(view, pos)
        key = None if key_length < 0 else bytes(view[pos : pos + key_length])
        pos += max(key_length, 0)
        value_length, pos = read_varint(view, pos)
        yield RawRecord(
            offset_delta, timestamp_delta, key, value_length < 0, bytes(view[start:record_end])
        )
        pos = record_end
    assert pos <= end


def rebuild_batch(header: BatchHeader, kept: list[RawRecord]) -> bytes:
    """The batch holding only `kept`: same base offset, last offset delta, base timestamp,
    producer fields and codec; max timestamp recomputed unless LogAppendTime."""
    body = b"".join(record.data for record in kept)
    if header.compression != NONE:
        body = compress(header.compression, body)
    max_timestamp = header.max_timestamp
    if header.timestamp_type != TIMESTAMP_LOG_APPEND_TIME:
        max_timestamp = header.base_timestamp + max(r.timestamp_delta for r in kept)
    batch = bytearray(
        HEADER_STRUCT.pack(
            header.base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            header.partition_leader_epoch,
            header.magic,
            0,
            header.attributes,
            header.last_offset_delta,
            header.base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            len(kept),
        )
    )
    batch += body
    write_crc(batch)
    return bytes(batch)


# -- one pass over a log -------------------------------------------------------------------


def clean_log(target: SegmentedLog, now_ms: int) -> CleanerStats | None:
    """Compact `target` if its policy and dirty ratio ask for it; None if nothing was done."""
    config = target.config
    if "compact" not in config.cleanup_policy.split(",") or target.storage_error is not None:
        return None
    closed = target.closed_segments()
    first_dirty = max(target.first_dirty_offset, target.log_start_offset)
    first_uncleanable = _first_uncleanable_offset(
        target, [s for s in closed if s.next_offset > first_dirty], now_ms
    )
    cleanable = [s for s in closed if s.next_offset <= first_uncleanable]
    dirty = [s for s in cleanable if s.next_offset > first_dirty]
    dirty_bytes = sum(s.size for s in dirty)
    total_bytes = sum(s.size for s in cleanable)
    if not dirty_bytes or dirty_bytes / total_bytes < config.min_cleanable_dirty_ratio:
        return None
    latest = _offset_map(dirty, first_dirty)
    cleaned_up_to = cleanable[-1].next_offset
    stats = _Counts()
    for group in _group_by_size(cleanable, config.segment_bytes):
        cleaned = target.new_cleaned_segment(group[0].base_offset, now_ms)
        for segment in group:
            horizon_passed = now_ms - segment.largest_timestamp > config.delete_retention_ms
            for batch in _cleaned_batches(segment, latest, horizon_passed, stats):
                cleaned.append(batch, parse_header(batch), now_ms)
        cleaned.on_become_inactive()
        cleaned.last_modified_ms = group[-1].last_modified_ms
        stats.before += sum(s.size for s in group)
        stats.after += cleaned.size
        target.replace_segments(group, cleaned)
    target.first_dirty_offset = max(first_dirty, cleaned_up_to)
    log.info(
        "%s-%d cleaned: %d segments, %d -> %d bytes, %d records removed",
        target.topic,
        target.partition,
        len(cleanable),
        stats.before,
        stats.after,
        stats.removed,
    )
    return CleanerStats(len(cleanable), stats.before, stats.after, stats.removed)


@dataclasses.dataclass
class _Counts:
    before: int = 0
    after: int = 0
    removed: int = 0


def _first_uncleanable_offset(target: SegmentedLog, dirty: list[LogSegment], now_ms: int) -> int:
    """The log end (only closed segments are ever cleaned), or the first dirty segment still
    within `min.compaction.lag.ms` (its newest record is too young to be compacted away)."""
    lag_ms = target.config.min_compaction_lag_ms
    for segment in dirty:
        if lag_ms > 0 and now_ms - segment.largest_timestamp < lag_ms:
            return segment.base_offset
    return target.log_end_offset


def _batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, bytes]]:
    for position, header in segment.iter_headers(0):
        yield header, segment.read_batch_at(position, header)


def _compactable(header: BatchHeader) -> bool:
    return not (header.is_control or header.is_transactional)


def _offset_map(dirty: list[LogSegment], first_dirty: int) -> dict[bytes, int]:
    """key -> its last offset in the dirty part (keys of non-transactional records only)."""
    latest: dict[bytes, int] = {}
    for segment in dirty:
        for header, batch in _batches(segment):
            if header.last_offset < first_dirty or not _compactable(header):
                continue
            for record in iter_raw_records(batch, header):
                if record.key is not None:
                    latest[record.key] = header.base_offset + record.offset_delta
    return latest


def _cleaned_batches(
    segment: LogSegment, latest: dict[bytes, int], horizon_passed: bool, counts: _Counts
) -> Iterator[bytes]:
    for header, batch in _batches(segment):
        if not _compactable(header):
            yield batch
            continue
        records = list(iter_raw_records(batch, header))
        kept = [
            record
            for record in records
            if record.key is not None
            and header.base_offset + record.offset_delta >= latest.get(record.key, -1)
            and not (record.is_tombstone and horizon_passed)
        ]
        counts.removed += len(records) - len(kept)
        if len(kept) == len(records):
            yield batch
        elif kept:
            yield rebuild_batch(header, kept)


def _group_by_size(segments: list[LogSegment], max_bytes: int) -> Iterator[list[LogSegment]]:
    """Consecutive segments whose sizes add up to at most `max_bytes` and whose offsets fit
    one segment's 32-bit relative offsets (Kafka's groupSegmentsBySize)."""
    group: list[LogSegment] = []
    size = 0
    for segment in segments:
        fits = (
            group
            and size + segment.size <= max_bytes
            and segment.next_offset - 1 - group[0].base_offset <= _INT32_MAX
        )
        if group and not fits:
            yield group
            group, size = [], 0
        group.append(segment)
        size += segment.size
    if group:
        yield group
