"""Reading transaction markers: the single record of a control batch.

Key = {version int16 = 0, type int16: ABORT = 0, COMMIT = 1} (`ControlRecordType.java`),
value = {version int16 = 0, coordinator_epoch int32} (`EndTransactionMarker.java`). Control
batches are never compressed, so the record follows the 61-byte batch header directly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from minibroker.records.batch import HEADER_SIZE, Buffer

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    control_type: ControlType
    coordinator_epoch: int


def _read_varint(data: Buffer, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Kafka's ByteUtils.readVarint/readVarlong) and the position after it."""
    raw = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def read_end_txn_marker(batch: Buffer) -> EndTxnMarker | None:
    """The marker in a control batch, or None if it has no record or is not a txn marker."""
    view = memoryview(batch)
    if len(view) <= HEADER_SIZE:
        return None
    try:
        _, pos = _read_varint(view, HEADER_SIZE)  # record length
        pos += 1  # attributes
        _, pos = _read_varint(view, pos)  # timestamp delta
        _, pos = _read_varint(view, pos)  # offset delta
        key_length, pos = _read_varint(view, pos)
        if key_length < _KEY.size:
            return None
        _, control_type = _KEY.unpack_from(view, pos)
        pos += key_length
        value_length, pos = _read_varint(view, pos)
        if value_length < _VALUE.size or control_type not in (
            ControlType.ABORT,
            ControlType.COMMIT,
        ):
            return None
        _, coordinator_epoch = _VALUE.unpack_from(view, pos)
    except (IndexError, struct.error, ValueError):
        return None
    return EndTxnMarker(ControlType(control_type), coordinator_epoch)
