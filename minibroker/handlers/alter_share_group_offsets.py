"""AlterShareGroupOffsets (key 91), version 0 (KIP-932).

Behaviour, as Kafka 4.3's `KafkaApis` and group coordinator: sets the share-partition start
offset (SPSO) of each named partition; the share partition starts afresh there, nothing in
flight, and its lag counts from it. The group must be a share group without members:
NON_EMPTY_GROUP ("The group is not empty.") otherwise; a group of another kind is
GROUP_ID_NOT_FOUND ("Group <id> is not a share group."); a group id that does not exist
yet makes an empty share group (Kafka 4.2+: offsets can be set before a share group is
first used). A top-level error answers no topics. Per partition: an unknown topic or a
partition the topic lacks is UNKNOWN_TOPIC_OR_PARTITION. An empty group id is
INVALID_GROUP_ID; while the `share.version` feature is finalized below 1, UNSUPPORTED_VERSION.

Authorization, as Kafka's `handleAlterShareGroupOffsetsRequest`, after the feature check: READ
on the group (else GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", no topics); READ
on each topic: the partitions of a topic without it answer TOPIC_AUTHORIZATION_FAILED ("Topic
authorization failed."), first, and are not altered (a group error answers none).

A start offset of -1 makes the share partition uninitialized again, as in Kafka: the next
fetch starts it from `share.auto.offset.reset`. Kafka does not check other negative offsets;
here they are INVALID_REQUEST, since a share partition cannot start there.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.share.offsets_admin import UNKNOWN_TOPIC_MESSAGE, check_empty_share_group
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(
    ApiKey.AlterShareGroupOffsets, "response", "AlterShareGroupOffsetsResponseTopic"
)
_Partition = struct_type(
    ApiKey.AlterShareGroupOffsets,
    "response",
    "AlterShareGroupOffsetsResponseTopic",
    "AlterShareGroupOffsetsResponsePartition",
)
ZERO_ID = uuid.UUID(int=0)
NEGATIVE_OFFSET_MESSAGE = "The start offset cannot be negative."
UNINITIALIZED = -1
GROUP_AUTHORIZATION_FAILED_MESSAGE = "Group authorization failed."
TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."


def _result(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(partition_index=index, error_code=error, error_message=message)


def _alter_partition(
    ctx: RequestContext, group_id: str, topic_id: uuid.UUID, count: int, request: Any
) -> Any:
    index, offset = request.partition_index, request.start_offset
    if not 0 <= index < count:
        return _result(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
    if offset < UNINITIALIZED:
        return _result(index, ErrorCode.INVALID_REQUEST, NEGATIVE_OFFSET_MESSAGE)
    if offset == UNINITIALIZED:
        ctx.broker.share_deliveries.forget_partition(group_id, topic_id, index)
    else:
        ctx.broker.share_deliveries.reset_start(group_id, topic_id, index, offset)
    return _result(index, ErrorCode.NO_ERROR, None)


def _alter_topic(ctx: RequestContext, group_id: str, request: Any) -> Any:
    topic = ctx.broker.cluster.topics.get(request.topic_name)
    if topic is None:
        partitions = [
            _result(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
            for p in request.partitions
        ]
        return _Topic(topic_name=request.topic_name, topic_id=ZERO_ID, partitions=partitions)
    count = len(topic.partitions)
    partitions = [
        _alter_partition(ctx, group_id, topic.topic_id, count, p) for p in request.partitions
    ]
    return _Topic(topic_name=topic.name, topic_id=topic.topic_id, partitions=partitions)


def _unauthorized_topic(ctx: RequestContext, request: Any) -> Any:
    known = ctx.broker.cluster.topics.get(request.topic_name)
    error, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED_MESSAGE
    return _Topic(
        topic_name=request.topic_name,
        topic_id=known.topic_id if known is not None else ZERO_ID,
        partitions=[_result(p.partition_index, error, message) for p in request.partitions],
    )


def _group_error(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    enabled = ctx.broker.features.share_groups_enabled
    if enabled and not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED_MESSAGE
    return check_empty_share_group(ctx.broker.groups, group_id, enabled, create=True)


@handles(ApiKey.AlterShareGroupOffsets, 0, 0)
async def handle_alter_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    error, message = _group_error(ctx, request.group_id)
    topics = []
    if error == ErrorCode.NO_ERROR:
        readable = ctx.authorized_names(
            AclOperation.READ, ResourceType.TOPIC, [t.topic_name for t in request.topics]
        )
        topics = [
            _unauthorized_topic(ctx, t) for t in request.topics if t.topic_name not in readable
        ]
        topics += [
            _alter_topic(ctx, request.group_id, t)
            for t in request.topics
            if t.topic_name in readable
        ]
    return new_response(
        ApiKey.AlterShareGroupOffsets,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        responses=topics,
    )
