"""The byte layout of coordinator records (`__consumer_offsets`, `__share_group_state`), as
Kafka's generated message classes write them: big-endian integers, UUIDs as 16 bytes, INT16-
length strings in keys (not flexible), and in flexible values compact strings and arrays
(unsigned varint length + 1, 0 for null) and tagged-field trailers (count, then tag, size and
payload each). Reading past the end, a bad varint or bad UTF-8 raise RecordFormatError.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Mapping, Sized
from typing import Protocol, TypeAlias

from minibroker.protocol.varint import encode_uvarint

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT16 = struct.Struct(">H")

TaggedFields: TypeAlias = dict[int, bytes]
StoredRecord: TypeAlias = tuple[bytes, bytes | None]  # a key and its value (None: a tombstone)


def record_changes(
    written: Mapping[bytes, bytes | None], now: Mapping[bytes, bytes | None]
) -> list[StoredRecord]:
    """What to append for a group whose records were `written` and now are `now`: tombstones
    of the keys gone first (a member's records go before the group's new epoch), then the
    records that changed."""
    gone: list[StoredRecord] = [(key, None) for key in written if key not in now]
    changed: list[StoredRecord] = [(k, v) for k, v in now.items() if written.get(k) != v]
    return gone + changed


def tombstones_of(written: Mapping[bytes, bytes | None]) -> list[StoredRecord]:
    """What deletes every record written."""
    return [(key, None) for key in written]


class WrittenGroup(Protocol):
    """A group that remembers the records it last wrote (key → value)."""

    written: dict[bytes, bytes | None]


def take_changes(group: WrittenGroup, now: dict[bytes, bytes | None]) -> list[StoredRecord]:
    """`record_changes` from what the group wrote to `now`, which it has written after."""
    records = record_changes(group.written, now)
    group.written = now
    return records


def take_tombstones(group: WrittenGroup) -> list[StoredRecord]:
    """`tombstones_of` what the group wrote; it has then written nothing."""
    records = tombstones_of(group.written)
    group.written = {}
    return records


class RecordFormatError(ValueError):
    """A key or value that is not in a format this reader knows."""


class StructWriter:
    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, value: int) -> StructWriter:
        self.buf += _INT8.pack(value)
        return self

    def int16(self, value: int) -> StructWriter:
        self.buf += _INT16.pack(value)
        return self

    def uint16(self, value: int) -> StructWriter:
        self.buf += _UINT16.pack(value)
        return self

    def int32(self, value: int) -> StructWriter:
        self.buf += _INT32.pack(value)
        return self

    def int64(self, value: int) -> StructWriter:
        self.buf += _INT64.pack(value)
        return self

    def uuid(self, value: uuid.UUID) -> StructWriter:
        self.buf += value.bytes
        return self

    def uvarint(self, value: int) -> StructWriter:
        self.buf += encode_uvarint(value)
        return self

    def string(self, value: str) -> StructWriter:
        encoded = value.encode()
        self.int16(len(encoded))
        self.buf += encoded
        return self

    def nullable_string(self, value: str | None) -> StructWriter:
        return self.int16(-1) if value is None else self.string(value)

    def bytes_(self, value: bytes) -> StructWriter:
        """INT32-length bytes (not flexible)."""
        self.int32(len(value))
        self.buf += value
        return self

    def compact_string(self, value: str | None) -> StructWriter:
        if value is None:
            return self.uvarint(0)
        return self.compact_bytes(value.encode())

    def compact_bytes(self, value: bytes) -> StructWriter:
        self.uvarint(len(value) + 1)
        self.buf += value
        return self

    def count(self, items: Sized | None) -> StructWriter:
        return self.uvarint(0 if items is None else len(items) + 1)

    def tagged(self, fields: TaggedFields) -> StructWriter:
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag]))
            self.buf += fields[tag]
        return self


class StructReader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @classmethod
    def of_version(cls, value: bytes, version: int, kind: str) -> StructReader:
        """A reader past the value's INT16 version, which must be `version`."""
        reader = cls(value)
        found = reader.int16()
        if found != version:
            raise RecordFormatError(f"unknown {kind} value version {found}")
        return reader

    def _take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise RecordFormatError("record runs past its end")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int8(self) -> int:
        value: int = _INT8.unpack(self._take(1))[0]
        return value

    def int16(self) -> int:
        value: int = _INT16.unpack(self._take(2))[0]
        return value

    def uint16(self) -> int:
        value: int = _UINT16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack(self._take(8))[0]
        return value

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16))

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise RecordFormatError("varint too long")

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise RecordFormatError("null string in a key")
        return self._decode(self._take(length))

    def nullable_string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else self._decode(self._take(length))

    def bytes_(self) -> bytes:
        """INT32-length bytes (not flexible); null reads as empty."""
        length = self.int32()
        return b"" if length < 0 else self._take(length)

    def compact_nullable_string(self) -> str | None:
        length = self.uvarint() - 1
        return None if length < 0 else self._decode(self._take(length))

    def compact_string(self) -> str:
        value = self.compact_nullable_string()
        if value is None:
            raise RecordFormatError("null in a non-nullable string")
        return value

    def compact_bytes(self) -> bytes:
        length = self.uvarint() - 1
        if length < 0:
            raise RecordFormatError("null in a non-nullable bytes field")
        return self._take(length)

    def count(self) -> int:
        """A compact array's length, -1 for null."""
        return self.uvarint() - 1

    def array_count(self) -> int:
        length = self.count()
        if length < 0:
            raise RecordFormatError("null in a non-nullable array")
        return length

    def tagged(self) -> TaggedFields:
        fields: TaggedFields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self._take(self.uvarint())
        return fields

    def end(self) -> None:
        if self.pos != len(self.data):
            raise RecordFormatError(f"{len(self.data) - self.pos} bytes after the record")

    @staticmethod
    def _decode(raw: bytes) -> str:
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            raise RecordFormatError("a string that is not UTF-8") from exc


def encode_group_key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    """A group record's key (the share and streams groups' layout): its type and group id,
    then the member id for a member's records."""
    writer = StructWriter().int16(kind).string(group_id)
    if member_id is not None:
        writer.string(member_id)
    return bytes(writer.buf)


def decode_group_key(
    key: bytes, kinds: frozenset[int], member_kinds: frozenset[int], group_kind: str
) -> tuple[int, str, str | None]:
    """`encode_group_key`'s (type, group id, member id) for a record of one of `kinds`."""
    reader = StructReader(key)
    kind = reader.int16()
    if kind not in kinds:
        raise RecordFormatError(f"record type {kind} is not a {group_kind} record")
    group_id = reader.string()
    member_id = reader.string() if kind in member_kinds else None
    reader.end()
    return kind, group_id, member_id
