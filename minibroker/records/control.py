"""Control records: the transaction marker a control batch holds, read back.

Key = {version int16 = 0, type int16: ABORT = 0, COMMIT = 1} (`ControlRecordType.java`),
value = {version int16 = 0, coordinator_epoch int32} (`EndTransactionMarker.java`). Control
batches are never compressed, so the record follows the 61-byte batch header directly;
`records.build_control_batch` writes them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from minibroker.records.batch import HEADER_SIZE, BatchHeader, Buffer
from minibroker.records.records import (
    CONTROL_KEY,
    CONTROL_TYPE_ABORT,
    CONTROL_TYPE_COMMIT,
    END_TXN_MARKER_VALUE,
    CorruptRecordsError,
    decode_records,
)


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    commit: bool
    coordinator_epoch: int


def read_end_txn_marker(header: BatchHeader, batch: Buffer) -> EndTxnMarker | None:
    """The marker in a stored control batch, or None if it holds no transaction marker (an empty
    control batch is what the cleaner leaves of a whole transaction)."""
    try:
        record = next(decode_records(batch, HEADER_SIZE, header), None)
        if record is None or record.key is None or record.value is None:
            return None
        _, control_type = CONTROL_KEY.unpack_from(record.key)
        _, coordinator_epoch = END_TXN_MARKER_VALUE.unpack_from(record.value)
    except (IndexError, struct.error, CorruptRecordsError):
        return None
    if control_type not in (CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT):
        return None
    return EndTxnMarker(control_type == CONTROL_TYPE_COMMIT, coordinator_epoch)
