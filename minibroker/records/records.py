"""Records inside a v2 batch (Kafka's `DefaultRecord.java`): scanning, decoding, building.

Each record is a zigzag-varint length followed by: attributes int8, timestampDelta varlong,
offsetDelta varint, key (varint length, -1 for null), value (likewise), header count varint
and, per header, a key (varint length, never null) and a value (varint length, -1 for null).

`scan_records` checks that structure over a buffer without building objects (the produce
path); `iter_records` decodes a whole batch into `Record`s (tests, tools, compaction).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from minibroker.records.accel import native_scan
from minibroker.records.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    Buffer,
    write_crc,
)
from minibroker.records.compression import NONE, CompressionError, compress, decompress

DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

# Kafka's ControlRecordType key (version, type) and EndTransactionMarker value
# (version, coordinator_epoch), both version 0.
CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER_VALUE = struct.Struct(">hi")
CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1

_UINT32_MASK = 0xFFFFFFFF
_UINT64_MASK = 0xFFFFFFFFFFFFFFFF
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)

Header: TypeAlias = tuple[str, bytes | None]
RecordInput: TypeAlias = tuple[bytes | None, bytes | None, Sequence[Header], int]
"""(key, value, headers, timestamp) of one record to build."""


class CorruptRecordsError(ValueError):
    """The records of a batch do not have the structure their lengths and counts declare."""

    def __init__(self, message: str, record_index: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.record_index = record_index


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


class RecordsSummary(NamedTuple):
    """What the produce path needs from one pass over the records (a named tuple: one is
    made per produced batch)."""

    min_timestamp_delta: int
    max_timestamp_delta: int
    null_keys: int


# -- varints (zigzag, as Kafka's ByteUtils; at most 5 bytes for int32, 10 for int64) --------


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zigzag int32 at `pos`; returns (value, next position).

    Raises `IndexError` past the buffer's end and `CorruptRecordsError` beyond 5 bytes.
    """
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = buf[pos]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            raw &= _UINT32_MASK
            return (raw >> 1) ^ -(raw & 1), pos + 1
        shift += 7
        if shift > 28:
            raise CorruptRecordsError("varint is longer than 5 bytes")


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zigzag int64 at `pos`, as `read_varint` but up to 10 bytes."""
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = buf[pos]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            raw &= _UINT64_MASK
            return (raw >> 1) ^ -(raw & 1), pos + 1
        shift += 7
        if shift > 63:
            raise CorruptRecordsError("varlong is longer than 10 bytes")


def encode_varint(value: int) -> bytes:
    """Zigzag-encode a signed int64 (int32 values give the same bytes as Kafka's varint)."""
    raw = ((value << 1) ^ (value >> 63)) & _UINT64_MASK
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


# -- scanning ------------------------------------------------------------------------------


def scan_records(
    buf: Buffer, pos: int, end: int, count: int, *, max_offset_delta: int | None = None
) -> RecordsSummary:
    """`scan_records_in_python`, by the C accelerator when it is built (see accel.py): it
    answers for records the pure scan accepts and leaves everything else, every error
    included, to the pure scan."""
    if native_scan is not None:
        summary = native_scan(buf, pos, end, count, max_offset_delta)
        if summary is not None:
            return RecordsSummary(*summary)
    return scan_records_in_python(buf, pos, end, count, max_offset_delta=max_offset_delta)


def scan_records_in_python(
    buf: Buffer, pos: int, end: int, count: int, *, max_offset_delta: int | None = None
) -> RecordsSummary:
    """Walk `count` records in `buf[pos:end]` without decoding them into objects.

    Checks what Kafka's `DefaultRecord.readFrom` and the batch iterator check: each length
    varint matches the fields inside it, header counts and key lengths are sane, offset
    deltas run 0, 1, 2, ... (or, for a stored batch, which compaction may have left with
    gaps, given `max_offset_delta`: increase up to it), and the records fill the region
    exactly. Raises `CorruptRecordsError` naming the index of the first bad record.

    This loop is the produce path, so the shape nearly every client writes is recognised
    inline: record and value lengths under 8 KiB, a timestamp delta within 64 ms of the
    base, the expected offset delta (first 2**20 records), a null or short key and no
    headers. Every other record, malformed ones included, goes through `_scan_record`, which
    decodes it in general and says what is wrong; both agree on every record the inline
    path accepts.
    """
    if count <= 0:
        raise CorruptRecordsError(f"invalid record count {count}")
    min_delta = _INT64_MAX
    max_delta = _INT64_MIN
    null_keys = 0
    deltas = None if max_offset_delta is None else _StoredDeltas(max_offset_delta)
    for index in range(count):
        next_pos = -1
        try:
            raw = buf[pos]
            if raw < 0x80:
                p = pos + 1
            else:
                second = buf[pos + 1]
                raw = (raw & 0x7F) | (second << 7) if second < 0x80 else 1
                p = pos + 2
            body_end = p + (raw >> 1)
            timestamp = buf[p + 1]  # after the attributes
            offset_delta = index << 1
            if (
                not raw & 1
                and body_end <= end
                and timestamp < 0x80
                and (deltas is None or deltas.allow_inline(index))
            ):
                if offset_delta < 0x80:
                    expected = buf[p + 2] == offset_delta
                    p += 3
                elif offset_delta < 0x4000:
                    expected = (
                        buf[p + 2] == (offset_delta & 0x7F) | 0x80
                        and buf[p + 3] == offset_delta >> 7
                    )
                    p += 4
                elif offset_delta < 0x200000:
                    expected = (
                        buf[p + 2] == (offset_delta & 0x7F) | 0x80
                        and buf[p + 3] == ((offset_delta >> 7) & 0x7F) | 0x80
                        and buf[p + 4] == offset_delta >> 14
                    )
                    p += 5
                else:
                    expected = False
                key = buf[p]
                if expected and key < 0x80:
                    p += 1 + (0 if key & 1 else key >> 1)
                    value = buf[p]
                    if value < 0x80:
                        p += 1 + (0 if value & 1 else value >> 1)
                    else:
                        second = buf[p + 1]
                        if second < 0x80 and not value & 1:
                            p += 2 + (((value & 0x7F) | (second << 7)) >> 1)
                        else:
                            p = -1
                    if p + 1 == body_end and buf[p] == 0:
                        next_pos = body_end
                        null_key = key & 1
                        timestamp_delta = (timestamp >> 1) ^ -(timestamp & 1)
        except IndexError:
            pass
        if next_pos < 0:
            next_pos, timestamp_delta, null_key = _scan_record(buf, pos, end, index, deltas)
        elif deltas is not None:
            deltas.previous = index
        pos = next_pos
        null_keys += null_key
        if timestamp_delta < min_delta:
            min_delta = timestamp_delta
        if timestamp_delta > max_delta:
            max_delta = timestamp_delta
    if pos != end:
        raise CorruptRecordsError(
            "Incorrect declared batch size, records still remaining in file", count - 1
        )
    return RecordsSummary(min_delta, max_delta, null_keys)


class _StoredDeltas:
    """Offset deltas of a stored batch: increasing, up to its last offset delta."""

    def __init__(self, maximum: int) -> None:
        self.maximum = maximum
        self.previous = -1

    def allow_inline(self, index: int) -> bool:
        """The inline path assumes delta == index: only while no delta was skipped."""
        return self.previous == index - 1 and index <= self.maximum

    def check(self, offset_delta: int, index: int) -> None:
        if not self.previous < offset_delta <= self.maximum:
            raise CorruptRecordsError(
                f"record {index} has offset delta {offset_delta} after {self.previous}, "
                f"at most {self.maximum}",
                index,
            )
        self.previous = offset_delta


def _scan_record(
    buf: Buffer, pos: int, end: int, index: int, deltas: _StoredDeltas | None = None
) -> tuple[int, int, int]:
    """(next position, timestamp delta, 1 if the key is null else 0) of record `index` at
    `pos`, decoded in general; raises `CorruptRecordsError` for a malformed record."""
    try:
        if pos >= end:
            raise CorruptRecordsError(
                f"Incorrect declared batch size, premature EOF reached after {index} records",
                index,
            )
        length, pos = read_varint(buf, pos)
        body_end = pos + length
        if length < 0 or body_end > end:
            raise CorruptRecordsError(
                f"Invalid record size: expected {length} bytes in record payload, "
                f"but only {end - pos} remain",
                index,
            )
        timestamp_delta, pos = read_varlong(buf, pos + 1)  # + 1: attributes
        offset_delta, pos = read_varint(buf, pos)
        if deltas is not None:
            deltas.check(offset_delta, index)
        elif offset_delta != index:
            raise CorruptRecordsError(
                f"record {index} has offset delta {offset_delta}, expected {index}", index
            )
        key_length, pos = read_varint(buf, pos)
        if key_length > 0:
            pos += key_length
        value_length, pos = read_varint(buf, pos)
        if value_length > 0:
            pos += value_length
        if buf[pos] == 0:
            pos += 1
        else:
            pos = _skip_headers(buf, pos, body_end, index)
    except IndexError:
        raise CorruptRecordsError("Found invalid record structure", index) from None
    if pos != body_end:
        raise CorruptRecordsError(
            f"Invalid record size: expected to read {length} bytes in record payload, "
            f"but instead read {pos - body_end + length}",
            index,
        )
    return pos, timestamp_delta, 1 if key_length < 0 else 0


def _skip_headers(buf: Buffer, pos: int, body_end: int, index: int) -> int:
    header_count, pos = read_varint(buf, pos)
    if header_count < 0 or header_count > body_end - pos:
        raise CorruptRecordsError(f"Found invalid number of record headers {header_count}", index)
    for _ in range(header_count):
        header_key_length, pos = read_varint(buf, pos)
        if header_key_length < 0:
            raise CorruptRecordsError(
                f"Invalid negative header key size {header_key_length}", index
            )
        header_value_length, pos = read_varint(buf, pos + header_key_length)
        if header_value_length > 0:
            pos += header_value_length
    return pos


# -- decoding ------------------------------------------------------------------------------


def records_region(
    batch: Buffer, header: BatchHeader, max_decompressed_bytes: int
) -> tuple[Buffer, int, int]:
    """(buffer, start, end) of the records of `batch`, decompressed if need be."""
    end = min(header.size, len(batch))
    if header.compression == NONE:
        return batch, HEADER_SIZE, end
    try:
        data = decompress(
            header.compression, memoryview(batch)[HEADER_SIZE:end], max_decompressed_bytes
        )
    except CompressionError as e:
        raise CorruptRecordsError(str(e)) from e
    return data, 0, len(data)


def iter_records(
    batch: Buffer, *, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> Iterator[Record]:
    """Decode every record of one stored v2 batch: offset = base + delta (deltas may skip, as
    in a compacted batch), LogAppendTime honoured.

    Raises `CorruptRecordsError` for a batch whose records are malformed (checked before the
    first record is yielded).
    """
    if len(batch) < HEADER_SIZE:
        raise CorruptRecordsError(f"a batch needs {HEADER_SIZE} bytes, got {len(batch)}")
    header = BatchHeader.parse(batch)
    if header.magic != MAGIC_V2:
        raise CorruptRecordsError(f"unsupported magic {header.magic}")
    buf, pos, end = records_region(batch, header, max_decompressed_bytes)
    scan_records(buf, pos, end, header.records_count, max_offset_delta=header.last_offset_delta)
    return decode_records(buf, pos, header)


def decode_records(buf: Buffer, pos: int, header: BatchHeader) -> Iterator[Record]:
    """Decode the records at `buf[pos:]`, which `scan_records` has already checked."""
    log_append_time = (
        header.max_timestamp if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME else None
    )
    view = memoryview(buf)
    for _ in range(header.records_count):
        _, pos = read_varint(view, pos)
        timestamp_delta, pos = read_varlong(view, pos + 1)
        offset_delta, pos = read_varint(view, pos)
        key, pos = _read_bytes(view, pos)
        value, pos = _read_bytes(view, pos)
        header_count, pos = read_varint(view, pos)
        headers: list[Header] = []
        for _ in range(header_count):
            header_key, pos = _read_bytes(view, pos)
            header_value, pos = _read_bytes(view, pos)
            headers.append(((header_key or b"").decode("utf-8", "replace"), header_value))
        timestamp = header.base_timestamp + timestamp_delta
        yield Record(
            offset=header.base_offset + offset_delta,
            timestamp=timestamp if log_append_time is None else log_append_time,
            key=key,
            value=value,
            headers=headers,
        )


def _read_bytes(view: memoryview, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(view, pos)
    if length < 0:
        return None, pos
    return bytes(view[pos : pos + length]), pos + length


# -- building ------------------------------------------------------------------------------


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bytes:
    parts = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta)]
    _append_bytes(parts, key)
    _append_bytes(parts, value)
    parts.append(encode_varint(len(headers)))
    for header_key, header_value in headers:
        _append_bytes(parts, header_key.encode("utf-8"))
        _append_bytes(parts, header_value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _append_bytes(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(encode_varint(-1))
    else:
        parts.append(encode_varint(len(data)))
        parts.append(data)


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    compression: int = NONE,
    timestamp_type: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    max_timestamp: int | None = None,
) -> bytes:
    """Build one v2 batch as Kafka's `MemoryRecordsBuilder` does.

    The base timestamp is the first record's; the max timestamp is the largest record
    timestamp unless given (LogAppendTime batches pass the append time).
    """
    if not records:
        raise ValueError("a record batch holds at least one record")
    base_timestamp = records[0][3]
    body = b"".join(
        encode_record(delta, timestamp - base_timestamp, key, value, headers)
        for delta, (key, value, headers, timestamp) in enumerate(records)
    )
    if compression != NONE:
        body = compress(compression, body)
    if max_timestamp is None:
        max_timestamp = max(record[3] for record in records)
    attributes = compression
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    batch = bytearray(
        HEADER_STRUCT.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            len(records) - 1,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    batch += body
    write_crc(batch)
    return bytes(batch)


def build_control_batch(
    commit: bool,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """An end-transaction marker batch: one control record, transactional, as Kafka writes."""
    key = CONTROL_KEY.pack(0, CONTROL_TYPE_COMMIT if commit else CONTROL_TYPE_ABORT)
    value = END_TXN_MARKER_VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
