"""Fuzz target: the records brokers read back from internal topics and control batches, as
their loaders read them: `__consumer_offsets` (classic and KIP-848 records, as
groups/store.py), `__transaction_state` (txn/state_log.py), `__share_group_state`
(groups/share/persist.py), the registry's `_schemas` (registry/store.py) and transaction
markers (internal/topic.py).

The first input byte picks the reader (its low seven bits modulo 5) and whether the value is
a tombstone (bit 7); the second is the key's length; then key, then value. For markers the
rest is a run of stored batches. Outcomes allowed: the decoded record or the error its loader
catches and skips (RecordFormatError; TxnRecordError or UnicodeDecodeError; a `_schemas`
record applied or skipped with a warning), a marker or None."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

from minibroker.groups import consumer_records, records
from minibroker.groups.record_codec import RecordFormatError
from minibroker.groups.share import state_records
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.control import read_end_txn_marker
from minibroker.records.records import build_control_batch
from minibroker.registry import records as registry_records
from minibroker.registry.store import SchemaState
from minibroker.txn import state_log
from minibroker.txn.state import TxnState, TxnTransit

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def _offsets(key: bytes, value: bytes | None) -> None:
    try:
        if consumer_records.record_type(key) in consumer_records.CONSUMER_GROUP_RECORD_TYPES:
            consumer_records.decode_consumer_group_record(key, value)
            return
        decoded_key = records.decode_key(key)
        if value is None:
            return
        if isinstance(decoded_key, records.OffsetKey):
            records.decode_offset_value(value)
        else:
            records.decode_group_value(value)
    except RecordFormatError:
        pass


def _transaction_state(key: bytes, value: bytes | None) -> None:
    try:
        state_log.decode_key(key)
        if value is not None:
            state_log.decode_value(value)
    except (state_log.TxnRecordError, UnicodeDecodeError):
        pass


def _share_state(key: bytes, value: bytes | None) -> None:
    try:
        state_records.decode_key(key)
        if value is not None:
            state_records.decode_snapshot(value)
    except RecordFormatError:
        pass


def _schemas(key: bytes, value: bytes | None) -> None:
    SchemaState().apply_record(key, value)


def _markers(batches: bytes) -> None:
    for batch in split_batches(batches):
        header = BatchHeader.parse(batch)
        if header.is_control:
            read_end_txn_marker(header, batch)


_READERS: tuple[Callable[[bytes, bytes | None], None], ...] = (
    _offsets,
    _transaction_state,
    _share_state,
    _schemas,
)
MARKERS = len(_READERS)
TOMBSTONE = 0x80


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    kind = (data[0] & ~TOMBSTONE) % (MARKERS + 1)
    if kind == MARKERS:
        _markers(data[1:])
        return
    key_end = 2 + data[1]
    value = None if data[0] & TOMBSTONE else data[key_end:]
    _READERS[kind](data[2:key_end], value)


def _keyed(kind: int, key: bytes, value: bytes | None) -> bytes:
    return bytes([kind | (TOMBSTONE if value is None else 0), len(key)]) + key + (value or b"")


def _string(text: str) -> bytes:
    return _INT16.pack(len(text)) + text.encode()


def seeds() -> list[bytes]:
    offset_key = records.encode_offset_key(records.OffsetKey("group", "topic", 3))
    group_key = records.encode_group_key(records.GroupKey("group"))
    member = records.MemberValue("m-1", None, "client", "/127.0.0.1", 300000, 45000, b"sub", b"as")
    group_value = records.GroupValue("consumer", 4, "range", "m-1", 1000, [member])
    txn = TxnTransit(7, -1, 2, -1, 60000, TxnState.ONGOING, frozenset({("t", 0)}), 10, 20)
    share_key = state_records.ShareStateKey("share", uuid.UUID(int=5), 1)
    snapshot = state_records.ShareSnapshot(
        0, 1, 2, 100, (state_records.StateBatch(100, 110, 2, 1),)
    )
    schema = registry_records.SchemaRecord("s-value", 1, 1, "AVRO", '"string"', (), False)
    marker = build_control_batch(
        True, producer_id=7, producer_epoch=1, coordinator_epoch=3, timestamp=10
    )
    return [
        _keyed(0, offset_key, records.encode_offset_value(records.OffsetValue(42, 1, "m", 5))),
        _keyed(0, offset_key, None),
        _keyed(0, group_key, records.encode_group_value(group_value)),
        _keyed(0, _INT16.pack(3) + _string("g"), _INT16.pack(0) + _INT32.pack(7) + b"\x00"),
        _keyed(1, state_log.encode_key("txn-1"), state_log.encode_value(txn)),
        _keyed(1, state_log.encode_key("txn-1"), state_log.encode_value(txn, version=1)),
        _keyed(2, state_records.encode_key(share_key), state_records.encode_snapshot(snapshot)),
        _keyed(3, registry_records.schema_key("s-value", 1), registry_records.schema_value(schema)),
        _keyed(3, registry_records.config_key(None), registry_records.config_value("FULL")),
        _keyed(3, registry_records.delete_subject_key("s-value"), None),
        bytes([MARKERS]) + marker + marker,
    ]
