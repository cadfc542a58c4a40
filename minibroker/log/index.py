"""Kafka's sparse segment indexes, kept exactly as on disk (no preallocation, no trailing zeros).

`.index`: 8-byte entries (int32 offset relative to the segment base, int32 byte position of a
batch start); the offset is the *last* offset of the indexed batch, as Kafka writes it.
`.timeindex`: 12-byte entries (int64 timestamp, int32 relative offset); timestamps strictly
increase. Lookups binary-search the blob with small reads, so closed segments keep nothing in
memory but their entry count and last entry.

New entries are written behind, a few at a time (and on flush, roll and close), so that an
append touches one descriptor, the `.log`'s. Entries lost in a crash are rebuilt by recovery,
which re-indexes everything after the recovery point; flushed segments have all theirs on disk.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from minibroker.records.batch import NO_TIMESTAMP

from .blob import Blob

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
_PENDING_ENTRIES = 64


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


class _EntryFile:
    """Fixed-size entries in a blob, plus entries not yet written to it."""

    ENTRY: struct.Struct

    def __init__(self, blob: Blob, base_offset: int, max_index_bytes: int) -> None:
        self.blob = blob
        self.base_offset = base_offset
        self.max_entries = max_index_bytes // self.ENTRY.size
        self._written = blob.size // self.ENTRY.size
        self._pending = bytearray()
        # written and pending: an attribute, as the common append compares it with max_entries
        self.entries = self._written

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def _raw_entry(self, slot: int) -> tuple[int, int]:
        size = self.ENTRY.size
        if slot >= self._written:
            fields = self.ENTRY.unpack_from(self._pending, (slot - self._written) * size)
        else:
            fields = self.ENTRY.unpack(self.blob.read_at(size, slot * size))
        return fields[0], fields[1]

    def _raw_entries(self) -> list[tuple[int, int]]:
        data = self.blob.read_at(self._written * self.ENTRY.size, 0) + bytes(self._pending)
        return [(first, second) for first, second in self.ENTRY.iter_unpack(data)]

    def _append_raw(self, packed: bytes) -> None:
        self._pending += packed
        self.entries += 1
        if len(self._pending) >= _PENDING_ENTRIES * self.ENTRY.size:
            self.write_pending()

    def write_pending(self) -> None:
        if self._pending:
            self.blob.write_at(self._pending, self._written * self.ENTRY.size)
            self._written += len(self._pending) // self.ENTRY.size
            self._pending.clear()

    def _keep_entries(self, count: int) -> None:
        if count <= self._written:
            size = count * self.ENTRY.size
            if self.blob.size != size or not self.blob.exists():  # a torn entry's bytes go too
                self.blob.truncate(size)
            self._written = count
            self._pending.clear()
        else:
            del self._pending[(count - self._written) * self.ENTRY.size :]
        self.entries = count

    def flush(self) -> None:
        self.write_pending()
        self.blob.flush()

    def delete(self) -> None:
        self._pending.clear()
        self._written = 0
        self.entries = 0
        self.blob.delete()

    def _check_whole_entries(self, kind: str) -> None:
        if self.blob.size % self.ENTRY.size:
            raise CorruptIndexError(
                f"{kind} size {self.blob.size} is not a multiple of {self.ENTRY.size}"
            )


class OffsetIndex(_EntryFile):
    ENTRY = OFFSET_ENTRY

    def __init__(self, blob: Blob, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(blob, base_offset, max_index_bytes)
        self.last_offset = base_offset
        self.last_position = 0
        if self.entries:
            self.last_offset, self.last_position = self.entry(self.entries - 1)

    def entry(self, slot: int) -> tuple[int, int]:
        """(absolute offset, position) of entry `slot`."""
        relative, position = self._raw_entry(slot)
        return self.base_offset + relative, position

    def all_entries(self) -> list[tuple[int, int]]:
        return [
            (self.base_offset + relative, position) for relative, position in self._raw_entries()
        ]

    def append(self, offset: int, position: int) -> None:
        self._append_raw(OFFSET_ENTRY.pack(offset - self.base_offset, position))
        self.last_offset, self.last_position = offset, position

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch whose last offset is <= `offset` (else 0)."""
        if offset >= self.last_offset:  # (also with no entries: the base offset, position 0)
            return self.last_position
        # `_first_slot` inline, on relative offsets: this runs for every fetch read
        relative = offset - self.base_offset
        low, high = 0, self._written + len(self._pending) // OFFSET_ENTRY.size
        while low < high:
            middle = (low + high) // 2
            if self._raw_entry(middle)[0] > relative:
                high = middle
            else:
                low = middle + 1
        return self._raw_entry(low - 1)[1] if low > 0 else 0

    def position_at_or_before(self, position: int) -> int:
        """The largest indexed batch position <= `position` (else 0)."""
        if position >= self.last_position:
            return self.last_position
        slot = _first_slot(self.entries, lambda slot: self._raw_entry(slot)[1] > position) - 1
        return self._raw_entry(slot)[1] if slot >= 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= `offset`."""
        self._keep_entries(_first_slot(self.entries, lambda slot: self.entry(slot)[0] >= offset))
        if self.entries:
            self.last_offset, self.last_position = self.entry(self.entries - 1)
        else:
            self.last_offset, self.last_position = self.base_offset, 0

    def reset(self) -> None:
        self._keep_entries(0)
        self.last_offset, self.last_position = self.base_offset, 0

    def check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless entries are whole and strictly increase inside the log."""
        self._check_whole_entries("offset index")
        previous_offset, previous_position = self.base_offset - 1, -1
        for offset, position in self.all_entries():
            if offset <= previous_offset or position <= previous_position or position >= log_size:
                raise CorruptIndexError(f"offset index entry ({offset}, {position}) out of order")
            previous_offset, previous_position = offset, position


