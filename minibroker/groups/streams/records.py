"""A streams group as Kafka 4.3's records in `__consumer_offsets`, and back.

Key types (an INT16 record type, then the non-flexible key struct: group id, member id):

    17 StreamsGroupMetadataKey(group_id)   StreamsGroupMetadataValue: epoch, metadata hash,
       assignment configs; tagged: validated topology epoch (tag 0, default -1)
    18 StreamsGroupPartitionMetadataKey     (older releases' topic metadata: read and ignored)
    19 StreamsGroupMemberMetadataKey(group_id, member_id)  StreamsGroupMemberMetadataValue:
       instance id, rack id, client id/host, rebalance timeout, topology epoch, process id,
       user endpoint (nullable struct), client tags
    20 StreamsGroupTargetAssignmentMetadataKey(group_id)  assignment epoch; tagged: the time
       it was computed (tag 0, KIP-1263, default 0)
    21 StreamsGroupTargetAssignmentMemberKey(group_id, member_id)  active, standby and
       warm-up tasks
    22 StreamsGroupCurrentMemberAssignmentKey(group_id, member_id)  member epoch, previous
       member epoch, state, assigned and pending-revocation tasks of each kind; the active
       ones carry their assignment epochs (tagged, tag 0 of each TaskIds, KIP-1251)
    23 StreamsGroupTopologyKey(group_id)  StreamsGroupTopologyValue: the topology

Values are an INT16 version (0) and a flexible struct (record_codec.py). `snapshot(group)` is
every record describing the group now; `changes(group)` the records that differ from what was
last written, with tombstones for those gone, so a steady heartbeat writes nothing;
`tombstones(group)` deletes them all; `restore()` rebuilds a group from the latest value of each
key found at load. Unknown tagged fields are not kept. Task offsets, the configured topology
and the endpoint information epoch are not records in Kafka either: they are rebuilt.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping

from minibroker.groups.record_codec import (
    RecordFormatError,
    StoredRecord,
    StructReader,
    StructWriter,
    decode_group_key,
    encode_group_key,
    take_changes,
    take_tombstones,
)
from minibroker.groups.streams.model import (
    CopartitionGroup,
    MemberState,
    StreamsGroup,
    StreamsMember,
    StreamsTopology,
    Subtopology,
    TaskMap,
    TasksTuple,
    TopicInfo,
)

METADATA = 17
PARTITION_METADATA = 18
MEMBER_METADATA = 19
TARGET_METADATA = 20
TARGET_MEMBER = 21
CURRENT_ASSIGNMENT = 22
TOPOLOGY = 23
STREAMS_GROUP_RECORD_TYPES = frozenset(range(METADATA, TOPOLOGY + 1))
_MEMBER_TYPES = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_VALUE_VERSION = 0


def record_type(key: bytes) -> int:
    if len(key) < 2:
        raise RecordFormatError("a key shorter than its type")
    kind: int = _INT16.unpack_from(key)[0]
    return kind


encode_key = encode_group_key


def decode_key(key: bytes) -> tuple[int, str, str | None]:
    return decode_group_key(key, STREAMS_GROUP_RECORD_TYPES, _MEMBER_TYPES, "streams-group")


def metadata_hash(snapshot: Iterable[tuple[str, int]]) -> int:
    """A 64-bit hash of the topology's topics and their partition counts (Kafka hashes the
    topics' metadata too, with its own function: the values differ from Kafka's)."""
    digest = hashlib.sha256(repr(sorted(snapshot)).encode()).digest()
    value: int = struct.unpack(">q", digest[:8])[0]
    return value


# ---- writing ---------------------------------------------------------------------------------


def _value() -> StructWriter:
    return StructWriter().int16(_VALUE_VERSION)


def _strings(writer: StructWriter, items: Iterable[str]) -> None:
    values = list(items)
    writer.count(values)
    for item in values:
        writer.compact_string(item)


def _int_array(writer: StructWriter, items: Iterable[int], width: int) -> None:
    values = list(items)
    writer.count(values)
    for item in values:
        if width == 2:
            writer.int16(item)
        else:
            writer.int32(item)


def _key_values(writer: StructWriter, items: Iterable[tuple[str, str]]) -> None:
    pairs = list(items)
    writer.count(pairs)
    for key, value in pairs:
        writer.compact_string(key).compact_string(value).tagged({})


def _task_ids(
    writer: StructWriter, tasks: TaskMap, epochs: Mapping[tuple[str, int], int] | None = None
) -> None:
    """TaskIds entries; with `epochs`, each entry's assignment epochs (tag 0, KIP-1251: an
    INT32 array aligned with the partitions)."""
    entries = [(sub, sorted(parts)) for sub, parts in sorted(tasks.items()) if parts]
    writer.count(entries)
    for sub, parts in entries:
        writer.compact_string(sub)
        _int_array(writer, parts, 4)
        tags = {}
        if epochs is not None and all((sub, p) in epochs for p in parts):
            aligned = StructWriter()
            _int_array(aligned, [epochs[(sub, p)] for p in parts], 4)
            tags[0] = bytes(aligned.buf)
        writer.tagged(tags)


def _metadata_value(group: StreamsGroup) -> bytes:
    writer = _value().int32(group.group_epoch).int64(group.metadata_hash)
    _key_values(writer, group.last_assignment_configs)
    tags = {}
    if group.validated_topology_epoch != -1:
        tags[0] = _INT32.pack(group.validated_topology_epoch)
    return bytes(writer.tagged(tags).buf)


def _target_metadata_value(group: StreamsGroup) -> bytes:
    tags = {}
    if group.assignment_timestamp_ms:
        tags[0] = _INT64.pack(group.assignment_timestamp_ms)
    return bytes(_value().int32(group.assignment_epoch).tagged(tags).buf)


def _member_value(member: StreamsMember) -> bytes:
    writer = _value()
    writer.compact_string(member.instance_id).compact_string(member.rack_id)
    writer.compact_string(member.client_id).compact_string(member.client_host)
    writer.int32(member.rebalance_timeout_ms).int32(member.topology_epoch)
    writer.compact_string(member.process_id)
    if member.user_endpoint is None:
        writer.int8(-1)
    else:
        host, port = member.user_endpoint
        writer.int8(1).compact_string(host).uint16(port).tagged({})
    _key_values(writer, sorted(member.client_tags.items()))
    return bytes(writer.tagged({}).buf)


def _tasks_value(tasks: TasksTuple, writer: StructWriter) -> StructWriter:
    for kind in (tasks.active, tasks.standby, tasks.warmup):
        _task_ids(writer, kind)
    return writer


def _current_value(member: StreamsMember) -> bytes:
    writer = _value().int32(member.member_epoch).int32(member.previous_member_epoch)
    writer.int8(member.state.code)
    for tasks in (member.assigned, member.pending_revocation):
        _task_ids(writer, tasks.active, member.active_epochs)
        _task_ids(writer, tasks.standby)
        _task_ids(writer, tasks.warmup)
    return bytes(writer.tagged({}).buf)


def _topic_info(writer: StructWriter, topics: Iterable[TopicInfo]) -> None:
    infos = list(topics)
    writer.count(infos)
    for info in infos:
        writer.compact_string(info.name).int32(info.partitions).int16(info.replication_factor)
        _key_values(writer, info.configs)
        writer.tagged({})


def _topology_value(topology: StreamsTopology) -> bytes:
    writer = _value().int32(topology.epoch)
    subs = [topology.subtopologies[sub_id] for sub_id in sorted(topology.subtopologies)]
    writer.count(subs)
    for sub in subs:
        writer.compact_string(sub.subtopology_id)
        _strings(writer, sub.source_topics)
        _strings(writer, [])  # source topic regular expressions: not supported
        _topic_info(writer, sub.state_changelog_topics)
        _strings(writer, sub.repartition_sink_topics)
        _topic_info(writer, sub.repartition_source_topics)
        writer.count(sub.copartition_groups)
        for group in sub.copartition_groups:
            _int_array(writer, group.source_topics, 2)
            _int_array(writer, [], 2)
            _int_array(writer, group.repartition_source_topics, 2)
            writer.tagged({})
        writer.tagged({})
    return bytes(writer.tagged({}).buf)


def snapshot(group: StreamsGroup) -> dict[bytes, bytes | None]:
    group_id = group.group_id
    records: dict[bytes, bytes | None] = {
        encode_key(METADATA, group_id): _metadata_value(group),
        encode_key(TARGET_METADATA, group_id): _target_metadata_value(group),
    }
    if group.topology is not None:
        records[encode_key(TOPOLOGY, group_id)] = _topology_value(group.topology)
    for member_id, member in group.members.items():
        records[encode_key(MEMBER_METADATA, group_id, member_id)] = _member_value(member)
        records[encode_key(CURRENT_ASSIGNMENT, group_id, member_id)] = _current_value(member)
        target = group.target.get(member_id, TasksTuple())
        records[encode_key(TARGET_MEMBER, group_id, member_id)] = bytes(
            _tasks_value(target, _value()).tagged({}).buf
        )
    return records


def changes(group: StreamsGroup) -> list[StoredRecord]:
    return take_changes(group, snapshot(group))


def tombstones(group: StreamsGroup) -> list[StoredRecord]:
    return take_tombstones(group)


# ---- reading ---------------------------------------------------------------------------------


def _reader(value: bytes) -> StructReader:
    return StructReader.of_version(value, _VALUE_VERSION, "streams-group")


def _read_strings(reader: StructReader) -> list[str]:
    return [reader.compact_string() for _ in range(reader.array_count())]


def _read_ints(reader: StructReader, width: int) -> list[int]:
    count = reader.array_count()
    return [reader.int16() if width == 2 else reader.int32() for _ in range(count)]


def _read_key_values(reader: StructReader) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(reader.array_count()):
        pairs.append((reader.compact_string(), reader.compact_string()))
        reader.tagged()
    return pairs


def _read_tasks(reader: StructReader, epochs: dict[tuple[str, int], int] | None = None) -> TaskMap:
    tasks: TaskMap = {}
    for _ in range(reader.array_count()):
        sub = reader.compact_string()
        parts = _read_ints(reader, 4)
        tasks[sub] = set(parts)
        aligned = reader.tagged().get(0)
        if epochs is not None and aligned is not None:
            values = _read_ints(StructReader(aligned), 4)
            epochs.update(((sub, p), e) for p, e in zip(parts, values, strict=False))
    return tasks


def _read_tuple(
    reader: StructReader, epochs: dict[tuple[str, int], int] | None = None
) -> TasksTuple:
    return TasksTuple(_read_tasks(reader, epochs), _read_tasks(reader), _read_tasks(reader))


def _read_topic_infos(reader: StructReader) -> tuple[TopicInfo, ...]:
    infos = []
    for _ in range(reader.array_count()):
        name = reader.compact_string()
        partitions = reader.int32()
        replication = reader.int16()
        configs = tuple(_read_key_values(reader))
        reader.tagged()
        infos.append(TopicInfo(name, partitions, replication, configs))
    return tuple(infos)


def _read_topology(value: bytes) -> StreamsTopology:
    reader = _reader(value)
    epoch = reader.int32()
    subs: dict[str, Subtopology] = {}
    for _ in range(reader.array_count()):
        sub_id = reader.compact_string()
        sources = tuple(_read_strings(reader))
        _read_strings(reader)
        changelogs = _read_topic_infos(reader)
        sinks = tuple(_read_strings(reader))
        repartition = _read_topic_infos(reader)
        groups = []
        for _ in range(reader.array_count()):
            source_indexes = tuple(_read_ints(reader, 2))
            _read_ints(reader, 2)
            repartition_indexes = tuple(_read_ints(reader, 2))
            reader.tagged()
            groups.append(CopartitionGroup(source_indexes, repartition_indexes))
        reader.tagged()
        subs[sub_id] = Subtopology(sub_id, sources, sinks, changelogs, repartition, tuple(groups))
    reader.tagged()
    return StreamsTopology(epoch, subs)


def _apply_metadata(group: StreamsGroup, value: bytes) -> None:
    reader = _reader(value)
    group.group_epoch = reader.int32()
    group.metadata_hash = reader.int64()
    group.last_assignment_configs = tuple(_read_key_values(reader))
    tags = reader.tagged()
    if 0 in tags:
        group.validated_topology_epoch = _INT32.unpack(tags[0])[0]


def _apply_member(member: StreamsMember, value: bytes) -> None:
    reader = _reader(value)
    member.instance_id = reader.compact_nullable_string()
    member.rack_id = reader.compact_nullable_string()
    member.client_id = reader.compact_string()
    member.client_host = reader.compact_string()
    member.rebalance_timeout_ms = reader.int32()
    member.topology_epoch = reader.int32()
    member.process_id = reader.compact_string()
    if reader.int8() >= 0:
        host = reader.compact_string()
        member.user_endpoint = (host, reader.uint16())
        reader.tagged()
    member.client_tags = dict(_read_key_values(reader))


def _apply_current(member: StreamsMember, value: bytes) -> None:
    reader = _reader(value)
    member.member_epoch = reader.int32()
    member.previous_member_epoch = reader.int32()
    member.state = MemberState.from_code(reader.int8())
    member.assigned = _read_tuple(reader, member.active_epochs)
    member.pending_revocation = _read_tuple(reader, member.active_epochs)


def restore(group_id: str, records: Mapping[bytes, bytes]) -> StreamsGroup | None:
    """The group the live records describe; None without its metadata record (deleted)."""
    by_kind: dict[int, list[tuple[str | None, bytes]]] = {}
    for key, value in records.items():
        kind, _, member_id = decode_key(key)
        by_kind.setdefault(kind, []).append((member_id, value))
    if METADATA not in by_kind:
        return None
    group = StreamsGroup(group_id)
    _apply_metadata(group, by_kind[METADATA][0][1])
    for _, value in by_kind.get(TARGET_METADATA, []):
        reader = _reader(value)
        group.assignment_epoch = reader.int32()
        timestamp = reader.tagged().get(0)
        if timestamp is not None and len(timestamp) == _INT64.size:
            group.assignment_timestamp_ms = _INT64.unpack(timestamp)[0]
    for _, value in by_kind.get(TOPOLOGY, []):
        group.topology = _read_topology(value)
    for kind, apply in ((MEMBER_METADATA, _apply_member), (CURRENT_ASSIGNMENT, _apply_current)):
        for member_id, value in by_kind.get(kind, []):
            if member_id is not None:
                apply(group.members.setdefault(member_id, StreamsMember(member_id)), value)
    for member_id, value in by_kind.get(TARGET_MEMBER, []):
        if member_id is not None:
            reader = _reader(value)
            group.target[member_id] = _read_tuple(reader)
    group.written = dict(records)
    return group
