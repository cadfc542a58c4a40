"""`__transaction_state`: the transaction coordinator's records, as Kafka writes them.

Key = TransactionLogKey v0 {version int16 = 0, transactional id string}. Value =
TransactionLogValue {version int16, producer id int64, producer epoch int16, timeout int32,
status int8, partitions nullable [{topic string, [int32]}], last update int64, start int64};
v1 is flexible (compact strings and arrays) with tagged fields PreviousProducerId (0),
NextProducerId (1) and ClientTransactionVersion (2). As Kafka's
`TransactionVersion.transactionLogValueVersion`, v1 is written while `transaction.version` >= 1
is finalized (v0 otherwise), carrying PreviousProducerId when set and the client's transaction
version (2 for a TV2 transaction); both versions are read. Empty
transactions are stored with null partitions, as Kafka does; a null value (tombstone) is an
expired transactional id.

An internal topic (internal/topic.py): created on first use with
`transaction.state.log.num.partitions` partitions and
`segment.bytes=transaction.state.log.segment.bytes`; a transactional id's records go to the
partition of the id.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from minibroker.cluster.state import Cluster
from minibroker.internal.topic import InternalTopic, ReadMarker
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.varint import encode_uvarint
from minibroker.txn.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnState, TxnTransit

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1
PREVIOUS_PRODUCER_ID_TAG = 0
NEXT_PRODUCER_ID_TAG = 1
CLIENT_TRANSACTION_VERSION_TAG = 2

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class TxnRecordError(ValueError):
    """A `__transaction_state` key or value this reader does not understand."""


def _string(value: str) -> bytes:
    encoded = value.encode()
    return _INT16.pack(len(encoded)) + encoded


def encode_key(transactional_id: str) -> bytes:
    return _INT16.pack(KEY_VERSION) + _string(transactional_id)


class _Writer:
    def __init__(self, flexible: bool) -> None:
        self.flexible = flexible
        self.parts: list[bytes] = []

    def length(self, count: int, classic: struct.Struct) -> None:
        """An array or string length; -1 for null."""
        self.parts.append(encode_uvarint(count + 1) if self.flexible else classic.pack(count))

    def string(self, value: str) -> None:
        encoded = value.encode()
        self.length(len(encoded), _INT16)
        self.parts.append(encoded)

    def tagged_fields(self, fields: dict[int, bytes]) -> None:
        if not self.flexible:
            return
        self.parts.append(encode_uvarint(len(fields)))
        for tag, data in sorted(fields.items()):
            self.parts.append(encode_uvarint(tag) + encode_uvarint(len(data)) + data)


def encode_value(transit: TxnTransit, version: int = VALUE_VERSION) -> bytes:
    writer = _Writer(flexible=version == FLEXIBLE_VALUE_VERSION)
    writer.parts += [
        _INT16.pack(version),
        _INT64.pack(transit.producer_id),
        _INT16.pack(transit.producer_epoch),
        _INT32.pack(transit.timeout_ms),
        _INT8.pack(transit.state.id),
    ]
    if transit.state == TxnState.EMPTY:
        writer.length(-1, _INT32)
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(transit.partitions):
            by_topic.setdefault(topic, []).append(partition)
        writer.length(len(by_topic), _INT32)
        for topic, partitions in by_topic.items():
            writer.string(topic)
            writer.length(len(partitions), _INT32)
            writer.parts.extend(_INT32.pack(partition) for partition in partitions)
            writer.tagged_fields({})
    writer.parts.append(_INT64.pack(transit.update_ms))
    writer.parts.append(_INT64.pack(transit.start_ms))
    tagged = {}
    if transit.last_producer_id != NO_PRODUCER_ID:
        tagged[PREVIOUS_PRODUCER_ID_TAG] = _INT64.pack(transit.last_producer_id)
    if transit.next_producer_id != NO_PRODUCER_ID:
        tagged[NEXT_PRODUCER_ID_TAG] = _INT64.pack(transit.next_producer_id)
    if transit.client_transaction_version:
        tagged[CLIENT_TRANSACTION_VERSION_TAG] = _INT16.pack(transit.client_transaction_version)
    writer.tagged_fields(tagged)
    return b"".join(writer.parts)


class _Reader:
    def __init__(self, data: bytes, flexible: bool = False) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise TxnRecordError("record runs past its end")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def fixed(self, layout: struct.Struct) -> int:
        value: int = layout.unpack(self.take(layout.size))[0]
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise TxnRecordError("varint too long")

    def length(self) -> int:
        """An array or string length; -1 for null."""
        if self.flexible:
            return self.uvarint() - 1
        return self.fixed(_INT16)

    def array_length(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.fixed(_INT32)

    def string(self) -> str:
        size = self.length()
        if size < 0:
            raise TxnRecordError("null string")
        return self.take(size).decode()

    def tagged_fields(self) -> dict[int, bytes]:
        if not self.flexible:
            return {}
        fields = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            fields[tag] = self.take(self.uvarint())
        return fields


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    version = reader.fixed(_INT16)
    if version != KEY_VERSION:
        raise TxnRecordError(f"unknown TransactionLogKey version {version}")
    return reader.string()


def decode_value(data: bytes) -> TxnTransit:
    reader = _Reader(data)
    version = reader.fixed(_INT16)
    if version not in (VALUE_VERSION, FLEXIBLE_VALUE_VERSION):
        raise TxnRecordError(f"unknown TransactionLogValue version {version}")
    reader.flexible = version == FLEXIBLE_VALUE_VERSION
    producer_id = reader.fixed(_INT64)
    producer_epoch = reader.fixed(_INT16)
    timeout_ms = reader.fixed(_INT32)
    try:
        state = TxnState.from_id(reader.fixed(_INT8))
    except ValueError as exc:
        raise TxnRecordError(str(exc)) from exc
    partitions = set()
    for _ in range(max(reader.array_length(), 0)):
        topic = reader.string()
        for _ in range(max(reader.array_length(), 0)):
            partitions.add((topic, reader.fixed(_INT32)))
        reader.tagged_fields()
    update_ms = reader.fixed(_INT64)
    start_ms = reader.fixed(_INT64)
    tagged = reader.tagged_fields()
    return TxnTransit(
        producer_id=producer_id,
        last_producer_id=_tagged_int(tagged, PREVIOUS_PRODUCER_ID_TAG, _INT64, NO_PRODUCER_ID),
        producer_epoch=producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        timeout_ms=timeout_ms,
        state=state,
        partitions=frozenset(partitions),
        start_ms=start_ms,
        update_ms=update_ms,
        client_transaction_version=_tagged_int(tagged, CLIENT_TRANSACTION_VERSION_TAG, _INT16, 0),
        next_producer_id=_tagged_int(tagged, NEXT_PRODUCER_ID_TAG, _INT64, NO_PRODUCER_ID),
    )


def _tagged_int(tagged: dict[int, bytes], tag: int, layout: struct.Struct, default: int) -> int:
    raw = tagged.get(tag)
    if raw is None:
        return default
    if len(raw) != layout.size:
        raise TxnRecordError(f"tagged field {tag} has {len(raw)} bytes, not {layout.size}")
    value: int = layout.unpack(raw)[0]
    return value


@dataclass(frozen=True, slots=True)
class LoadedTxn:
    transactional_id: str
    value: TxnTransit | None
    coordinator_epoch: int


class TransactionStateTopic(InternalTopic):
    def __init__(self, cluster: Cluster, num_partitions: int, segment_bytes: int) -> None:
        super().__init__(cluster, TRANSACTION_STATE_TOPIC, num_partitions, segment_bytes)
        self.value_version = VALUE_VERSION

    def coordinator_epoch(self, transactional_id: str) -> int:
        """Kafka's coordinator epoch: the leader epoch of the id's log partition."""
        return self.partition_of(transactional_id).leader_epoch

    def append(self, transactional_id: str, transit: TxnTransit | None, now_ms: int) -> ErrorCode:
        """Store a transition (None: a tombstone); the error a request answers if that fails."""
        value = None if transit is None else encode_value(transit, self.value_version)
        return self.append_records(
            transactional_id, [(encode_key(transactional_id), value)], now_ms
        )

    def load(self, indexes: Iterable[int] | None = None) -> Iterator[LoadedTxn]:
        """Every record in log order, per partition (all, or those of `indexes`)."""
        for partition in self.created_partitions(indexes):
            for item in self.read(partition):
                if isinstance(item, ReadMarker):
                    continue
                key, value, _ = item
                try:
                    transactional_id = decode_key(key)
                    decoded = None if value is None else decode_value(value)
                except (TxnRecordError, UnicodeDecodeError) as exc:
                    log.warning("skipping a %s record: %s", TRANSACTION_STATE_TOPIC, exc)
                    continue
                yield LoadedTxn(transactional_id, decoded, partition.leader_epoch)
