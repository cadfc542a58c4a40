"""DeleteShareGroupOffsets (key 92), version 0 (KIP-932).

Behaviour, as Kafka 4.3's `KafkaApis` and group coordinator: forgets a share group's state
for whole topics (every share partition of each named topic); the group's next fetch starts
those share partitions again from `share.auto.offset.reset`. The group must be a share group
without members: NON_EMPTY_GROUP ("The group is not empty."); an unknown group is
GROUP_ID_NOT_FOUND ("Group <id> not found."), a group of another kind GROUP_ID_NOT_FOUND
("Group <id> is not a share group."); a top-level error answers no topics. Per topic: an
unknown topic is UNKNOWN_TOPIC_OR_PARTITION with Kafka's default message, a topic the group
has no state for UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete.").
The deleted topics come first (with their ids), then the failed ones (zero id), as in Kafka.
Authorization, as Kafka's `handleDeleteShareGroupOffsetsRequest`, after the feature check:
DELETE on the group (else GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", no
topics); READ on each topic: a topic without it answers TOPIC_AUTHORIZATION_FAILED ("Topic
authorization failed.", zero id), first, and keeps its state (a group error answers none).
An empty group id is INVALID_GROUP_ID; while the `share.version` feature is finalized below 1,
UNSUPPORTED_VERSION.
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
    ApiKey.DeleteShareGroupOffsets, "response", "DeleteShareGroupOffsetsResponseTopic"
)
ZERO_ID = uuid.UUID(int=0)
NO_OFFSETS_MESSAGE = "There is no offset information to delete."
GROUP_AUTHORIZATION_FAILED_MESSAGE = "Group authorization failed."
TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."


def _failed(
    name: str, message: str, error: ErrorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
) -> Any:
    return _Topic(topic_name=name, topic_id=ZERO_ID, error_code=error, error_message=message)


def _delete(ctx: RequestContext, group_id: str, names: list[str]) -> list[Any]:
    initialized = {topic_id for topic_id, _ in ctx.broker.share_deliveries.partitions_of(group_id)}
    deleted, failed = [], []
    for name in names:
        topic = ctx.broker.cluster.topics.get(name)
        if topic is None:
            failed.append(_failed(name, UNKNOWN_TOPIC_MESSAGE))
        elif topic.topic_id not in initialized:
            failed.append(_failed(name, NO_OFFSETS_MESSAGE))
        else:
            ctx.broker.share_deliveries.delete_topic_state(group_id, topic.topic_id)
            initialized.discard(topic.topic_id)
            deleted.append(
                _Topic(
                    topic_name=name,
                    topic_id=topic.topic_id,
                    error_code=ErrorCode.NO_ERROR,
                    error_message=None,
                )
            )
    return deleted + failed


def _group_error(ctx: RequestContext, group_id: str) -> tuple[ErrorCode, str | None]:
    enabled = ctx.broker.features.share_groups_enabled
    if enabled and not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED_MESSAGE
    return check_empty_share_group(ctx.broker.groups, group_id, enabled, create=False)


@handles(ApiKey.DeleteShareGroupOffsets, 0, 0)
async def handle_delete_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    error, message = _group_error(ctx, request.group_id)
    topics = []
    if error == ErrorCode.NO_ERROR:
        names = [topic.topic_name for topic in request.topics]
        readable = ctx.authorized_names(AclOperation.READ, ResourceType.TOPIC, names)
        refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        topics = [
            _failed(name, TOPIC_AUTHORIZATION_FAILED_MESSAGE, refused)
            for name in names
            if name not in readable
        ]
        topics += _delete(ctx, request.group_id, [name for name in names if name in readable])
    return new_response(
        ApiKey.DeleteShareGroupOffsets,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        responses=topics,
    )
