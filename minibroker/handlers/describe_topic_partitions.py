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
against the limit. Partitions are described as in Metadata (leader, replicas, ISR and
offline replicas), with the eligible leader replicas and last-known ELR the controller keeps
(KIP-966, `cluster/replicas.py`: empty while `eligible.leader.replicas.version` is 0); topic
authorized operations are always given (`ctx.authorized_operations`), for those missing topics too.

Authorization: each topic needs DESCRIBE, checked as the topics are walked in name order. A
listing of every topic leaves the others out; a named topic refused (whether it exists or
not) answers TOPIC_AUTHORIZATION_FAILED with the null topic id, not internal and no
authorized operations (INT32_MIN), after the topics described, and does not count against
the limit. As in Kafka, named topics past the point where the limit stops the walk are not
looked at, so they are not listed as refused either.

Bad input, as Kafka: a cursor whose partition is negative, or whose topic is not among the
requested ones, answers INVALID_REQUEST for every requested topic (none when the request
names no topic), with no partitions.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
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
INT32_MIN = -(2**31)  # Kafka's "not given"


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
    view_of = ctx.broker.nodes.replica_view
    return [
        _Partition(
            error_code=ErrorCode.NO_ERROR,
            partition_index=partition.index,
            leader_id=view.leader,
            leader_epoch=partition.leader_epoch,
            replica_nodes=view.replicas,
            isr_nodes=view.isr,
            eligible_leader_replicas=view.elr,
            last_known_elr=view.last_known_elr,
            offline_replicas=view.offline,
        )
        for partition in topic.partitions[start : start + limit]
        for view in (view_of(partition),)
    ]


def _operations(ctx: RequestContext, name: str) -> int:
    """The topic's authorized operations as an INT32 bitfield (a plain INT32 field here, not a
    codec bitfield)."""
    return sum(1 << code for code in ctx.authorized_operations(ResourceType.TOPIC, name))


def _missing(ctx: RequestContext, name: str) -> Any:
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
        topic_authorized_operations=_operations(ctx, name),
    )


def _denied(name: str) -> Any:
    """A named topic the principal may not DESCRIBE (its id not disclosed)."""
    return _Topic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        name=name,
        topic_id=_NULL_TOPIC_ID,
        is_internal=False,
        partitions=[],
        topic_authorized_operations=INT32_MIN,
    )


def _described(
    ctx: RequestContext, request: Any, names: list[str], denied: list[Any]
) -> tuple[list[Any], Any]:
    """The topics answered and the next cursor (None when everything fitted); the named topics
    refused DESCRIBE on the way are added to `denied` (those after the cursor are not seen)."""
    cursor = request.cursor
    limit = ctx.broker.config.get_int("max.request.partition.size.limit")
    remaining = max(min(limit, request.response_partition_limit), 1)
    listed: list[Any] = []
    for name in names:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            if request.topics:
                denied.append(_denied(name))
            continue
        if remaining == 0:
            return listed, _Cursor(topic_name=name, partition_index=0)
        topic = ctx.broker.cluster.topics.get(name)
        if topic is None:
            if request.topics:
                listed.append(_missing(ctx, name))
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
                topic_authorized_operations=_operations(ctx, name),
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
    denied: list[Any] = []
    topics, next_cursor = _described(ctx, request, names, denied)
    topics.extend(denied)
    return new_response(
        ApiKey.DescribeTopicPartitions,
        ctx.api_version,
        throttle_time_ms=0,
        topics=topics,
        next_cursor=next_cursor,
    )
