"""The records of `__share_group_state`, as Kafka's share coordinator writes them
(share-coordinator `ShareSnapshotKey/Value`, record type 0).

Key: INT16 record type 0, then (not flexible) GroupId (INT16-length string), TopicId (16
bytes), Partition (INT32). Value: INT16 version 0, then a flexible struct: SnapshotEpoch
(UINT16), StateEpoch (INT32), LeaderEpoch (INT32), StartOffset (INT64), StateBatches (a
compact array of FirstOffset INT64, LastOffset INT64, DeliveryState INT8 — 0 available,
2 acknowledged, 4 archived — and DeliveryCount INT16, each with its tagged fields), tagged
fields. A null value (tombstone) deletes the share partition's state.

minibroker writes a whole snapshot whenever a share partition's durable state changes (Kafka
also writes ShareUpdate deltas, type 1, between snapshots; a reader that replays snapshots
only needs the latest per key, which compaction keeps).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from minibroker.groups.record_codec import RecordFormatError, StructReader, StructWriter
from minibroker.log.checkpoints import kafka_uuid_string

SHARE_SNAPSHOT_TYPE = 0
VALUE_VERSION = 0


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


def coordinator_key(key: ShareStateKey) -> str:
    """Kafka's `SharePartitionKey.asCoordinatorKey` (the topic id as Kafka's `Uuid.toString`):
    what picks the state partition, and the key FindCoordinator's SHARE key type names."""
    return f"{key.group_id}:{kafka_uuid_string(key.topic_id)}:{key.partition}"


def encode_key(key: ShareStateKey) -> bytes:
    writer = StructWriter().int16(SHARE_SNAPSHOT_TYPE).string(key.group_id)
    return bytes(writer.uuid(key.topic_id).int32(key.partition).buf)


def decode_key(data: bytes) -> ShareStateKey:
    reader = StructReader(data)
    if (kind := reader.int16()) != SHARE_SNAPSHOT_TYPE:
        raise RecordFormatError(f"not a share snapshot key (type {kind})")
    key = ShareStateKey(reader.string(), reader.uuid(), reader.int32())
    reader.end()
    return key


def encode_snapshot(value: ShareSnapshot) -> bytes:
    writer = StructWriter().int16(VALUE_VERSION).uint16(value.snapshot_epoch)
    writer.int32(value.state_epoch).int32(value.leader_epoch).int64(value.start_offset)
    writer.count(value.state_batches)
    for batch in value.state_batches:
        writer.int64(batch.first_offset).int64(batch.last_offset)
        writer.int8(batch.delivery_state).int16(batch.delivery_count).tagged({})
    return bytes(writer.tagged({}).buf)


def decode_snapshot(data: bytes) -> ShareSnapshot:
    reader = StructReader(data)
    if (version := reader.int16()) != VALUE_VERSION:
        raise RecordFormatError(f"share snapshot value version {version}")
    epochs = (reader.uint16(), reader.int32(), reader.int32())
    start_offset = reader.int64()
    batches = []
    for _ in range(reader.array_count()):
        batch = StateBatch(reader.int64(), reader.int64(), reader.int8(), reader.int16())
        reader.tagged()
        batches.append(batch)
    reader.tagged()
    reader.end()
    return ShareSnapshot(*epochs, start_offset, tuple(batches))
