"""DescribeShareGroupOffsets (key 90), versions 0-1 (KIP-932).

Behaviour, as Kafka 4.3's `KafkaApis` and `GroupCoordinatorService.describeShareGroupOffsets`:
for each group, each requested partition's share-partition start offset (SPSO), leader epoch
and lag. `Topics` null asks for every share partition the group has initialized (fetched, or
set by AlterShareGroupOffsets); an empty list answers no topics. A partition without state
(never initialized, an unknown topic, a partition the topic lacks) answers start offset -1,
leader epoch 0 and lag -1 with no error, as Kafka treats missing state as absence of data;
an unknown topic answers the zero topic id. The group is not looked up, as in Kafka: an
unknown group, or a group of another kind, simply has no share state. While the
`share.version` feature is finalized below 1 every group answers UNSUPPORTED_VERSION.

Authorization, as Kafka's `handleDescribeShareGroupOffsetsRequest`, per group after the feature
check: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED, no topics); DESCRIBE on each
topic: named topics without it answer, after the others, start offset -1 and
TOPIC_AUTHORIZATION_FAILED ("Topic authorization failed.") with the zero topic id; when all of
the group's partitions are asked for, those topics are left out.

Lag is Kafka 4.3's: the high watermark minus the start offset minus the records past the start
offset whose delivery is complete (acknowledged or archived).

Version notes: v1 adds Lag (v0 has no lag).
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Partition, Topic
from minibroker.groups.share.partition import FINISHED, SharePartition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Group = struct_type(
    ApiKey.DescribeShareGroupOffsets, "response", "DescribeShareGroupOffsetsResponseGroup"
)
_Topic = struct_type(
    ApiKey.DescribeShareGroupOffsets,
    "response",
    "DescribeShareGroupOffsetsResponseGroup",
    "DescribeShareGroupOffsetsResponseTopic",
)
_Partition = struct_type(
    ApiKey.DescribeShareGroupOffsets,
    "response",
    "DescribeShareGroupOffsetsResponseGroup",
    "DescribeShareGroupOffsetsResponseTopic",
    "DescribeShareGroupOffsetsResponsePartition",
)
UNINITIALIZED = -1
TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."
ZERO_ID = uuid.UUID(int=0)
SharePartitions = dict[tuple[uuid.UUID, int], SharePartition]


def share_lag(share: SharePartition, partition: Partition) -> int:
    """The high watermark minus the SPSO minus the records in flight already finished."""
    finished = sum(1 for _, record in share.records() if record.state in FINISHED)
    return partition.high_watermark - share.start_offset - finished


def _no_state(index: int) -> Any:
    return _Partition(
        partition_index=index,
        start_offset=UNINITIALIZED,
        leader_epoch=0,
        lag=UNINITIALIZED,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
    )


def _partition(topic: Topic, index: int, shares: SharePartitions) -> Any:
    share = shares.get((topic.topic_id, index))
    if share is None or not 0 <= index < len(topic.partitions):
        return _no_state(index)
    partition = topic.partitions[index]
    return _Partition(
        partition_index=index,
        start_offset=share.start_offset,
        leader_epoch=partition.leader_epoch,
        lag=share_lag(share, partition),
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
    )


def _topics(
    ctx: RequestContext, wanted: list[tuple[str, list[int]]], shares: SharePartitions
) -> list[Any]:
    """Known topics first, then unknown ones (start offset -1, zero id), as Kafka orders them."""
    known, unknown = [], []
    for name, indexes in wanted:
        topic = ctx.broker.cluster.topics.get(name)
        if topic is None:
            partitions = [_no_state(index) for index in indexes]
            unknown.append(_Topic(topic_name=name, topic_id=ZERO_ID, partitions=partitions))
        else:
            partitions = [_partition(topic, index, shares) for index in indexes]
            known.append(_Topic(topic_name=name, topic_id=topic.topic_id, partitions=partitions))
    return known + unknown


def _initialized(ctx: RequestContext, shares: SharePartitions) -> list[tuple[str, list[int]]]:
    """Every initialized share partition of the group whose topic still exists, by name."""
    wanted: dict[str, list[int]] = {}
    for topic_id, index in shares:
        topic = ctx.broker.cluster.topics_by_id.get(topic_id)
        if topic is not None:
            wanted.setdefault(topic.name, []).append(index)
    return [(name, sorted(indexes)) for name, indexes in sorted(wanted.items())]


def _unauthorized_topic(name: str, indexes: list[int]) -> Any:
    partitions = [
        _Partition(
            partition_index=index,
            start_offset=UNINITIALIZED,
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            error_message=TOPIC_AUTHORIZATION_FAILED_MESSAGE,
        )
        for index in indexes
    ]
    return _Topic(topic_name=name, topic_id=ZERO_ID, partitions=partitions)


def _failed(group_id: str, error: ErrorCode) -> Any:
    return _Group(group_id=group_id, topics=[], error_code=error, error_message=None)


def _group(ctx: RequestContext, group_id: str, topics: list[Any] | None) -> Any:
    if not ctx.broker.features.share_groups_enabled:
        return _failed(group_id, ErrorCode.UNSUPPORTED_VERSION)
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return _failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    shares = ctx.broker.share_deliveries.partitions_of(group_id)
    if topics is None:
        wanted = _initialized(ctx, shares)
    else:
        wanted = [(topic.topic_name, list(topic.partitions)) for topic in topics]
    allowed = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.TOPIC, [name for name, _ in wanted]
    )
    refused = []
    if topics is not None:
        refused = [_unauthorized_topic(n, indexes) for n, indexes in wanted if n not in allowed]
    return _Group(
        group_id=group_id,
        topics=_topics(ctx, [(n, indexes) for n, indexes in wanted if n in allowed], shares)
        + refused,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
    )


@handles(ApiKey.DescribeShareGroupOffsets, 0, 1)
async def handle_describe_share_group_offsets(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.DescribeShareGroupOffsets,
        ctx.api_version,
        throttle_time_ms=0,
        groups=[_group(ctx, group.group_id, group.topics) for group in request.groups],
    )
