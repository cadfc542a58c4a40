"""LogSegment: one `.log` with its `.index`, `.timeindex` and `.txnindex`, as Kafka's LogSegment
keeps them."""

from __future__ import annotations

from collections.abc import Iterator

from minibroker.records.batch import (
    BASE_OFFSET_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    PARTITION_LEADER_EPOCH_OFFSET,
    BatchHeader,
    WritableBuffer,
)

from .base import SCAN_CHUNK_BYTES, StoredBatches
from .batch import (
    INT32,
    INT64,
    SPAN,
    SPAN_PREFIX,
    batch_is_valid,
    batch_span,
    header_is_plausible,
    offset_after,
    parse_header,
)
from .blob import Blob
from .config import LogConfig
from .index import OffsetIndex, TimeIndex
from .txnindex import TransactionIndex

_HEADER_WALK_CHUNK = 16384  # header-only walks read little: a few headers per lookup
_INT32_MAX = 2147483647


def _holding_in(
    chunk: bytes, chunk_start: int, size: int, offset: int
) -> tuple[int, int, int] | None:
    """(position, base offset, size) of the batch holding `offset`, walking the headers in
    `chunk` (read at `chunk_start` of a log of `size` bytes); None when the chunk ends
    first or a header is not plausible (`LogSegment._spans` walks on, or reports it)."""
    relative, end = 0, len(chunk) - SPAN_PREFIX
    available = size - chunk_start
    unpack = SPAN.unpack_from
    while relative <= end:
        # `batch_span` inline (a dozen headers per read with the default index interval)
        base_offset, length, magic, last_offset_delta = unpack(chunk, relative)
        batch_size = length + LOG_OVERHEAD
        if (
            batch_size < HEADER_SIZE
            or batch_size > available - relative
            or magic != MAGIC_V2
            or last_offset_delta < 0
        ):
            return None
        if base_offset + last_offset_delta >= offset:
            return chunk_start + relative, base_offset, batch_size
        relative += batch_size
    return None


