"""OffsetDelete (key 47), version 0 (KIP-496).

Behaviour: deletes a group's committed offsets for the given partitions. An empty group may
lose any of them; a consumer group with members only those of topics no member subscribes to
(others get GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another protocol type gets
NON_EMPTY_GROUP. Unknown groups get GROUP_ID_NOT_FOUND, unknown partitions
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.OffsetDelete, "response", "OffsetDeleteResponseTopic")
_Partition = struct_type(
    ApiKey.OffsetDelete, "response", "OffsetDeleteResponseTopic", "OffsetDeleteResponsePartition"
)


@handles(ApiKey.OffsetDelete, 0, 0)
async def handle_offset_delete(ctx: RequestContext, request: Any) -> Any:
    wanted = [
        (topic.name, [partition.partition_index for partition in topic.partitions])
        for topic in request.topics
    ]
    error, results = ctx.broker.groups.delete_offsets(request.group_id, wanted)
    topics: dict[str, list[Any]] = {}
    for topic, partition, partition_error in results:
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
