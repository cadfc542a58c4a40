"""DescribeTopicPartitions (key 75), version 0.

Behaviour (Kafka's `DescribeTopicPartitionsRequestHandler` and
`KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`): the requested topics — every
topic, internal ones included, when the request names none — from the cursor's topic on,
sorted by name, each with its partitions in index order starting at the cursor's partition
for the cursor's topic (0 for the others). At most `ResponsePartitionLimit` partitions are
answered, capped by `max.request.partition.size.limit` (2000) and at least 1; when the limit
stops the answer inside a topic, `NextCursor` names that topic and its first partition left
out, and when it is reached exactly at a topic boundary, the next topic and partition 0.
A named topic that does not exist gets UNKNOWN_TOPIC_OR_PARTITION (an illegal name
INVALID_TOPIC_EXCEPTION), with no partitions and the null topic id, and does not count
against the limit. Partitions are described as in Metadata (one replica, the leader; no
eligible leader replicas); topic authorized operations are always given (every topic
operation: there are no ACLs).

Bad input, as Kafka: a cursor whose partition is negative, or whose topic is not among the
requested ones, answers INVALID_REQUEST for every requested topic (none when the request
names no topic), with no partitions.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.cluster.acl import TOPIC_OPERATIONS
from minibroker.cluster.state import INTERNAL_TOPICS, Topic, TopicError, check_topic_name
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(
    ApiKey.DescribeTopicPartitions, "response", "DescribeTopicPartitionsResponseTopic"
)
_Partition = struct_type(
    ApiKey.DescribeTopicPartitions,
    "response",
    "DescribeTopicPartitionsResponseTopic",
    "DescribeTopicPartitionsResponsePartition",
)
_Cursor = struct_type(ApiKey.DescribeTopicPartitions, "response", "Cursor")
_NULL_TOPIC_ID = uuid.UUID(int=0)
# The INT32 bitfield of every topic operation (a plain INT32 field here, not a codec bitfield).
INT32_MIN = -(2**31)  # Kafka's "not given"
_TOPIC_OPERATIONS_BITFIELD = sum(1 << operation for operation in TOPIC_OPERATIONS)


class _InvalidRequest(Exception):
    """The cursor does not fit the request."""


def _wanted_names(ctx: RequestContext, request: Any) -> list[str]:
    cursor = request.cursor
    first = cursor.topic_name if cursor is not None else ""
    if request.topics:
        names = {topic.name for topic in request.topics if topic.name >= first}
        if cursor is not None and cursor.topic_name not in names:
            raise _InvalidRequest
    else:
        names = {name for name in ctx.broker.cluster.topics if name >= first}
    if cursor is not None and cursor.partition_index < 0:
        raise _InvalidRequest
    return sorted(names)


def _partitions(ctx: RequestContext, topic: Topic, start: int, limit: int) -> list[Any]:
    leader_of = ctx.broker.nodes.leader_of
    return [
        _Partition(
            error_code=ErrorCode.NO_ERROR,
            partition_index=partition.index,
            leader_id=leader_of(partition),
            leader_epoch=partition.leader_epoch,
            replica_nodes=[leader_of(partition)],
            isr_nodes=[leader_of(partition)],
            eligible_leader_replicas=[],
            last_known_elr=[],
            offline_replicas=[],
        )
        for partition in topic.partitions[start : start + limit]
    ]


def _missing(name: str) -> Any:
    try:
        check_topic_name(name)
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except TopicError as exc:
        error = exc.error_code
    return _Topic(
        error_code=error,
        name=name,
        topic_id=_NULL_TOPIC_ID,
        is_internal=name in INTERNAL_TOPICS,
        partitions=[],
        topic_authorized_operations=INT32_MIN,
    )


def _described(ctx: RequestContext, request: Any, names: list[str]) -> tuple[list[Any], Any]:
    """The topics answered and the next cursor (None when everything fitted)."""
    cursor = request.cursor
    limit = ctx.broker.config.get_int("max.request.partition.size.limit")
    remaining = max(min(limit, request.response_partition_limit), 1)
    listed: list[Any] = []
    for name in names:
        if remaining == 0:
            return listed, _Cursor(topic_name=name, partition_index=0)
        topic = ctx.broker.cluster.topics.get(name)
        if topic is None:
            if request.topics:
                listed.append(_missing(name))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        partitions = _partitions(ctx, topic, start, remaining)
        listed.append(
            _Topic(
                error_code=ErrorCode.NO_ERROR,
                name=name,
                topic_id=topic.topic_id,
                is_internal=topic.internal,
                partitions=partitions,
                topic_authorized_operations=_TOPIC_OPERATIONS_BITFIELD,
            )
        )
        if start + len(partitions) < len(topic.partitions):
            return listed, _Cursor(topic_name=name, partition_index=start + len(partitions))
        remaining -= len(partitions)
    return listed, None


def _invalid_request(ctx: RequestContext, request: Any) -> Any:
    topics = [
        _Topic(
            error_code=ErrorCode.INVALID_REQUEST,
            name=topic.name,
            topic_id=_NULL_TOPIC_ID,
            is_internal=False,
            partitions=[],
            topic_authorized_operations=INT32_MIN,
        )
        for topic in request.topics
    ]
    return new_response(
        ApiKey.DescribeTopicPartitions,
        ctx.api_version,
        throttle_time_ms=0,
        topics=topics,
        next_cursor=None,
    )


@handles(ApiKey.DescribeTopicPartitions, 0, 0)
async def handle_describe_topic_partitions(ctx: RequestContext, request: Any) -> Any:
    try:
        names = _wanted_names(ctx, request)
    except _InvalidRequest:
        return _invalid_request(ctx, request)
    topics, next_cursor = _described(ctx, request, names)
    return new_response(
        ApiKey.DescribeTopicPartitions,
        ctx.api_version,
        throttle_time_ms=0,
        topics=topics,
        next_cursor=next_cursor,
    )
