"""OffsetDelete (key 47), version 0 (KIP-496).

Behaviour: deletes a group's committed offsets for the given partitions. An empty group may
lose any of them; a consumer group with members only those of topics no member subscribes to
(others get GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another protocol type gets
NON_EMPTY_GROUP. Unknown groups get GROUP_ID_NOT_FOUND, unknown partitions
UNKNOWN_TOPIC_OR_PARTITION. In a cluster the answer waits until the ISR of the group's
`__consumer_offsets` partition has the tombstones, as Kafka's coordinator runtime answers
(COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR at the top level if that fails).

Authorization, as Kafka's `handleOffsetDeleteRequest`: DELETE on the group first (without it
GROUP_AUTHORIZATION_FAILED at the top level, no topics); then READ on each topic: the
partitions of a topic without it answer TOPIC_AUTHORIZATION_FAILED (first, in request order)
and keep their offsets (a group error answers none).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.OffsetDelete, "response", "OffsetDeleteResponseTopic")
_Partition = struct_type(
    ApiKey.OffsetDelete, "response", "OffsetDeleteResponseTopic", "OffsetDeleteResponsePartition"
)


@handles(ApiKey.OffsetDelete, 0, 0)
async def handle_offset_delete(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return new_response(
            ApiKey.OffsetDelete,
            ctx.api_version,
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            throttle_time_ms=0,
            topics=[],
        )
    requested = [
        (topic.name, [partition.partition_index for partition in topic.partitions])
        for topic in request.topics
    ]
    readable = ctx.authorized_names(
        AclOperation.READ, ResourceType.TOPIC, [name for name, _ in requested]
    )
    refused = [
        (name, index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for name, indexes in requested
        if name not in readable
        for index in indexes
    ]
    wanted = [(name, indexes) for name, indexes in requested if name in readable]
    writes = ctx.internal_writes()
    error, results = ctx.broker.groups.delete_offsets(request.group_id, wanted)
    error = await ctx.replicated_write(request.group_id, error=error, since=writes)
    if error != ErrorCode.NO_ERROR:
        refused = []  # a group error answers no partitions, as Kafka's response builder
    topics: dict[str, list[Any]] = {}
    for topic, partition, partition_error in refused + results:
        topics.setdefault(topic, []).append(
            _Partition(partition_index=partition, error_code=partition_error)
        )
    return new_response(
        ApiKey.OffsetDelete,
        ctx.api_version,
        error_code=error,
        throttle_time_ms=0,
        topics=[_Topic(name=name, partitions=partitions) for name, partitions in topics.items()],
    )
