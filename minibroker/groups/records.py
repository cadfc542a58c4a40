"""The key and value formats of `__consumer_offsets` records, as Kafka's group coordinator
writes them (group-coordinator `OffsetCommitKey/Value`, `GroupMetadataKey/Value`).

Every key and value starts with an INT16 version. Keys of version 0 and 1 are offset commits
(group, topic, partition), version 2 is group metadata (group). minibroker writes offset
commit values v3 (v1 when the commit carries an expire timestamp, OffsetCommit v2-4) and
group metadata values v3, as Kafka 3.x/4.x do; it reads versions 0-3. A record with a null
value is a tombstone: the offset or group was deleted.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
MAX_READABLE_VALUE_VERSION = 3
NO_TIMESTAMP = -1
NO_LEADER_EPOCH = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A key or value that is not in a format this reader knows."""


class _Writer:
    def __init__(self) -> None:
        self.buf = bytearray()

    def int16(self, value: int) -> _Writer:
        self.buf += _INT16.pack(value)
        return self

    def int32(self, value: int) -> _Writer:
        self.buf += _INT32.pack(value)
        return self

    def int64(self, value: int) -> _Writer:
        self.buf += _INT64.pack(value)
        return self

    def string(self, value: str | None) -> _Writer:
        if value is None:
            return self.int16(-1)
        encoded = value.encode()
        self.int16(len(encoded))
        self.buf += encoded
        return self

    def bytes_(self, value: bytes) -> _Writer:
        self.int32(len(value))
        self.buf += value
        return self


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise RecordFormatError("record runs past its end")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int16(self) -> int:
        value: int = _INT16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack(self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack(self._take(8))[0]
        return value

    def nullable_string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else self._take(length).decode()

    def string(self) -> str:
        return self.nullable_string() or ""

    def bytes_(self) -> bytes:
        length = self.int32()
        return b"" if length < 0 else self._take(length)


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
    writer = _Writer().int16(OFFSET_COMMIT_KEY_VERSION).string(key.group).string(key.topic)
    return bytes(writer.int32(key.partition).buf)


def encode_group_key(key: GroupKey) -> bytes:
    return bytes(_Writer().int16(GROUP_METADATA_KEY_VERSION).string(key.group).buf)


def encode_offset_value(value: OffsetValue) -> bytes:
    if value.expire_timestamp != NO_TIMESTAMP:
        writer = _Writer().int16(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY).int64(value.offset)
        writer.string(value.metadata).int64(value.commit_timestamp)
        return bytes(writer.int64(value.expire_timestamp).buf)
    writer = _Writer().int16(OFFSET_COMMIT_VALUE_VERSION).int64(value.offset)
    writer.int32(value.leader_epoch).string(value.metadata)
    return bytes(writer.int64(value.commit_timestamp).buf)


def encode_group_value(value: GroupValue) -> bytes:
    writer = _Writer().int16(GROUP_METADATA_VALUE_VERSION).string(value.protocol_type)
    writer.int32(value.generation).string(value.protocol).string(value.leader)
    writer.int64(value.current_state_timestamp).int32(len(value.members))
    for member in value.members:
        writer.string(member.member_id).string(member.group_instance_id)
        writer.string(member.client_id).string(member.client_host)
        writer.int32(member.rebalance_timeout_ms).int32(member.session_timeout_ms)
        writer.bytes_(member.subscription).bytes_(member.assignment)
    return bytes(writer.buf)


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.string(), reader.string(), reader.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(reader.string())
    raise RecordFormatError(f"unknown __consumer_offsets key version {version}")


def _value_version(reader: _Reader) -> int:
    version = reader.int16()
    if not 0 <= version <= MAX_READABLE_VALUE_VERSION:
        raise RecordFormatError(f"unsupported value version {version}")
    return version


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = _Reader(data)
    version = _value_version(reader)
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else NO_LEADER_EPOCH
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire_timestamp = reader.int64() if version == 1 else NO_TIMESTAMP
    return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def _decode_member(reader: _Reader, version: int) -> MemberValue:
    member_id = reader.string()
    instance_id = reader.nullable_string() if version >= 3 else None
    client_id = reader.string()
    client_host = reader.string()
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
    reader = _Reader(data)
    version = _value_version(reader)
    protocol_type = reader.string()
    generation = reader.int32()
    protocol = reader.nullable_string()
    leader = reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else NO_TIMESTAMP
    members = [_decode_member(reader, version) for _ in range(reader.int32())]
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, members)
