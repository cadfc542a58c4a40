"""DeleteRecords (key 21), versions 0-2.

Behaviour: moves each partition's log start offset up to the requested offset (-1: the
high watermark), dropping whole segments below it, and answers the new log start offset
as the low watermark; an offset at or below the current start changes nothing. As in
Kafka's `Partition.deleteRecordsOnLeader`: an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION, a topic whose cleanup.policy lacks "delete" POLICY_VIOLATION,
a negative offset or one above the high watermark OFFSET_OUT_OF_RANGE, an internal topic
INVALID_TOPIC_EXCEPTION, and in an in-process cluster a node that does not lead the partition
NOT_LEADER_OR_FOLLOWER; errors answer low watermark -1. The new start is checkpointed at once
(the log's `on_log_start_moved`). A replicated partition's followers move their own log start
when they next fetch from the leader (server/replica_fetcher.py); unlike Kafka, which answers
once every replica's low watermark has moved, the answer does not wait for them, and the
timeout is not used.

Authorization: each topic needs DELETE, checked first: else its partitions get
TOPIC_AUTHORIZATION_FAILED (low watermark -1).

Version notes: v2 is the flexible encoding of v1.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.DeleteRecords, "response", "DeleteRecordsTopicResult")
_Partition = struct_type(
    ApiKey.DeleteRecords, "response", "DeleteRecordsTopicResult", "DeleteRecordsPartitionResult"
)
HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def _error(
    ctx: RequestContext, topic: str, partition: Partition | None, offset: int
) -> ErrorCode | None:
    cluster = ctx.broker.cluster
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (not_leader := ctx.leader_error(partition)) is not None:
        return not_leader
    found = cluster.topics[topic]
    if found.internal:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if "delete" not in cluster.topic_value(found, "cleanup.policy").split(","):
        return ErrorCode.POLICY_VIOLATION
    if offset < 0 or offset > partition.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return None


def _refused(wanted: Any, error: ErrorCode | None) -> Any:
    return _Partition(
        partition_index=wanted.partition_index,
        low_watermark=INVALID_LOW_WATERMARK,
        error_code=error,
    )


def _delete(ctx: RequestContext, topic: str, wanted: Any) -> Any:
    partition = ctx.broker.cluster.partition(topic, wanted.partition_index)
    offset = wanted.offset
    if offset == HIGH_WATERMARK and partition is not None:
        offset = partition.high_watermark
    error = _error(ctx, topic, partition, offset)
    if error is not None or partition is None:
        return _refused(wanted, error)
    return _Partition(
        partition_index=wanted.partition_index,
        low_watermark=partition.delete_records_before(offset),
        error_code=ErrorCode.NO_ERROR,
    )


@handles(ApiKey.DeleteRecords, 0, 2)
async def handle_delete_records(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.authorized_names(
        AclOperation.DELETE, ResourceType.TOPIC, (topic.name for topic in request.topics)
    )
    topics = [
        _Topic(
            name=topic.name,
            partitions=[
                _delete(ctx, topic.name, p)
                if topic.name in allowed
                else _refused(p, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for p in topic.partitions
            ],
        )
        for topic in request.topics
    ]
    return new_response(ApiKey.DeleteRecords, ctx.api_version, throttle_time_ms=0, topics=topics)