class CorruptSegmentError(Exception):
    """A segment's bytes do not hold a batch where its index or scan says one starts."""


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    def __init__(
        self,
        base_offset: int,
        log: Blob,
        offset_index: Blob,
        time_index: Blob,
        txn_index: Blob,
        config: LogConfig,
        *,
        now_ms: int,
        last_modified_ms: int | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.log = log
        self.offset_index = OffsetIndex(offset_index, base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(time_index, base_offset, config.segment_index_bytes)
        self.txn_index = TransactionIndex(txn_index, base_offset)
        self.index_interval_bytes = config.index_interval_bytes
        self.created_ms = now_ms
        self.last_modified_ms = now_ms if last_modified_ms is None else last_modified_ms
        self.bytes_since_last_index_entry = 0
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self._next_offset: int | None = base_offset if log.size == 0 else None
        self._rolling_base_timestamp: int | None = None

    # -- state ---------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.log.size

    @property
    def next_offset(self) -> int:
        """The offset after this segment's last batch (its base offset when empty)."""
        if self._next_offset is None:
            self.load_tail_state()
        assert self._next_offset is not None
        return self._next_offset

    @property
    def largest_timestamp(self) -> int:
        """What retention.ms compares with: the largest batch timestamp, else the file's mtime."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def update_config(self, config: LogConfig) -> None:
        self.index_interval_bytes = config.index_interval_bytes
        self.offset_index.max_entries = config.segment_index_bytes // 8
        self.time_index.max_entries = config.segment_index_bytes // 12

    def should_roll(self, config: LogConfig, batch: BatchHeader, now_ms: int) -> bool:
        """Kafka's LogSegment.shouldRoll, checked before appending `batch`."""
        size = self.log.size
        if size == 0:
            return False
        # (the header's `size` and `last_offset` properties inline here and in `_index_batch`:
        # once per append)
        return (
            size + batch.batch_length + LOG_OVERHEAD > config.segment_bytes
            or self._time_waited_for_roll(now_ms, batch.max_timestamp) > config.segment_ms
            or self.offset_index.is_full
            or self.time_index.is_full
            or batch.base_offset + batch.last_offset_delta - self.base_offset > _INT32_MAX
        )

    def _time_waited_for_roll(self, now_ms: int, batch_max_timestamp: int) -> int:
        if self._rolling_base_timestamp is None:
            self._rolling_base_timestamp = parse_header(
                self.log.read_at(HEADER_SIZE, 0)
            ).max_timestamp
        if self._rolling_base_timestamp >= 0:
            return batch_max_timestamp - self._rolling_base_timestamp
        return now_ms - self.created_ms

    # -- append --------------------------------------------------------------------------------

    def append(
        self, batch: bytes | bytearray | memoryview, header: BatchHeader, now_ms: int
    ) -> None:
        """Write a stamped batch at the end and index it; the log is written before its index."""
        position = self.log.size
        self.log.write_at(batch, position)
        if position == 0:
            self._rolling_base_timestamp = header.max_timestamp
        self._index_batch(header, position)
        self.last_modified_ms = now_ms

    def append_in_place(
        self,
        batch: WritableBuffer,
        leader_epoch: int,
        last_offset_delta: int,
        max_timestamp: int,
        now_ms: int,
        config: LogConfig,
    ) -> int:
        """`should_roll`, `stamp` and `append` in one, for a batch whose last offset delta and
        max timestamp the caller read (no header parse) that is not this segment's first,
        rolls nothing and is due no index entry: the common append. Its base offset, or -1
        (nothing stamped or written) for any other batch, and while the segment's tail state
        or rolling base timestamp are still to be read, which the caller then appends as
        always."""
        base_offset = self._next_offset
        rolling_base = self._rolling_base_timestamp
        if base_offset is None or rolling_base is None:
            return -1
        position = self.log.size
        size = len(batch)
        last_offset = base_offset + last_offset_delta
        if (
            position == 0
            or self.bytes_since_last_index_entry > self.index_interval_bytes
            or position + size > config.segment_bytes
            or last_offset - self.base_offset > _INT32_MAX
            or (max_timestamp - rolling_base if rolling_base >= 0 else now_ms - self.created_ms)
            > config.segment_ms
            # (`is_full` of both, inline)
            or self.offset_index.entries >= self.offset_index.max_entries
            or self.time_index.entries >= self.time_index.max_entries
        ):
            return -1
        # `stamp`, inline: once per append
        INT64.pack_into(batch, BASE_OFFSET_OFFSET, base_offset)
        INT32.pack_into(batch, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)
        self.log.write_at(batch, position)
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        self.bytes_since_last_index_entry += size
        self._next_offset = last_offset + 1
        self.last_modified_ms = now_ms
        return base_offset

    def _index_batch(self, header: BatchHeader, position: int) -> None:
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += header.batch_length + LOG_OVERHEAD
        self._next_offset = header.base_offset + header.last_offset_delta + 1

    def on_become_inactive(self) -> None:
        """Index the largest timestamp, as Kafka does when a segment is rolled or closed."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.offset_index.write_pending()
        self.time_index.write_pending()

    # -- reads ---------------------------------------------------------------------------------

    def iter_headers(self, start: int) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `start`, reading the log in chunks."""
        end = self.log.size
        position = start
        chunk, chunk_start = b"", start
        while position < end:
            relative = position - chunk_start
            if relative + HEADER_SIZE > len(chunk):
                chunk = self.log.read_at(min(_HEADER_WALK_CHUNK, end - position), position)
                chunk_start, relative = position, 0
            if relative + HEADER_SIZE > len(chunk):
                raise CorruptSegmentError(f"torn batch header at position {position}")
            header = parse_header(chunk, relative)
            if not header_is_plausible(header, end - position):
                raise CorruptSegmentError(f"no valid batch at position {position}")
            yield position, header
            position += header.size

    def position_of(self, offset: int) -> int | None:
        """Position of the first batch whose last offset is >= `offset`, via the offset index."""
        found = self._batch_holding(offset)
        return None if found is None else found[0]

    def _batch_holding(self, offset: int) -> tuple[int, int, int] | None:
        """(position, base offset, size) of the batch holding `offset`."""
        if offset >= self.next_offset:
            return None
        for position, base_offset, last_offset, size in self._spans(
            self.offset_index.lookup(offset)
        ):
            if last_offset >= offset:
                return position, base_offset, size
        return None

    def read(self, offset: int, max_bytes: int, upper_offset: int) -> StoredBatches | None:
        """Whole batches from the one holding `offset`: at least one, then while within max_bytes;
        none whose base offset is >= upper_offset. Their bounds come from the offset index and
        a few batch headers; the bytes of a large read are not read (a FileRegion for a
        file)."""
        if offset >= self.next_offset:
            return None
        # The walk to the batch holding `offset` in one chunk read from its index entry, which
        # also holds a small batch and the next one's header: a read of one batch (KIP-74's
        # first batch past a small limit, as consumers polling one message at a time get)
        # needs no other read.
        walk_from = self.offset_index.lookup(offset)
        size = self.log.size
        length = size - walk_from
        chunk = self.log.read_at(
            _HEADER_WALK_CHUNK if length > _HEADER_WALK_CHUNK else length, walk_from
        )
        found = _holding_in(chunk, walk_from, size, offset) or self._batch_holding(offset)
        if found is None:
            return None
        start, first_base_offset, first_size = found
        if first_base_offset >= upper_offset:
            return None
        if max_bytes <= first_size:
            one = self._one_batch(chunk, walk_from, size, start, first_size)
            if one is not None:
                return one
        stop = start + max(max_bytes, first_size)
        if upper_offset < self.next_offset:
            stop = min(stop, self._position_of_first_batch_from(upper_offset))
        if stop >= self.size:
            end, next_offset = self.size, self.next_offset
        else:
            end, next_offset = self._last_boundary_within(start, stop)
        return StoredBatches(self.log.region(start, end - start), next_offset)

    def _one_batch(
        self, chunk: bytes, chunk_start: int, size: int, start: int, batch_size: int
    ) -> StoredBatches | None:
        """`read`'s answer of the one batch at `start` from `chunk` (read at `chunk_start` of
        the log's `size` bytes): its bytes and the next batch's base offset (the segment's
        next offset after its last batch); None unless the chunk holds both."""
        after = start + batch_size
        relative = after - chunk_start
        if relative > len(chunk):
            return None
        if after >= size:
            next_offset = self.next_offset
        elif relative + SPAN_PREFIX <= len(chunk):
            span = batch_span(chunk, relative, size - after)
            if span is None:
                return None  # the walk reports it
            next_offset = span[0]
        else:
            return None
        return StoredBatches(chunk[start - chunk_start : relative], next_offset)

    def _spans(self, start: int) -> Iterator[tuple[int, int, int, int]]:
        """(position, base offset, last offset, size) of each batch from `start`: the checks
        of iter_headers from the first 27 bytes of each header, not a whole parse."""
        end = self.log.size
        position = start
        chunk, chunk_start = b"", start
        while position < end:
            relative = position - chunk_start
            if relative + SPAN_PREFIX > len(chunk):
                chunk = self.log.read_at(min(_HEADER_WALK_CHUNK, end - position), position)
                chunk_start, relative = position, 0
            if relative + SPAN_PREFIX > len(chunk):
                raise CorruptSegmentError(f"torn batch header at position {position}")
            span = batch_span(chunk, relative, end - position)
            if span is None:
                raise CorruptSegmentError(f"no valid batch at position {position}")
            base_offset, last_offset, size = span
            yield position, base_offset, last_offset, size
            position += size

    def _position_of_first_batch_from(self, offset: int) -> int:
        """Position of the first batch whose base offset is >= `offset` (else the size)."""
        for position, base_offset, _last, _size in self._spans(self.offset_index.lookup(offset)):
            if base_offset >= offset:
                return position
        return self.size

    def _last_boundary_within(self, start: int, stop: int) -> tuple[int, int]:
        """(position, base offset) of the first batch after `start` that does not end by `stop`
        (< size), walking from the indexed batch nearest below `stop`: the end of a read and
        the offset that follows it."""
        walk_from = max(start, self.offset_index.position_at_or_before(stop))
        for position, base_offset, _last, size in self._spans(walk_from):
            if position + size > stop:
                return position, base_offset
        raise CorruptSegmentError(f"no batch ends after position {stop}")

    def read_batch_at(self, position: int, header: BatchHeader) -> bytes:
        return self.log.read_at(header.size, position)

    def batch_for_timestamp(self, timestamp: int, start_offset: int) -> bytes | None:
        """The first batch with max timestamp >= `timestamp` and last offset >= start_offset."""
        indexed_offset = max(self.time_index.lookup(timestamp), start_offset)
        for position, header in self.iter_headers(self.offset_index.lookup(indexed_offset)):
            if header.max_timestamp >= timestamp and header.last_offset >= start_offset:
                return self.read_batch_at(position, header)
        return None

    def batch_with_max_timestamp(self) -> bytes | None:
        if self.max_timestamp < 0:
            return None
        position = self.position_of(self.offset_of_max_timestamp)
        if position is None:
            return None
        return self.read_batch_at(position, parse_header(self.log.read_at(HEADER_SIZE, position)))

    # -- truncation, loading, recovery ---------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every batch whose last offset is >= `offset` (whole batches only)."""
        position = self.position_of(offset)
        if position is None:
            return
        self.log.truncate(position)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.bytes_since_last_index_entry = 0
        if position == 0:
            self._rolling_base_timestamp = None
        self.load_tail_state()

    def load_tail_state(self) -> None:
        """Next offset and largest timestamp from the indexes plus the batches after the last
        offset-index entry (the time index holds the max timestamp up to that entry)."""
        self.max_timestamp = self.time_index.last_timestamp
        self.offset_of_max_timestamp = self.time_index.last_offset
        next_offset = self.base_offset
        for _position, header in self.iter_headers(self.offset_index.last_position):
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp = header.max_timestamp
                self.offset_of_max_timestamp = header.last_offset
            next_offset = offset_after(header)
        self._next_offset = next_offset

    def check_indexes(self) -> None:
        """Raise CorruptIndexError or CorruptSegmentError if either index cannot be trusted."""
        self.offset_index.check(self.size)
        if self.offset_index.entries:
            position = self.offset_index.last_position
            header = parse_header(self.log.read_at(HEADER_SIZE, position))
            if not header_is_plausible(header, self.size - position) or (
                header.last_offset != self.offset_index.last_offset
            ):
                raise CorruptSegmentError("last offset index entry does not point at its batch")
        self.load_tail_state()
        self.time_index.check(self.next_offset)

    def recover(self) -> int:
        """Re-check every batch (length, magic, CRC-32C, offsets), truncate at the first bad one
        and rebuild both indexes. Returns the number of bytes truncated."""
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.bytes_since_last_index_entry = 0
        self._next_offset = self.base_offset
        self._rolling_base_timestamp = None
        valid_end = self._scan_valid_batches()
        truncated = self.log.size - valid_end
        if truncated:
            self.log.truncate(valid_end)
        # A cleanly closed segment's time index ends with its largest timestamp; so does this.
        self.on_become_inactive()
        return truncated

    def _scan_valid_batches(self) -> int:
        """Index each valid batch from the start; the position of the first invalid one."""
        end = self.log.size
        position = 0
        chunk, chunk_start = b"", 0
        while position + HEADER_SIZE <= end:
            relative = position - chunk_start
            if relative + HEADER_SIZE > len(chunk):
                chunk = self.log.read_at(min(SCAN_CHUNK_BYTES, end - position), position)
                chunk_start, relative = position, 0
            header = parse_header(chunk, relative)
            if not header_is_plausible(header, end - position):
                break
            if relative + header.size > len(chunk):
                chunk = self.log.read_at(max(header.size, SCAN_CHUNK_BYTES), position)
                chunk_start, relative = position, 0
            if header.base_offset < self.next_offset or not batch_is_valid(
                chunk, relative, header.size
            ):
                break
            self._index_batch(header, position)
            position += header.size
        return position

    # -- durability and lifetime ---------------------------------------------------------------

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def delete(self) -> None:
        self.log.delete()
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
