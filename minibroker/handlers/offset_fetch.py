"""OffsetFetch (key 9), versions 1-9.

Behaviour: the committed offset, leader epoch and metadata of each requested partition;
-1 (and empty metadata) where the group has none or the group is unknown. A null topic list
(v2+) asks for every partition the group has committed. `require_stable` (v7+, sent by
read_committed consumers, KIP-447): a partition whose group has transactional offsets waiting
for their transaction's marker answers UNSTABLE_OFFSET_COMMIT with offset -1 (clients retry);
the group and top-level errors stay NO_ERROR, as in Kafka.

Version notes: v1 answers errors per partition only, v2-7 also at the top level; v5+ carry
the leader epoch; v6 is flexible; v8+ (KIP-709) batch several groups in `groups`, each
answered with its own error; v9's member id and epoch are for KIP-848 groups and ignored.
"""

from __future__ import annotations

from typing import Any

from minibroker.groups.coordinator import FetchedOffset
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.OffsetFetch, "response", "OffsetFetchResponseTopic")
_Partition = struct_type(
    ApiKey.OffsetFetch, "response", "OffsetFetchResponseTopic", "OffsetFetchResponsePartition"
)
_Group = struct_type(ApiKey.OffsetFetch, "response", "OffsetFetchResponseGroup")
_GroupTopic = struct_type(
    ApiKey.OffsetFetch, "response", "OffsetFetchResponseGroup", "OffsetFetchResponseTopics"
)
_GroupPartition = struct_type(
    ApiKey.OffsetFetch,
    "response",
    "OffsetFetchResponseGroup",
    "OffsetFetchResponseTopics",
    "OffsetFetchResponsePartitions",
)
BATCHED_FROM_VERSION = 8


def _fetch(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, list[FetchedOffset]]:
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]
    by_topic: dict[str, list[FetchedOffset]] = {}
    for fetched in ctx.broker.groups.fetch_offsets(group_id, wanted, require_stable):
        by_topic.setdefault(fetched.topic, []).append(fetched)
    return by_topic


def _partition_fields(fetched: FetchedOffset) -> dict[str, Any]:
    return {
        "partition_index": fetched.partition,
        "committed_offset": fetched.offset,
        "committed_leader_epoch": fetched.leader_epoch,
        "metadata": fetched.metadata,
        "error_code": fetched.error,
    }


def _group_entry(ctx: RequestContext, group: Any, require_stable: bool) -> Any:
    by_topic = _fetch(ctx, group.group_id, group.topics, require_stable)
    return _Group(
        group_id=group.group_id,
        error_code=ErrorCode.NO_ERROR,
        topics=[
            _GroupTopic(
                name=name,
                partitions=[_GroupPartition(**_partition_fields(f)) for f in fetched],
            )
            for name, fetched in by_topic.items()
        ],
    )


@handles(ApiKey.OffsetFetch, 1, 9)
async def handle_offset_fetch(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= BATCHED_FROM_VERSION:
        return new_response(
            ApiKey.OffsetFetch,
            ctx.api_version,
            throttle_time_ms=0,
            groups=[_group_entry(ctx, group, request.require_stable) for group in request.groups],
        )
    by_topic = _fetch(ctx, request.group_id, request.topics, request.require_stable)
    return new_response(
        ApiKey.OffsetFetch,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        topics=[
            _Topic(name=name, partitions=[_Partition(**_partition_fields(f)) for f in fetched])
            for name, fetched in by_topic.items()
        ],
    )
