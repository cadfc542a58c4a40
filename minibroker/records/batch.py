"""The RecordBatch v2 (magic 2) header, its CRC-32C and splitting stored bytes into batches.

Layout as in Kafka's `DefaultRecordBatch.java`; the records follow the 61-byte header.
The CRC covers everything from `attributes` to the end of the batch, so the log can stamp
`base_offset` and `partition_leader_epoch` without recomputing it.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, Self, TypeAlias

try:
    # The C function itself: the package's __init__ also reads its own version through
    # importlib.metadata (10-15 ms of `minibroker serve`'s start, which defers that __init__).
    from crc32c._crc32c import crc32c as _crc32c
except ImportError:  # other layouts of the crc32c package
    from crc32c import crc32c as _crc32c

HEADER_STRUCT = struct.Struct(
    ">q"  # base_offset            int64
    "i"  # batch_length            int32  bytes after this field to the end of the batch
    "i"  # partition_leader_epoch  int32
    "b"  # magic                   int8   2
    "I"  # crc                     uint32 CRC-32C of attributes..end
    "h"  # attributes              int16  see the ATTR_* bits below
    "i"  # last_offset_delta       int32
    "q"  # base_timestamp          int64
    "q"  # max_timestamp           int64
    "q"  # producer_id             int64
    "h"  # producer_epoch          int16
    "i"  # base_sequence           int32
    "i"  # records_count           int32
)
HEADER_SIZE = HEADER_STRUCT.size  # 61, Kafka's RECORD_BATCH_OVERHEAD

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = struct.calcsize(">q")
PARTITION_LEADER_EPOCH_OFFSET = struct.calcsize(">qi")
MAGIC_OFFSET = struct.calcsize(">qii")
CRC_OFFSET = struct.calcsize(">qiib")
ATTRIBUTES_OFFSET = struct.calcsize(">qiibI")
LAST_OFFSET_DELTA_OFFSET = struct.calcsize(">qiibIh")
BASE_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhi")
MAX_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhiq")
PRODUCER_ID_OFFSET = struct.calcsize(">qiibIhiqq")
PRODUCER_EPOCH_OFFSET = struct.calcsize(">qiibIhiqqq")
BASE_SEQUENCE_OFFSET = struct.calcsize(">qiibIhiqqqh")
RECORDS_COUNT_OFFSET = struct.calcsize(">qiibIhiqqqhi")
RECORDS_OFFSET = HEADER_SIZE

# Kafka's LOG_OVERHEAD: base_offset and batch_length precede what batch_length counts.
LOG_OVERHEAD = struct.calcsize(">qi")
MAGIC_V2 = 2

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # set: LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")

Buffer: TypeAlias = bytes | bytearray | memoryview
# A batch that may be stamped in place: its own bytearray, or a writable view of a request.
WritableBuffer: TypeAlias = bytearray | memoryview


class BatchHeader(NamedTuple):
    """A batch header's fields in wire order (a named tuple: parsing one is on the produce
    path, and building a frozen dataclass of 13 fields cost four times as much)."""

    base_offset: int
    batch_length: int
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
    records_count: int

    @classmethod
    def parse(cls, buf: Buffer, pos: int = 0) -> Self:
        """Unpack the header at `pos`; `struct.error` if fewer than 61 bytes remain."""
        return cls._make(HEADER_STRUCT.unpack_from(buf, pos))

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return TIMESTAMP_LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def compute_crc(batch: Buffer) -> int:
    """CRC-32C of a whole batch from `attributes` to its end, as stored in its `crc` field."""
    view = memoryview(batch)
    return int(_crc32c(view[ATTRIBUTES_OFFSET:]))


def stored_crc(batch: Buffer) -> int:
    return int(_UINT32.unpack_from(batch, CRC_OFFSET)[0])


def write_crc(batch: WritableBuffer) -> None:
    _UINT32.pack_into(batch, CRC_OFFSET, compute_crc(batch))


def set_base_offset(batch: WritableBuffer, base_offset: int) -> None:
    """Stamp the base offset; outside the CRC, so the CRC stays valid."""
    _INT64.pack_into(batch, BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(batch: WritableBuffer, epoch: int) -> None:
    """Stamp the leader epoch; outside the CRC, so the CRC stays valid."""
    _INT32.pack_into(batch, PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp(batch: WritableBuffer, timestamp_type: int, max_timestamp: int) -> None:
    """Kafka's `DefaultRecordBatch.setMaxTimestamp`: rewrite type bit and max timestamp, then CRC.

    Like Kafka it leaves the batch untouched when neither changes, and otherwise rebuilds the
    attributes from the bits it knows.
    """
    attributes = _INT16.unpack_from(batch, ATTRIBUTES_OFFSET)[0]
    current_type = TIMESTAMP_LOG_APPEND_TIME if attributes & ATTR_TIMESTAMP_TYPE else 0
    current_max = _INT64.unpack_from(batch, MAX_TIMESTAMP_OFFSET)[0]
    if current_type == timestamp_type and current_max == max_timestamp:
        return
    known = ATTR_COMPRESSION_MASK | ATTR_TRANSACTIONAL | ATTR_CONTROL | ATTR_DELETE_HORIZON
    attributes &= known
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    _INT16.pack_into(batch, ATTRIBUTES_OFFSET, attributes)
    _INT64.pack_into(batch, MAX_TIMESTAMP_OFFSET, max_timestamp)
    write_crc(batch)


def batch_size_at(data: Buffer, pos: int) -> int | None:
    """Size of the batch starting at `pos` from its length field, or None if fewer than 12
    bytes remain."""
    if len(data) - pos < LOG_OVERHEAD:
        return None
    return int(_INT32.unpack_from(data, pos + LENGTH_OFFSET)[0]) + LOG_OVERHEAD


def split_batches(data: Buffer) -> list[memoryview]:
    """Slice well-formed stored log bytes into whole batches, without copying.

    Like Kafka's log readers it stops at an incomplete batch at the end (a fetch response may
    end with one) and at a length field too small to hold a batch header.
    """
    view = memoryview(data)
    batches: list[memoryview] = []
    pos = 0
    end = len(view)
    while True:
        size = batch_size_at(view, pos)
        if size is None or size < HEADER_SIZE or pos + size > end:
            return batches
        batches.append(view[pos : pos + size])
        pos += size
