"""The `__consumer_offsets` records of KIP-848 consumer groups, as Kafka 4.3's group
coordinator writes them (group-coordinator `ConsumerGroup*Key/Value`).

A record key is an INT16 record type followed by the key struct, not flexible (INT16-length
strings). A value is an INT16 value version (0 for every type here) followed by a flexible
struct: compact strings/arrays (unsigned varint length + 1, 0 for null), UUIDs as 16 bytes,
and a trailer of tagged fields (count, then tag, size, payload each). A null value is a
tombstone: the record's key is deleted. Key types and their values:

    3  ConsumerGroupMetadataKey(group_id)                 ConsumerGroupMetadataValue
       epoch; tagged: metadata_hash (tag 0, KIP-1101, default 0)
    4  ConsumerGroupPartitionMetadataKey(group_id)        ConsumerGroupPartitionMetadataValue
       topics (id, name, partition count, racks). Kafka 4.x no longer writes it: it reads
       it and writes a tombstone for it at the group's next metadata update.
    5  ConsumerGroupMemberMetadataKey(group_id, member_id)  ConsumerGroupMemberMetadataValue
       instance id, rack id, client id/host, subscribed names and regex, rebalance timeout,
       server assignor; tagged: classic_member_metadata (tag 0: session timeout and the
       supported protocols of a classic member of a consumer group; None otherwise)
    6  ConsumerGroupTargetAssignmentMetadataKey(group_id)
       ConsumerGroupTargetAssignmentMetadataValue:
       assignment_epoch; tagged: assignment_timestamp_ms (tag 0, KIP-1263, default 0)
    7  ConsumerGroupTargetAssignmentMemberKey(group_id, member_id)
       ConsumerGroupTargetAssignmentMemberValue: topic_partitions
    8  ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id)
       ConsumerGroupCurrentMemberAssignmentValue: member_epoch, previous_member_epoch, state
       (Kafka's MemberState value), assigned_partitions, partitions_pending_revocation; each
       TopicPartitions may carry assignment_epochs (tagged, KIP-1251; None when absent)
    16 ConsumerGroupRegularExpressionKey(group_id, regular_expression)
       ConsumerGroupRegularExpressionValue: topics, version (metadata version), timestamp

The API (`groups/consumer/persist.py` persists consumer groups with it):

- `encode_consumer_group_record(key, value_or_None) -> (key_bytes, value_bytes_or_None)`:
  a `StoredRecord` for `OffsetsTopic.append`; None writes the tombstone.
- `decode_consumer_group_record(key_bytes, value_bytes_or_None) -> ConsumerGroupRecord`
  (`.key`, `.value`, None for a tombstone); raises `RecordFormatError` for bytes that are not
  a consumer-group record of a known version.
- `record_type(key_bytes)` and `CONSUMER_GROUP_RECORD_TYPES` tell the record types apart.
- `encode_key`/`encode_value`/`decode_key`/`decode_value` for one half.

Values keep the tagged fields this reader does not know (`unknown_tagged_fields`, tag ->
raw payload) and write them back, as Kafka's generated classes do; unknown tagged fields
of nested structs are skipped. Topic ids are `uuid.UUID`. The log cleaner compacts these
records by their key bytes, which name the type, group and member: one live record each.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from minibroker.groups.record_codec import (
    RecordFormatError,
    StructReader,
    StructWriter,
    TaggedFields,
)

GROUP_METADATA_TYPE = 3
PARTITION_METADATA_TYPE = 4
MEMBER_METADATA_TYPE = 5
TARGET_ASSIGNMENT_METADATA_TYPE = 6
TARGET_ASSIGNMENT_MEMBER_TYPE = 7
CURRENT_MEMBER_ASSIGNMENT_TYPE = 8
REGULAR_EXPRESSION_TYPE = 16
VALUE_VERSION = 0
DEFAULT_REBALANCE_TIMEOUT_MS = -1

_INT16 = struct.Struct(">h")
_INT64 = struct.Struct(">q")


# ---- keys ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regular_expression: str


ConsumerGroupKey: TypeAlias = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)

_KEY_TYPES: dict[type[ConsumerGroupKey], int] = {
    ConsumerGroupMetadataKey: GROUP_METADATA_TYPE,
    ConsumerGroupPartitionMetadataKey: PARTITION_METADATA_TYPE,
    ConsumerGroupMemberMetadataKey: MEMBER_METADATA_TYPE,
    ConsumerGroupTargetAssignmentMetadataKey: TARGET_ASSIGNMENT_METADATA_TYPE,
    ConsumerGroupTargetAssignmentMemberKey: TARGET_ASSIGNMENT_MEMBER_TYPE,
    ConsumerGroupCurrentMemberAssignmentKey: CURRENT_MEMBER_ASSIGNMENT_TYPE,
    ConsumerGroupRegularExpressionKey: REGULAR_EXPRESSION_TYPE,
}
CONSUMER_GROUP_RECORD_TYPES = frozenset(_KEY_TYPES.values())


# ---- values -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    partition: int
    racks: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: list[PartitionRacks] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: list[TopicMetadata] = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    supported_protocols: list[ClassicProtocol] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp_ms: int = 0
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID
    partitions: list[int] = field(default_factory=list)
    # The epoch each partition was assigned at, aligned with `partitions` (KIP-1251);
    # only in a current member assignment, None when not recorded.
    assignment_epochs: list[int] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: list[TopicPartitions] = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: list[TopicPartitions] = field(default_factory=list)
    partitions_pending_revocation: list[TopicPartitions] = field(default_factory=list)
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: list[str]
    version: int
    timestamp: int
    unknown_tagged_fields: TaggedFields = field(default_factory=dict)


ConsumerGroupValue: TypeAlias = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    key: ConsumerGroupKey
    value: ConsumerGroupValue | None  # None: a tombstone


# ---- primitives ---------------------------------------------------------------------------


def _int32_list(reader: StructReader) -> list[int]:
    return [reader.int32() for _ in range(reader.array_count())]


def _string_list(reader: StructReader) -> list[str]:
    return [reader.compact_string() for _ in range(reader.array_count())]


def _write_strings(writer: StructWriter, items: list[str]) -> None:
    writer.count(items)
    for item in items:
        writer.compact_string(item)


def _write_int32s(writer: StructWriter, items: list[int]) -> None:
    writer.count(items)
    for item in items:
        writer.int32(item)


def _int64_tag(value: int) -> bytes:
    return _INT64.pack(value)


def _read_int64_tag(payload: bytes) -> int:
    if len(payload) != 8:
        raise RecordFormatError("an INT64 tagged field of the wrong size")
    value: int = _INT64.unpack(payload)[0]
    return value


# ---- keys ---------------------------------------------------------------------------------


def encode_key(key: ConsumerGroupKey) -> bytes:
    writer = StructWriter().int16(_KEY_TYPES[type(key)]).string(key.group_id)
    if isinstance(key, ConsumerGroupRegularExpressionKey):
        writer.string(key.regular_expression)
    elif isinstance(
        key,
        ConsumerGroupMemberMetadataKey
        | ConsumerGroupTargetAssignmentMemberKey
        | ConsumerGroupCurrentMemberAssignmentKey,
    ):
        writer.string(key.member_id)
    return bytes(writer.buf)


def record_type(key_bytes: bytes) -> int:
    """The record type of a `__consumer_offsets` key (its leading INT16)."""
    if len(key_bytes) < 2:
        raise RecordFormatError("a key shorter than its type")
    value: int = _INT16.unpack_from(key_bytes)[0]
    return value


def decode_key(key_bytes: bytes) -> ConsumerGroupKey:
    reader = StructReader(key_bytes)
    kind = reader.int16()
    group_id = reader.string()
    key: ConsumerGroupKey
    if kind == GROUP_METADATA_TYPE:
        key = ConsumerGroupMetadataKey(group_id)
    elif kind == PARTITION_METADATA_TYPE:
        key = ConsumerGroupPartitionMetadataKey(group_id)
    elif kind == MEMBER_METADATA_TYPE:
        key = ConsumerGroupMemberMetadataKey(group_id, reader.string())
    elif kind == TARGET_ASSIGNMENT_METADATA_TYPE:
        key = ConsumerGroupTargetAssignmentMetadataKey(group_id)
    elif kind == TARGET_ASSIGNMENT_MEMBER_TYPE:
        key = ConsumerGroupTargetAssignmentMemberKey(group_id, reader.string())
    elif kind == CURRENT_MEMBER_ASSIGNMENT_TYPE:
        key = ConsumerGroupCurrentMemberAssignmentKey(group_id, reader.string())
    elif kind == REGULAR_EXPRESSION_TYPE:
        key = ConsumerGroupRegularExpressionKey(group_id, reader.string())
    else:
        raise RecordFormatError(f"record type {kind} is not a consumer-group record")
    reader.end()
    return key


# ---- values: encode -----------------------------------------------------------------------


def _write_topic_partitions(writer: StructWriter, items: list[TopicPartitions]) -> None:
    writer.count(items)
    for item in items:
        writer.uuid(item.topic_id)
        _write_int32s(writer, item.partitions)
        tags: TaggedFields = {}
        if item.assignment_epochs is not None:
            epochs = StructWriter()
            _write_int32s(epochs, item.assignment_epochs)
            tags[0] = bytes(epochs.buf)
        writer.tagged(tags)


def _write_classic_member(metadata: ClassicMemberMetadata) -> bytes:
    writer = StructWriter().uvarint(1).int32(metadata.session_timeout_ms)
    writer.count(metadata.supported_protocols)
    for protocol in metadata.supported_protocols:
        writer.compact_string(protocol.name).compact_bytes(protocol.metadata).tagged({})
    return bytes(writer.tagged({}).buf)


def _with_known_tags(unknown: TaggedFields, known: TaggedFields) -> TaggedFields:
    return {**unknown, **known}


def _encode_body(writer: StructWriter, value: ConsumerGroupValue) -> TaggedFields:
    """Write the untagged fields of `value`; return its known tagged fields to write."""
    if isinstance(value, ConsumerGroupMetadataValue):
        writer.int32(value.epoch)
        return {0: _int64_tag(value.metadata_hash)} if value.metadata_hash != 0 else {}
    if isinstance(value, ConsumerGroupPartitionMetadataValue):
        writer.count(value.topics)
        for topic in value.topics:
            writer.uuid(topic.topic_id).compact_string(topic.topic_name)
            writer.int32(topic.num_partitions).count(topic.partition_metadata)
            for racks in topic.partition_metadata:
                writer.int32(racks.partition)
                _write_strings(writer, racks.racks)
                writer.tagged({})
            writer.tagged({})
        return {}
    if isinstance(value, ConsumerGroupMemberMetadataValue):
        writer.compact_string(value.instance_id).compact_string(value.rack_id)
        writer.compact_string(value.client_id).compact_string(value.client_host)
        _write_strings(writer, value.subscribed_topic_names)
        writer.compact_string(value.subscribed_topic_regex).int32(value.rebalance_timeout_ms)
        writer.compact_string(value.server_assignor)
        classic = value.classic_member_metadata
        return {} if classic is None else {0: _write_classic_member(classic)}
    if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        writer.int32(value.assignment_epoch)
        timestamp = value.assignment_timestamp_ms
        return {0: _int64_tag(timestamp)} if timestamp != 0 else {}
    if isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        _write_topic_partitions(writer, value.topic_partitions)
        return {}
    if isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        writer.int32(value.member_epoch).int32(value.previous_member_epoch).int8(value.state)
        _write_topic_partitions(writer, value.assigned_partitions)
        _write_topic_partitions(writer, value.partitions_pending_revocation)
        return {}
    _write_strings(writer, value.topics)
    writer.int64(value.version).int64(value.timestamp)
    return {}


def encode_value(value: ConsumerGroupValue) -> bytes:
    writer = StructWriter().int16(VALUE_VERSION)
    known = _encode_body(writer, value)
    writer.tagged(_with_known_tags(value.unknown_tagged_fields, known))
    return bytes(writer.buf)


def encode_consumer_group_record(
    key: ConsumerGroupKey, value: ConsumerGroupValue | None
) -> tuple[bytes, bytes | None]:
    """The key and value bytes of one record (value None: the key's tombstone)."""
    return encode_key(key), None if value is None else encode_value(value)


# ---- values: decode -----------------------------------------------------------------------


def _read_topic_partitions(reader: StructReader) -> list[TopicPartitions]:
    items = []
    for _ in range(reader.array_count()):
        topic_id = reader.uuid()
        partitions = _int32_list(reader)
        tags = reader.tagged()
        epochs = None
        if 0 in tags:
            epochs_reader = StructReader(tags[0])
            length = epochs_reader.count()
            epochs = None if length < 0 else [epochs_reader.int32() for _ in range(length)]
        items.append(TopicPartitions(topic_id, partitions, epochs))
    return items


def _read_classic_member(payload: bytes) -> ClassicMemberMetadata | None:
    reader = StructReader(payload)
    if reader.uvarint() <= 0:
        return None
    session_timeout_ms = reader.int32()
    protocols = []
    for _ in range(reader.array_count()):
        protocols.append(ClassicProtocol(reader.compact_string(), reader.compact_bytes()))
        reader.tagged()
    reader.tagged()
    return ClassicMemberMetadata(session_timeout_ms, protocols)


def _read_topic_metadata(reader: StructReader) -> TopicMetadata:
    topic_id = reader.uuid()
    name = reader.compact_string()
    num_partitions = reader.int32()
    racks = []
    for _ in range(reader.array_count()):
        racks.append(PartitionRacks(reader.int32(), _string_list(reader)))
        reader.tagged()
    reader.tagged()
    return TopicMetadata(topic_id, name, num_partitions, racks)


def _decode_group_metadata(reader: StructReader) -> ConsumerGroupMetadataValue:
    epoch = reader.int32()
    tags = reader.tagged()
    metadata_hash = _read_int64_tag(tags.pop(0)) if 0 in tags else 0
    return ConsumerGroupMetadataValue(epoch, metadata_hash, tags)


def _decode_partition_metadata(reader: StructReader) -> ConsumerGroupPartitionMetadataValue:
    topics = [_read_topic_metadata(reader) for _ in range(reader.array_count())]
    return ConsumerGroupPartitionMetadataValue(topics, reader.tagged())


def _decode_member_metadata(reader: StructReader) -> ConsumerGroupMemberMetadataValue:
    instance_id = reader.compact_nullable_string()
    rack_id = reader.compact_nullable_string()
    client_id = reader.compact_string()
    client_host = reader.compact_string()
    names = _string_list(reader)
    regex = reader.compact_nullable_string()
    rebalance_timeout_ms = reader.int32()
    server_assignor = reader.compact_nullable_string()
    tags = reader.tagged()
    classic = _read_classic_member(tags.pop(0)) if 0 in tags else None
    return ConsumerGroupMemberMetadataValue(
        instance_id,
        rack_id,
        client_id,
        client_host,
        names,
        regex,
        rebalance_timeout_ms,
        server_assignor,
        classic,
        tags,
    )


def _decode_target_metadata(reader: StructReader) -> ConsumerGroupTargetAssignmentMetadataValue:
    epoch = reader.int32()
    tags = reader.tagged()
    timestamp = _read_int64_tag(tags.pop(0)) if 0 in tags else 0
    return ConsumerGroupTargetAssignmentMetadataValue(epoch, timestamp, tags)


def _decode_target_member(reader: StructReader) -> ConsumerGroupTargetAssignmentMemberValue:
    return ConsumerGroupTargetAssignmentMemberValue(_read_topic_partitions(reader), reader.tagged())


def _decode_current_assignment(reader: StructReader) -> ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch = reader.int32()
    previous_epoch = reader.int32()
    state = reader.int8()
    assigned = _read_topic_partitions(reader)
    pending = _read_topic_partitions(reader)
    return ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch, previous_epoch, state, assigned, pending, reader.tagged()
    )