class TimeIndex(_EntryFile):
    ENTRY = TIME_ENTRY

    def __init__(self, blob: Blob, base_offset: int, max_index_bytes: int) -> None:
        super().__init__(blob, base_offset, max_index_bytes)
        self.last_timestamp = NO_TIMESTAMP
        self.last_offset = base_offset
        if self.entries:
            self.last_timestamp, self.last_offset = self.entry(self.entries - 1)

    def entry(self, slot: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of entry `slot`."""
        timestamp, relative = self._raw_entry(slot)
        return timestamp, self.base_offset + relative

    def all_entries(self) -> list[tuple[int, int]]:
        return [(timestamp, self.base_offset + rel) for timestamp, rel in self._raw_entries()]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (timestamp, offset) if the timestamp is larger than every indexed one."""
        if timestamp <= self.last_timestamp:
            return
        self._append_raw(TIME_ENTRY.pack(timestamp, offset - self.base_offset))
        self.last_timestamp, self.last_offset = timestamp, offset

    def lookup(self, timestamp: int) -> int:
        """Offset of the entry with the largest timestamp <= `timestamp` (else the base offset)."""
        if self.entries == 0 or timestamp < self.entry(0)[0]:
            return self.base_offset
        slot = _first_slot(self.entries, lambda slot: self.entry(slot)[0] > timestamp) - 1
        return self.entry(slot)[1]

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= `offset`."""
        self._keep_entries(_first_slot(self.entries, lambda slot: self.entry(slot)[1] >= offset))
        if self.entries:
            self.last_timestamp, self.last_offset = self.entry(self.entries - 1)
        else:
            self.last_timestamp, self.last_offset = NO_TIMESTAMP, self.base_offset

    def reset(self) -> None:
        self._keep_entries(0)
        self.last_timestamp, self.last_offset = NO_TIMESTAMP, self.base_offset

    def check(self, next_offset: int) -> None:
        """Raise CorruptIndexError unless timestamps strictly increase and offsets lie in range."""
        self._check_whole_entries("time index")
        previous_timestamp, previous_offset = NO_TIMESTAMP, self.base_offset
        for timestamp, offset in self.all_entries():
            if timestamp <= previous_timestamp or not previous_offset <= offset < next_offset:
                raise CorruptIndexError(f"time index entry ({timestamp}, {offset}) out of order")
            previous_timestamp, previous_offset = timestamp, offset
