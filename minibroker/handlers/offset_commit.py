"""OffsetCommit (key 8), versions 2-9.

Behaviour: Kafka's classic-group commit. A group with no members accepts commits with
generation -1 (`assign()` + commit, admin offset changes) and is created by one if it does
not exist; otherwise the member id and generation must be current (UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, FENCED_INSTANCE_ID; REBALANCE_IN_PROGRESS while the group waits for
SyncGroup). Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION, metadata longer
than `offset.metadata.max.bytes` OFFSET_METADATA_TOO_LARGE. Accepted offsets are written to
`__consumer_offsets` before the answer.

Version notes: v2-4 carry `retention_time_ms` (-1: broker default), stored as the record's
expire timestamp; v6+ the committed leader epoch; v7+ `group_instance_id`; v8 is flexible.
v0-1 are gone since Kafka 4.0 and not served; librdkafka's probe (1..2) finds v2.
"""

from __future__ import annotations

from typing import Any

from minibroker.groups.coordinator import OffsetCommit
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.OffsetCommit, "response", "OffsetCommitResponseTopic")
_Partition = struct_type(
    ApiKey.OffsetCommit, "response", "OffsetCommitResponseTopic", "OffsetCommitResponsePartition"
)


def _commits(request: Any) -> list[OffsetCommit]:
    return [
        OffsetCommit(
            topic=topic.name,
            partition=partition.partition_index,
            offset=partition.committed_offset,
            leader_epoch=partition.committed_leader_epoch,
            metadata=partition.committed_metadata,
        )
        for topic in request.topics
        for partition in topic.partitions
    ]


@handles(ApiKey.OffsetCommit, 2, 9)
async def handle_offset_commit(ctx: RequestContext, request: Any) -> Any:
    commits = _commits(request)
    outcome = ctx.broker.groups.commit_offsets(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        request.generation_id_or_member_epoch,
        commits,
        request.retention_time_ms,
    )
    errors = [outcome] * len(commits) if isinstance(outcome, ErrorCode) else outcome
    topics: dict[str, list[Any]] = {}
    for commit, error in zip(commits, errors, strict=True):
        topics.setdefault(commit.topic, []).append(
            _Partition(partition_index=commit.partition, error_code=error)
        )
    return new_response(
        ApiKey.OffsetCommit,
        ctx.api_version,
        throttle_time_ms=0,
        topics=[_Topic(name=name, partitions=partitions) for name, partitions in topics.items()],
    )