def _decode_regular_expression(reader: StructReader) -> ConsumerGroupRegularExpressionValue:
    topics = _string_list(reader)
    version = reader.int64()
    timestamp = reader.int64()
    return ConsumerGroupRegularExpressionValue(topics, version, timestamp, reader.tagged())


_VALUE_DECODERS: dict[int, Callable[[StructReader], ConsumerGroupValue]] = {
    GROUP_METADATA_TYPE: _decode_group_metadata,
    PARTITION_METADATA_TYPE: _decode_partition_metadata,
    MEMBER_METADATA_TYPE: _decode_member_metadata,
    TARGET_ASSIGNMENT_METADATA_TYPE: _decode_target_metadata,
    TARGET_ASSIGNMENT_MEMBER_TYPE: _decode_target_member,
    CURRENT_MEMBER_ASSIGNMENT_TYPE: _decode_current_assignment,
    REGULAR_EXPRESSION_TYPE: _decode_regular_expression,
}


def decode_value(kind: int, value_bytes: bytes) -> ConsumerGroupValue:
    """The value of a record of type `kind` (see `record_type`)."""
    decoder = _VALUE_DECODERS.get(kind)
    if decoder is None:
        raise RecordFormatError(f"record type {kind} is not a consumer-group record")
    reader = StructReader(value_bytes)
    version = reader.int16()
    if version != VALUE_VERSION:
        raise RecordFormatError(f"unsupported value version {version} of record type {kind}")
    value = decoder(reader)
    reader.end()
    return value


def decode_consumer_group_record(
    key_bytes: bytes, value_bytes: bytes | None
) -> ConsumerGroupRecord:
    key = decode_key(key_bytes)
    if value_bytes is None:
        return ConsumerGroupRecord(key, None)
    return ConsumerGroupRecord(key, decode_value(_KEY_TYPES[type(key)], value_bytes))
