"""ListOffsets (key 2), versions 1-7.

Behaviour: timestamp -2 (earliest) gives the log start offset, -1 (latest) the high
watermark (the last stable offset for read_committed), -3 (max timestamp, v7+) the record
with the largest timestamp, and any other timestamp the first record whose timestamp is at
or after it — found through `.timeindex`, then inside that batch — or offset -1 with
timestamp -1 when there is none. As in Kafka's `ReplicaManager.fetchOffset`, a record found
at or after the last fetchable offset (the last stable offset for read_committed, else the
high watermark) is answered as none found. The leader epoch is this node's (0). A current leader
epoch newer than ours gets UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH. A
partition whose storage failed (offline log) gets KAFKA_STORAGE_ERROR.

Version notes: v0 (old-style offsets) is not served; isolation level is v2+; leader epochs
v4+; max timestamp v7+.
"""

from __future__ import annotations

from typing import Any

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
READ_COMMITTED = 1
NOT_FOUND = (-1, -1)


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
    if timestamp == EARLIEST:
        return log.log_start_offset, -1
    last_fetchable = partition.last_stable_offset if read_committed else partition.high_watermark
    if timestamp == LATEST:
        return last_fetchable, -1
    if timestamp == MAX_TIMESTAMP:
        found = _max_timestamp(log.batch_with_max_timestamp())
    else:
        found = _first_at_or_after(log.batch_for_timestamp(timestamp), timestamp)
    return NOT_FOUND if found[0] >= last_fetchable else found


def _partition_entry(ctx: RequestContext, topic: str, wanted: Any, read_committed: bool) -> Any:
    partition = ctx.broker.cluster.partition(topic, wanted.partition_index)
    error: ErrorCode | None = None
    if partition is None:
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    else:
        error = partition.leader_epoch_error(wanted.current_leader_epoch) or ctx.leader_error(
            partition
        )
        if error is None and partition.log.storage_error is not None:
            error = ErrorCode.KAFKA_STORAGE_ERROR
    if wanted.timestamp < MAX_TIMESTAMP and error is None:
        error = ErrorCode.UNSUPPORTED_VERSION
    if error is not None or partition is None:
        return _Partition(
            partition_index=wanted.partition_index,
            error_code=error,
            timestamp=-1,
            offset=-1,
            leader_epoch=-1,
        )
    try:
        offset, timestamp = offset_for(partition, wanted.timestamp, read_committed)
    except OSError:  # the log went offline reading it
        return _Partition(
            partition_index=wanted.partition_index,
            error_code=ErrorCode.KAFKA_STORAGE_ERROR,
            timestamp=-1,
            offset=-1,
            leader_epoch=-1,
        )
    return _Partition(
        partition_index=wanted.partition_index,
        error_code=ErrorCode.NO_ERROR,
        timestamp=timestamp,
        offset=offset,
        leader_epoch=partition.leader_epoch if offset >= 0 else -1,
    )


@handles(ApiKey.ListOffsets, 1, 7)
async def handle_list_offsets(ctx: RequestContext, request: Any) -> Any:
    read_committed = request.isolation_level == READ_COMMITTED
    topics = [
        _Topic(
            name=topic.name,
            partitions=[
                _partition_entry(ctx, topic.name, wanted, read_committed)
                for wanted in topic.partitions
            ],
        )
        for topic in request.topics
    ]
    return new_response(ApiKey.ListOffsets, ctx.api_version, throttle_time_ms=0, topics=topics)
