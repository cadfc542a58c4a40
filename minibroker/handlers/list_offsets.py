"""ListOffsets (key 2), versions 0-11 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: timestamp -2 (earliest) gives the log start offset, -1 (latest) the high
watermark (the last stable offset for read_committed), -3 (max timestamp) the record
with the largest timestamp, and any other timestamp the first record whose timestamp is at
or after it — found through `.timeindex`, then inside that batch — or offset -1 with
timestamp -1 when there is none. As in Kafka's `ReplicaManager.fetchOffset`, a record found
at or after the last fetchable offset (the last stable offset for read_committed, else the
high watermark) is answered as none found. The leader epoch answered is the partition's (0 on
a single broker; in an in-process cluster it grows with every leader change), and a node that
does not lead the partition answers NOT_LEADER_OR_FOLLOWER. A current leader epoch newer than
the partition's gets UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH. A
partition whose storage failed (offline log) gets KAFKA_STORAGE_ERROR. A partition named twice
in one request gets INVALID_REQUEST (each time), and a negative timestamp that is not one of
Kafka's special values, or one the request's version does not know yet, UNSUPPORTED_VERSION;
both are checked before the partition is looked up, as Kafka's `ReplicaManager` does.

Authorization: each topic needs DESCRIBE, else its partitions get TOPIC_AUTHORIZATION_FAILED
(offset and timestamp -1) before anything else is checked; as in Kafka, those topics come
after the authorized ones in the answer.

The tiered-storage timestamps are answered as by a Kafka broker whose topics have no remote
storage (`UnifiedLog.fetchOffsetByTimestamp`): -4 (earliest local) is the log start offset,
-5 (latest tiered) and -6 (earliest pending upload) are offset -1, timestamp -1, epoch -1.

v0 (served only under an emulated Kafka 2.8-3.9) answers as Kafka 3.9's
`handleListOffsetRequestV0` and `UnifiedLog.legacyFetchOffsetsBefore`: up to MaxNumOffsets
offsets, newest first, from the points (each segment's base offset, at least the log start
offset, with the segment's last-modified time; then the log end offset, now, when the last
segment holds data): -1 starts at the last point, -2 at the first, another timestamp at the
newest point modified at or before it (none: an empty list). For a consumer (replica id -1) an
offset past the high watermark is replaced by the high watermark. A timestamp below -2 gets
UNSUPPORTED_VERSION; a negative MaxNumOffsets UNKNOWN_SERVER_ERROR (Kafka's array allocation
fails); replica id -2 (debugging) skips the leader check. No duplicate-partition check.

Version notes: v0 answers `OldStyleOffsets` instead of an offset and timestamp; isolation
level is v2+; leader epochs v4+; max timestamp -3 v7+ (KIP-734); earliest local -4 v8+
(KIP-405); latest tiered -5 v9+ (KIP-1005); `timeout_ms` v10+ (KIP-1075, for remote reads:
nothing here waits, so it is unused); earliest pending upload -6 v11+ (KIP-1023).
"""

from __future__ import annotations

import itertools
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import iter_records
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.ListOffsets, "response", "ListOffsetsTopicResponse")
_Partition = struct_type(
    ApiKey.ListOffsets, "response", "ListOffsetsTopicResponse", "ListOffsetsPartitionResponse"
)
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
# The first version that knows each special timestamp (Kafka's timestampMinSupportedVersion).
SPECIAL_TIMESTAMP_FROM_VERSION = {
    LATEST: 1,
    EARLIEST: 1,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}
READ_COMMITTED = 1
NOT_FOUND = (-1, -1)
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2


def _first_at_or_after(batch: bytes | None, timestamp: int) -> tuple[int, int]:
    if batch is None:
        return NOT_FOUND
    for record in iter_records(batch):
        if record.timestamp >= timestamp:
            return record.offset, record.timestamp
    return NOT_FOUND


def _max_timestamp(batch: bytes | None) -> tuple[int, int]:
    if batch is None:
        return NOT_FOUND
    best = NOT_FOUND
    for record in iter_records(batch):
        if record.timestamp > best[1]:
            best = (record.offset, record.timestamp)
    return best


def offset_for(partition: Partition, timestamp: int, read_committed: bool) -> tuple[int, int]:
    """(offset, timestamp) answered for `timestamp`, as Kafka's `fetchOffsetByTimestamp`."""
    log = partition.log
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return NOT_FOUND
    last_fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == LATEST:
        return last_fetchable, -1
    if timestamp == MAX_TIMESTAMP:
        found = _max_timestamp(log.batch_with_max_timestamp())
    else:
        found = _first_at_or_after(log.batch_for_timestamp(timestamp), timestamp)
    return NOT_FOUND if found[0] >= last_fetchable else found


def _unsupported_timestamp(timestamp: int, version: int) -> bool:
    """Kafka's `ReplicaManager.isListOffsetsTimestampUnsupported`."""
    if timestamp >= 0:
        return False
    first_version = SPECIAL_TIMESTAMP_FROM_VERSION.get(timestamp)
    return first_version is None or version < first_version


def _error_entry(index: int, error: ErrorCode) -> Any:
    return _Partition(
        partition_index=index, error_code=error, timestamp=-1, offset=-1, leader_epoch=-1
    )


def _partition_error(ctx: RequestContext, partition: Partition | None, wanted: Any) -> ErrorCode:
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    error = partition.leader_epoch_error(wanted.current_leader_epoch) or ctx.leader_error(partition)
    if error is None and partition.log.storage_error is not None:
        error = ErrorCode.KAFKA_STORAGE_ERROR
    return error or ErrorCode.NO_ERROR


