"""The key and value formats of `__consumer_offsets` records, as Kafka's group coordinator
writes them (group-coordinator `OffsetCommitKey/Value`, `GroupMetadataKey/Value`).

Every key and value starts with an INT16 version. Keys of version 0 and 1 are offset commits
(group, topic, partition), version 2 is group metadata (group). minibroker writes offset
commit values v3 (v1 when the commit carries an expire timestamp, OffsetCommit v2-4) and
group metadata values v3, as Kafka 3.x/4.x do; it reads versions 0-3. A record with a null
value is a tombstone: the offset or group was deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minibroker.groups.record_codec import RecordFormatError as RecordFormatError
from minibroker.groups.record_codec import StructReader, StructWriter

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
MAX_READABLE_VALUE_VERSION = 3
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str = ""
    commit_timestamp: int = NO_TIMESTAMP
    expire_timestamp: int = NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = NO_TIMESTAMP
    members: list[MemberValue] = field(default_factory=list)


def encode_offset_key(key: OffsetKey) -> bytes:
    writer = StructWriter().int16(OFFSET_COMMIT_KEY_VERSION).string(key.group).string(key.topic)
    return bytes(writer.int32(key.partition).buf)


def encode_group_key(key: GroupKey) -> bytes:
    return bytes(StructWriter().int16(GROUP_METADATA_KEY_VERSION).string(key.group).buf)


def encode_offset_value(value: OffsetValue) -> bytes:
    if value.expire_timestamp != NO_TIMESTAMP:
        writer = StructWriter().int16(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY).int64(value.offset)
        writer.string(value.metadata).int64(value.commit_timestamp)
        return bytes(writer.int64(value.expire_timestamp).buf)
    writer = StructWriter().int16(OFFSET_COMMIT_VALUE_VERSION).int64(value.offset)
    writer.int32(value.leader_epoch).string(value.metadata)
    return bytes(writer.int64(value.commit_timestamp).buf)


def encode_group_value(value: GroupValue) -> bytes:
    writer = StructWriter().int16(GROUP_METADATA_VALUE_VERSION).string(value.protocol_type)
    writer.int32(value.generation).nullable_string(value.protocol).nullable_string(value.leader)
    writer.int64(value.current_state_timestamp).int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id).nullable_string(member.group_instance_id)
        writer.string(member.client_id).string(member.client_host)
        writer.int32(member.rebalance_timeout_ms).int32(member.session_timeout_ms)
        writer.bytes_(member.subscription).bytes_(member.assignment)
    return bytes(writer.buf)


def _text(reader: StructReader) -> str:
    """A string where older writers may have left a null: read as empty."""
    return reader.nullable_string() or ""


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    reader = StructReader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(_text(reader), _text(reader), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(_text(reader))
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def _value_version(reader: StructReader) -> int:
    version = reader.int16()
    if not 0 <= version <= MAX_READABLE_VALUE_VERSION:
        raise RecordFormatError(f"unsupported value version {version}")
    return version


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = StructReader(data)
    version = _value_version(reader)
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = _text(reader)
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else NO_TIMESTAMP
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _decode_member(reader: StructReader, version: int) -> MemberValue:
    member_id = _text(reader)
    instance_id = reader.nullable_string() if version >= 3 else None
    client_id = _text(reader)
    client_host = _text(reader)
    rebalance_timeout = reader.int32() if version >= 1 else -1
    session_timeout = reader.int32()
    if rebalance_timeout < 0:
        rebalance_timeout = session_timeout
    return MemberValue(
        member_id,
        instance_id,
        client_id,
        client_host,
        rebalance_timeout,
        session_timeout,
        reader.bytes_(),
        reader.bytes_(),
    )


def decode_group_value(data: bytes) -> GroupValue:
    reader = StructReader(data)
    version = _value_version(reader)
    protocol_type = _text(reader)
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else NO_TIMESTAMP
    members = [_decode_member(reader, version) for _ in range(reader.int32())]
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, members)
