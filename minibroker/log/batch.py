"""What storage needs of a stored RecordBatch v2, on top of `minibroker.records.batch`.

Storage never decodes records; it reads the 61-byte header, stamps the base offset and the
partition leader epoch (neither covered by the CRC), and checks length, magic and CRC-32C when
recovering a segment.
"""

from __future__ import annotations

import struct

from minibroker.records.batch import (
    BASE_OFFSET_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    PARTITION_LEADER_EPOCH_OFFSET,
    BatchHeader,
    Buffer,
    WritableBuffer,
    compute_crc,
)

_OFFSET_AND_LENGTH = struct.Struct(">qi")
# baseOffset, batchLength, (the leader epoch skipped) magic, (CRC, attributes) lastOffsetDelta.
SPAN = struct.Struct(">qi4xb6xi")
SPAN_PREFIX = SPAN.size
INT64 = struct.Struct(">q")
INT32 = struct.Struct(">i")


def parse_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The header of the batch at `pos` (the buffer must hold at least HEADER_SIZE bytes there)."""
    # tuple.__new__: `_make` is a Python classmethod, and this runs for every append and walk
    return tuple.__new__(BatchHeader, HEADER_STRUCT.unpack_from(buf, pos))


def offset_after(header: BatchHeader) -> int:
    """The offset that follows the batch."""
    return header.last_offset + 1


def offset_and_size(buf: Buffer, pos: int) -> tuple[int, int]:
    """(base offset, whole batch size) of the batch at `pos`, from its first 12 bytes."""
    base_offset, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return base_offset, length + LOG_OVERHEAD


def batch_span(buf: Buffer, pos: int, available: int) -> tuple[int, int, int] | None:
    """(base offset, last offset, whole batch size) of the batch at `pos` from its first 27
    bytes, None unless they pass `header_is_plausible`'s checks."""
    base_offset, length, magic, last_offset_delta = SPAN.unpack_from(buf, pos)
    size = length + LOG_OVERHEAD
    if size < HEADER_SIZE or size > available or magic != MAGIC_V2 or last_offset_delta < 0:
        return None
    return base_offset, base_offset + last_offset_delta, size


def stamp(batch: WritableBuffer, base_offset: int, leader_epoch: int) -> None:
    """Write the broker-assigned base offset and partition leader epoch into the header
    (`set_base_offset` and `set_partition_leader_epoch`, without their two calls: this is
    once per append)."""
    INT64.pack_into(batch, BASE_OFFSET_OFFSET, base_offset)
    INT32.pack_into(batch, PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)


def header_is_plausible(header: BatchHeader, available: int) -> bool:
    """Length and magic make sense and the whole batch fits in `available` bytes."""
    return (
        header.batch_length >= HEADER_SIZE - LOG_OVERHEAD
        and header.size <= available
        and header.magic == MAGIC_V2
        and header.last_offset_delta >= 0
    )


def batch_is_valid(buf: Buffer, pos: int, available: int) -> bool:
    """The batch at `pos` is whole, is magic v2 and its CRC-32C matches."""
    if available < HEADER_SIZE:
        return False
    header = parse_header(buf, pos)
    if not header_is_plausible(header, available):
        return False
    return compute_crc(memoryview(buf)[pos : pos + header.size]) == header.crc