def _partition_entry(ctx: RequestContext, topic: str, wanted: Any, read_committed: bool) -> Any:
    if _unsupported_timestamp(wanted.timestamp, ctx.api_version):
        return _error_entry(wanted.partition_index, ErrorCode.UNSUPPORTED_VERSION)
    partition = ctx.broker.cluster.partition(topic, wanted.partition_index)
    error = _partition_error(ctx, partition, wanted)
    if error != ErrorCode.NO_ERROR or partition is None:
        return _error_entry(wanted.partition_index, error)
    try:
        offset, timestamp = offset_for(partition, wanted.timestamp, read_committed)
    except OSError:  # the log went offline reading it
        return _error_entry(wanted.partition_index, ErrorCode.KAFKA_STORAGE_ERROR)
    return _Partition(
        partition_index=wanted.partition_index,
        error_code=ErrorCode.NO_ERROR,
        timestamp=timestamp,
        offset=offset,
        leader_epoch=partition.leader_epoch if offset >= 0 else -1,
    )


def legacy_offsets_before(
    segments: list[tuple[int, int, int]],
    log_start_offset: int,
    log_end_offset: int,
    now_ms: int,
    timestamp: int,
    max_num_offsets: int,
) -> list[int]:
    """Kafka's `legacyFetchOffsetsBefore` over (base offset, size, last modified ms) segments."""
    points = [(max(base, log_start_offset), modified) for base, _, modified in segments]
    if segments and segments[-1][1] > 0:
        points.append((log_end_offset, now_ms))
    if timestamp == LATEST:
        start = len(points) - 1
    elif timestamp == EARLIEST:
        start = 0
    else:
        start = max(
            (i for i, (_, modified) in enumerate(points) if modified <= timestamp), default=-1
        )
    count = min(max_num_offsets, start + 1)
    return sorted((points[start - j][0] for j in range(count)), reverse=True)


def _capped_at_high_watermark(offsets: list[int], high_watermark: int) -> list[int]:
    """What a consumer gets (Kafka's `Partition.legacyFetchOffsetsForTimestamp`)."""
    if not any(offset > high_watermark for offset in offsets):
        return offsets
    return [high_watermark, *itertools.dropwhile(lambda o: o > high_watermark, offsets)]


def _old_style_error(partition: Partition | None, wanted: Any) -> ErrorCode | None:
    if wanted.timestamp < EARLIEST:
        return ErrorCode.UNSUPPORTED_VERSION
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if partition.log.storage_error is not None:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if wanted.max_num_offsets < 0:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return None


def _old_style_entry(ctx: RequestContext, topic: str, wanted: Any, replica_id: int) -> Any:
    """A v0 answer: the partition's offsets before `wanted.timestamp`."""
    partition = ctx.broker.cluster.partition(topic, wanted.partition_index)
    error = _old_style_error(partition, wanted)
    if error is None and partition is not None and replica_id != DEBUGGING_REPLICA_ID:
        error = ctx.leader_error(partition)
    if error is not None or partition is None:
        return _Partition(partition_index=wanted.partition_index, error_code=error)
    log = partition.log
    try:
        offsets = legacy_offsets_before(
            log.segments_with_times(),
            log.log_start_offset,
            log.log_end_offset,
            ctx.now_ms(),
            wanted.timestamp,
            wanted.max_num_offsets,
        )
    except OSError:
        return _error_entry(wanted.partition_index, ErrorCode.KAFKA_STORAGE_ERROR)
    if replica_id == CONSUMER_REPLICA_ID:
        offsets = _capped_at_high_watermark(offsets, partition.high_watermark)
    return _Partition(
        partition_index=wanted.partition_index,
        error_code=ErrorCode.NO_ERROR,
        old_style_offsets=offsets,
    )


def _duplicates(topics: list[Any]) -> set[tuple[str, int]]:
    seen: set[tuple[str, int]] = set()
    duplicates = set()
    for topic in topics:
        for wanted in topic.partitions:
            key = (topic.name, wanted.partition_index)
            if key in seen:
                duplicates.add(key)
            seen.add(key)
    return duplicates


def _answered_topics(ctx: RequestContext, request: Any, authorized: list[Any]) -> list[Any]:
    if ctx.api_version == 0:
        return [
            _Topic(
                name=topic.name,
                partitions=[
                    _old_style_entry(ctx, topic.name, wanted, request.replica_id)
                    for wanted in topic.partitions
                ],
            )
            for topic in authorized
        ]
    read_committed = request.isolation_level == READ_COMMITTED
    duplicates = _duplicates(authorized)
    return [
        _Topic(
            name=topic.name,
            partitions=[
                _error_entry(wanted.partition_index, ErrorCode.INVALID_REQUEST)
                if (topic.name, wanted.partition_index) in duplicates
                else _partition_entry(ctx, topic.name, wanted, read_committed)
                for wanted in topic.partitions
            ],
        )
        for topic in authorized
    ]


@handles(ApiKey.ListOffsets, 0, 11)
async def handle_list_offsets(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.TOPIC, (topic.name for topic in request.topics)
    )
    authorized = [topic for topic in request.topics if topic.name in allowed]
    topics = _answered_topics(ctx, request, authorized)
    topics.extend(
        _Topic(
            name=topic.name,
            partitions=[
                _error_entry(wanted.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for wanted in topic.partitions
            ],
        )
        for topic in request.topics
        if topic.name not in allowed
    )
    return new_response(ApiKey.ListOffsets, ctx.api_version, throttle_time_ms=0, topics=topics)
