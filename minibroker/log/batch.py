"""The RecordBatch v2 header as stored in a `.log` file: just enough for storage and recovery.

Storage never decodes records; it reads the 61-byte header, stamps the base offset and the
partition leader epoch (neither covered by the CRC), and checks length, magic and CRC-32C when
recovering a segment.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import crc32c

HEADER = struct.Struct(
    ">q"  # baseOffset
    "i"  # batchLength: bytes after this field
    "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc: CRC-32C of everything from attributes to the end
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordCount
)
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the bytes not counted by batchLength
CRC_START = 21  # the CRC covers attributes .. end
MAGIC_V2 = 2
NO_TIMESTAMP = -1

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12

COMPRESSION_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_DELETE_HORIZON_BIT = 0x40


class BatchHeader(NamedTuple):
    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes in the log."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & _TIMESTAMP_TYPE_BIT else "CreateTime"

    @property
    def compression(self) -> str:
        codec = self.attributes & 0x07
        return COMPRESSION_CODECS[codec] if codec < len(COMPRESSION_CODECS) else f"unknown({codec})"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header of the batch at `pos` (the buffer must hold at least HEADER_SIZE bytes there)."""
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def offset_and_size(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(base offset, whole batch size) of the batch at `pos`, from its first 12 bytes."""
    base_offset, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)
    return base_offset, length + LOG_OVERHEAD


def stamp(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Write the broker-assigned base offset and partition leader epoch into the header."""
    _BASE_OFFSET.pack_into(batch, 0, base_offset)
    _LEADER_EPOCH.pack_into(batch, _LEADER_EPOCH_AT, leader_epoch)


def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    return int(crc32c.crc32c(memoryview(batch)[CRC_START:]))


def header_is_plausible(header: BatchHeader, available: int) -> bool:
    """Length and magic make sense and the whole batch fits in `available` bytes."""
    return (
        header.length >= HEADER_SIZE - LOG_OVERHEAD
        and header.size <= available
        and header.magic == MAGIC_V2
        and header.last_offset_delta >= 0
    )


def batch_is_valid(buf: bytes | bytearray | memoryview, pos: int, available: int) -> bool:
    """The batch at `pos` is whole, is magic v2 and its CRC-32C matches."""
    if available < HEADER_SIZE:
        return False
    header = parse_header(buf, pos)
    if not header_is_plausible(header, available):
        return False
    return compute_crc(memoryview(buf)[pos : pos + header.size]) == header.crc
