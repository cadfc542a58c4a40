"""Kafka's sparse segment indexes, kept exactly as on disk (no preallocation, no trailing zeros).

`.index`: 8-byte entries (int32 offset relative to the segment base, int32 byte position of a
batch start); the offset is the *last* offset of the indexed batch, as Kafka writes it.
`.timeindex`: 12-byte entries (int64 timestamp, int32 relative offset); timestamps strictly
increase. Lookups binary-search the blob with small reads, so closed segments keep nothing in
memory but their entry count and last entry.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from .batch import NO_TIMESTAMP
from .blob import Blob

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexError(Exception):
    pass


def _first_slot(entries: int, is_at_or_after: Callable[[int], bool]) -> int:
    """The first slot for which the (monotonic) predicate holds, or `entries` if none."""
    low, high = 0, entries
    while low < high:
        middle = (low + high) // 2
        if is_at_or_after(middle):
            high = middle
        else:
            low = middle + 1
    return low


class OffsetIndex:
    def __init__(self, blob: Blob, base_offset: int, max_index_bytes: int) -> None:
        self.blob = blob
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // OFFSET_ENTRY.size
        self.entries = blob.size // OFFSET_ENTRY.size
        self.last_offset = base_offset
        self.last_position = 0
        if self.entries:
            self.last_offset, self.last_position = self.entry(self.entries - 1)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def entry(self, slot: int) -> tuple[int, int]:
        """(absolute offset, position) of entry `slot`."""
        raw = self.blob.read_at(OFFSET_ENTRY.size, slot * OFFSET_ENTRY.size)
        relative, position = OFFSET_ENTRY.unpack(raw)
        return self.base_offset + relative, position

    def all_entries(self) -> list[tuple[int, int]]:
        raw = self.blob.read_at(self.entries * OFFSET_ENTRY.size, 0)
        return [(self.base_offset + rel, pos) for rel, pos in OFFSET_ENTRY.iter_unpack(raw)]

    def append(self, offset: int, position: int) -> None:
        self.blob.write_at(
            OFFSET_ENTRY.pack(offset - self.base_offset, position),
            self.entries * OFFSET_ENTRY.size,
        )
        self.entries += 1
        self.last_offset, self.last_position = offset, position

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch whose last offset is <= `offset` (else 0)."""
        if self.entries == 0 or offset < self.entry(0)[0]:
            return 0
        if offset >= self.last_offset:
            return self.last_position
        return self.entry(self._largest_slot_at_most(offset))[1]

    def _largest_slot_at_most(self, offset: int) -> int:
        low, high = 0, self.entries - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.entry(middle)[0] <= offset:
                low = middle
            else:
                high = middle - 1
        return low

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= `offset`."""
        self._truncate_entries(
            _first_slot(self.entries, lambda slot: self.entry(slot)[0] >= offset)
        )

    def _truncate_entries(self, count: int) -> None:
        self.blob.truncate(count * OFFSET_ENTRY.size)
        self.entries = count
        if count:
            self.last_offset, self.last_position = self.entry(count - 1)
        else:
            self.last_offset, self.last_position = self.base_offset, 0

    def reset(self) -> None:
        self._truncate_entries(0)

    def check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless entries are whole and strictly increase inside the log."""
        if self.blob.size % OFFSET_ENTRY.size:
            raise CorruptIndexError(f"offset index size {self.blob.size} is not a multiple of 8")
        previous_offset, previous_position = self.base_offset - 1, -1
        for offset, position in self.all_entries():
            if offset <= previous_offset or position <= previous_position or position >= log_size:
                raise CorruptIndexError(f"offset index entry ({offset}, {position}) out of order")
            previous_offset, previous_position = offset, position


class TimeIndex:
    def __init__(self, blob: Blob, base_offset: int, max_index_bytes: int) -> None:
        self.blob = blob
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // TIME_ENTRY.size
        self.entries = blob.size // TIME_ENTRY.size
        self.last_timestamp = NO_TIMESTAMP
        self.last_offset = base_offset
        if self.entries:
            self.last_timestamp, self.last_offset = self.entry(self.entries - 1)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def entry(self, slot: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of entry `slot`."""
        raw = self.blob.read_at(TIME_ENTRY.size, slot * TIME_ENTRY.size)
        timestamp, relative = TIME_ENTRY.unpack(raw)
        return timestamp, self.base_offset + relative

    def all_entries(self) -> list[tuple[int, int]]:
        raw = self.blob.read_at(self.entries * TIME_ENTRY.size, 0)
        return [(ts, self.base_offset + rel) for ts, rel in TIME_ENTRY.iter_unpack(raw)]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if the timestamp is larger than every indexed one."""
        if timestamp <= self.last_timestamp:
            return
        self.blob.write_at(
            TIME_ENTRY.pack(timestamp, offset - self.base_offset), self.entries * TIME_ENTRY.size
        )
        self.entries += 1
        self.last_timestamp, self.last_offset = timestamp, offset

    def lookup(self, timestamp: int) -> int:
        """Offset of the entry with the largest timestamp <= `timestamp` (else the base offset)."""
        if self.entries == 0 or timestamp < self.entry(0)[0]:
            return self.base_offset
        low, high = 0, self.entries - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.entry(middle)[0] <= timestamp:
                low = middle
            else:
                high = middle - 1
        return self.entry(low)[1]

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= `offset`."""
        keep = _first_slot(self.entries, lambda slot: self.entry(slot)[1] >= offset)
        self.blob.truncate(keep * TIME_ENTRY.size)
        self.entries = keep
        if keep:
            self.last_timestamp, self.last_offset = self.entry(keep - 1)
        else:
            self.last_timestamp, self.last_offset = NO_TIMESTAMP, self.base_offset

    def reset(self) -> None:
        self.truncate_to(self.base_offset)

    def check(self, next_offset: int) -> None:
        """Raise CorruptIndexError unless timestamps strictly increase and offsets lie in range."""
        if self.blob.size % TIME_ENTRY.size:
            raise CorruptIndexError(f"time index size {self.blob.size} is not a multiple of 12")
        previous_timestamp, previous_offset = NO_TIMESTAMP, self.base_offset
        for timestamp, offset in self.all_entries():
            if timestamp <= previous_timestamp or not previous_offset <= offset < next_offset:
                raise CorruptIndexError(f"time index entry ({timestamp}, {offset}) out of order")
            previous_timestamp, previous_offset = timestamp, offset
