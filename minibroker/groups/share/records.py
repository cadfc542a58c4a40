"""A share group as Kafka 4.3's records in `__consumer_offsets`, and back (KIP-932).

Key types (an INT16 record type, then the non-flexible key struct: group id, member id):

    9  ShareGroupPartitionMetadataKey      (older releases' topic metadata: read and ignored)
    10 ShareGroupMemberMetadataKey(group_id, member_id)  ShareGroupMemberMetadataValue: rack
       id, client id/host, subscribed topic names
    11 ShareGroupMetadataKey(group_id)     ShareGroupMetadataValue: epoch, metadata hash
    12 ShareGroupTargetAssignmentMetadataKey(group_id)  assignment epoch
    13 ShareGroupTargetAssignmentMemberKey(group_id, member_id)  topic partitions
    14 ShareGroupCurrentMemberAssignmentKey(group_id, member_id)  member epoch, previous
       member epoch, state (0, stable: share members have no other), assigned partitions
    15 ShareGroupStatePartitionMetadataKey (which share partitions have state: minibroker
       keeps that in `__share_group_state`, groups/share/persist.py; read and ignored)

Values are an INT16 version (0) and a flexible struct (record_codec.py). `changes(group)` is
the records that differ from what was last written, with tombstones for those gone, so a
steady heartbeat writes nothing; `tombstones(group)` deletes them all; `restore()` rebuilds a
group from the latest value of each key found at load. The metadata hash is minibroker's own
(of the subscribed topics' names, ids and partition counts): a group whose topics changed
while it was not loaded sees the change at its next heartbeat.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Mapping

from minibroker.groups.consumer.model import Assignment, TopicInfo
from minibroker.groups.record_codec import (
    StoredRecord,
    StructReader,
    StructWriter,
    decode_group_key,
    encode_group_key,
    take_changes,
    take_tombstones,
)
from minibroker.groups.share.model import ShareGroup, ShareMember

PARTITION_METADATA = 9
MEMBER_METADATA = 10
METADATA = 11
TARGET_METADATA = 12
TARGET_MEMBER = 13
CURRENT_ASSIGNMENT = 14
STATE_PARTITION_METADATA = 15
SHARE_GROUP_RECORD_TYPES = frozenset(range(PARTITION_METADATA, STATE_PARTITION_METADATA + 1))
_MEMBER_TYPES = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
# The types minibroker writes (`written` holds their last values).
_WRITTEN_TYPES = _MEMBER_TYPES | {METADATA, TARGET_METADATA}
_VALUE_VERSION = 0
_STABLE = 0


encode_key = encode_group_key


def decode_key(key: bytes) -> tuple[int, str, str | None]:
    return decode_group_key(key, SHARE_GROUP_RECORD_TYPES, _MEMBER_TYPES, "share-group")


def metadata_hash(metadata: Mapping[str, TopicInfo]) -> int:
    """A 64-bit hash of the subscribed topics (Kafka hashes them with its own function: the
    values differ from Kafka's)."""
    described = sorted((t.name, str(t.topic_id), t.partitions) for t in metadata.values())
    digest = hashlib.sha256(repr(described).encode()).digest()
    value: int = struct.unpack(">q", digest[:8])[0]
    return value


# ---- writing ---------------------------------------------------------------------------------


def _value() -> StructWriter:
    return StructWriter().int16(_VALUE_VERSION)


def _topic_partitions(writer: StructWriter, assignment: Assignment) -> StructWriter:
    writer.count(assignment)
    for topic_id in sorted(assignment):
        writer.uuid(topic_id).count(assignment[topic_id])
        for partition in sorted(assignment[topic_id]):
            writer.int32(partition)
        writer.tagged({})
    return writer


def _member_value(member: ShareMember) -> bytes:
    writer = _value().compact_string(member.rack_id)
    writer.compact_string(member.client_id).compact_string(member.client_host)
    names = sorted(member.subscribed_topic_names)
    writer.count(names)
    for name in names:
        writer.compact_string(name)
    return bytes(writer.tagged({}).buf)


def _current_value(member: ShareMember) -> bytes:
    writer = _value().int32(member.member_epoch).int32(member.previous_member_epoch)
    writer.int8(_STABLE)
    return bytes(_topic_partitions(writer, member.assigned).tagged({}).buf)


def snapshot(group: ShareGroup) -> dict[bytes, bytes | None]:
    group_id = group.group_id
    epoch = _value().int32(group.group_epoch).int64(metadata_hash(group.subscription_metadata))
    records: dict[bytes, bytes | None] = {
        encode_key(METADATA, group_id): bytes(epoch.tagged({}).buf),
        encode_key(TARGET_METADATA, group_id): bytes(
            _value().int32(group.assignment_epoch).tagged({}).buf
        ),
    }
    for member_id, member in group.members.items():
        records[encode_key(MEMBER_METADATA, group_id, member_id)] = _member_value(member)
        records[encode_key(CURRENT_ASSIGNMENT, group_id, member_id)] = _current_value(member)
        target = _topic_partitions(_value(), group.target.get(member_id, {}))
        records[encode_key(TARGET_MEMBER, group_id, member_id)] = bytes(target.tagged({}).buf)
    return records


def changes(group: ShareGroup) -> list[StoredRecord]:
    return take_changes(group, snapshot(group))


def tombstones(group: ShareGroup) -> list[StoredRecord]:
    return take_tombstones(group)


# ---- reading ---------------------------------------------------------------------------------


def _reader(value: bytes) -> StructReader:
    return StructReader.of_version(value, _VALUE_VERSION, "share-group")


def _read_topic_partitions(reader: StructReader) -> Assignment:
    assignment: Assignment = {}
    for _ in range(reader.array_count()):
        topic_id: uuid.UUID = reader.uuid()
        assignment[topic_id] = {reader.int32() for _ in range(reader.array_count())}
        reader.tagged()
    return assignment


def _apply_member(member: ShareMember, value: bytes) -> None:
    reader = _reader(value)
    member.rack_id = reader.compact_nullable_string()
    member.client_id = reader.compact_string()
    member.client_host = reader.compact_string()
    names = [reader.compact_string() for _ in range(reader.array_count())]
    member.subscribed_topic_names = frozenset(names)


def _apply_current(member: ShareMember, value: bytes) -> None:
    reader = _reader(value)
    member.member_epoch = reader.int32()
    member.previous_member_epoch = reader.int32()
    reader.int8()
    member.assigned = _read_topic_partitions(reader)


def restore(group_id: str, records: Mapping[bytes, bytes]) -> tuple[ShareGroup, int] | None:
    """The group the live records describe and the metadata hash it was written with; None
    without its metadata record (deleted)."""
    by_kind: dict[int, list[tuple[str | None, bytes]]] = {}
    for key, value in records.items():
        kind, _, member_id = decode_key(key)
        by_kind.setdefault(kind, []).append((member_id, value))
    if METADATA not in by_kind:
        return None
    group = ShareGroup(group_id)
    reader = _reader(by_kind[METADATA][0][1])
    group.group_epoch = reader.int32()
    written_hash = reader.int64()
    for _, value in by_kind.get(TARGET_METADATA, []):
        group.assignment_epoch = _reader(value).int32()
    for kind, apply in ((MEMBER_METADATA, _apply_member), (CURRENT_ASSIGNMENT, _apply_current)):
        for member_id, value in by_kind.get(kind, []):
            if member_id is not None:
                apply(group.members.setdefault(member_id, ShareMember(member_id)), value)
    for member_id, value in by_kind.get(TARGET_MEMBER, []):
        if member_id is not None:
            group.target[member_id] = _read_topic_partitions(_reader(value))
    group.written = {
        key: value for key, value in records.items() if decode_key(key)[0] in _WRITTEN_TYPES
    }
    return group, written_hash
