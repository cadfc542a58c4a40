"""OffsetFetch (key 9), versions 0-10 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: the committed offset, leader epoch and metadata of each requested partition;
-1 (and empty metadata) where the group has none or the group is unknown. A null topic list
(v2+) asks for every partition the group has committed. `require_stable` (v7+, sent by
read_committed consumers, KIP-447): a partition whose group has transactional offsets waiting
for their transaction's marker answers UNSTABLE_OFFSET_COMMIT with offset -1 (clients retry);
the group and top-level errors stay NO_ERROR, as in Kafka.

Version notes: v0 read ZooKeeper in Kafka 2.8-3.9 (`handleOffsetFetchRequestFromZookeeper`):
under an emulated ZooKeeper-mode release (2.8-3.2) it answers the offsets OffsetCommit v0
stored there (`groups/zookeeper_offsets.py`; -1 for none or an unknown partition, no
metadata), a topic without DESCRIBE TOPIC_AUTHORIZATION_FAILED; under a KRaft release
(3.3-3.9) every requested partition UNSUPPORTED_VERSION, after the group's authorization.
v0-1 answer errors per partition only, v2-7 also at the top level; v5+ carry
the leader epoch; v6 is flexible; v8+ (KIP-709) batch several groups in `groups`, each
answered with its own error; v9+ carry the member id and epoch of a KIP-848 consumer-group
member: for a consumer group they are checked as Kafka's `ConsumerGroup.validateOffsetFetch`
(null id and epoch -1 pass; otherwise UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH as the group's
error, with no topics); classic groups ignore them.
v10 (KIP-848) names topics by topic id only: requested ids are resolved to names (offsets are
stored under the topic name, as Kafka does), an id that names no topic answers
UNKNOWN_TOPIC_ID (offset -1) for each of its partitions, and the answer carries each topic's
id; when all of a group's offsets are asked for, those of topics that no longer exist (no id
to name them by) are left out.

Authorization, as Kafka's `handleOffsetFetchRequest`, per group: DESCRIBE on the group, else
the group answers GROUP_AUTHORIZATION_FAILED with no topics (v1, which has no group error:
each requested partition with offset -1 and that error). Then DESCRIBE on each topic: named
topics without it answer TOPIC_AUTHORIZATION_FAILED (offset -1) for each of their partitions,
after the fetched topics (as the unknown ids of v10); when all of a group's offsets are asked
for, those topics are left out.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Topic
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
MEMBER_FROM_VERSION = 9
TOPIC_IDS_FROM_VERSION = 10


GROUP_ERROR_FROM_VERSION = 2
ZOOKEEPER_VERSION = 0


def _fetch(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, list[FetchedOffset]]:
    wanted = None if topics is None else [(t.name, list(t.partition_indexes)) for t in topics]
    by_topic: dict[str, list[FetchedOffset]] = {}
    for fetched in ctx.broker.groups.fetch_offsets(group_id, wanted, require_stable):
        by_topic.setdefault(fetched.topic, []).append(fetched)
    return by_topic


def _describable(ctx: RequestContext, names: Any) -> set[str]:
    return ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _failed(name: str, indexes: Any, error: ErrorCode) -> list[FetchedOffset]:
    return [FetchedOffset(name, index, -1, -1, "", error) for index in indexes]


def _group_offsets(
    ctx: RequestContext, group_id: str, topics: Any, require_stable: bool
) -> dict[str, list[FetchedOffset]]:
    """The group's offsets by topic name; named topics the principal may not DESCRIBE answer
    TOPIC_AUTHORIZATION_FAILED after the others, unnamed ones are left out."""
    if topics is None:
        by_topic = _fetch(ctx, group_id, None, require_stable)
        allowed = _describable(ctx, by_topic)
        return {name: fetched for name, fetched in by_topic.items() if name in allowed}
    allowed = _describable(ctx, [topic.name for topic in topics])
    wanted = [topic for topic in topics if topic.name in allowed]
    by_topic = _fetch(ctx, group_id, wanted, require_stable)
    for topic in topics:
        if topic.name not in allowed:
            by_topic.setdefault(topic.name, []).extend(
                _failed(topic.name, topic.partition_indexes, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            )
    return by_topic


def _zookeeper_offsets(
    ctx: RequestContext, group_id: str, topics: Any
) -> dict[str, list[FetchedOffset]]:
    """v0: what OffsetCommit v0 stored, or UNSUPPORTED_VERSION from a KRaft release."""
    if not ctx.broker.release.zookeeper:
        error = ErrorCode.UNSUPPORTED_VERSION
        return {t.name: _failed(t.name, t.partition_indexes, error) for t in topics}
    allowed = _describable(ctx, [topic.name for topic in topics])
    stored = ctx.broker.groups.zookeeper_offsets
    by_topic: dict[str, list[FetchedOffset]] = {}
    for topic in topics:
        if topic.name not in allowed:
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            by_topic[topic.name] = _failed(topic.name, topic.partition_indexes, error)
            continue
        by_topic[topic.name] = [
            FetchedOffset(topic.name, index, stored.fetch(group_id, topic.name, index), -1, "")
            for index in topic.partition_indexes
        ]
    return by_topic


def _partition_fields(fetched: FetchedOffset) -> dict[str, Any]:
    return {
        "partition_index": fetched.partition,
        "committed_offset": fetched.offset,
        "committed_leader_epoch": fetched.leader_epoch,
        "metadata": fetched.metadata,
        "error_code": fetched.error,
    }


def _group_topic(name: str, topic_id: uuid.UUID | None, fetched: list[FetchedOffset]) -> Any:
    return _GroupTopic(
        name=name,
        topic_id=topic_id,
        partitions=[_GroupPartition(**_partition_fields(f)) for f in fetched],
    )


def _refused(ctx: RequestContext, group: Any) -> Any:
    """The group's answer when it may not be described or its member id/epoch (v9+) do not
    check out, else None."""
    error: ErrorCode | None = None
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif ctx.api_version >= MEMBER_FROM_VERSION:
        error = ctx.broker.groups.fetch_member_error(
            group.group_id, group.member_id, group.member_epoch
        )
    if error is None:
        return None
    return _Group(group_id=group.group_id, error_code=error, topics=[])


def _group_entry(ctx: RequestContext, group: Any, require_stable: bool) -> Any:
    failed = _refused(ctx, group)
    if failed is not None:
        return failed
    by_topic = _group_offsets(ctx, group.group_id, group.topics, require_stable)
    return _Group(
        group_id=group.group_id,
        error_code=ErrorCode.NO_ERROR,
        topics=[_group_topic(name, None, fetched) for name, fetched in by_topic.items()],
    )


def _group_entry_by_ids(ctx: RequestContext, group: Any, require_stable: bool) -> Any:
    """v10: the topics named by id, resolved to names for the group and back to ids."""
    failed = _refused(ctx, group)
    if failed is not None:
        return failed
    cluster = ctx.broker.cluster
    if group.topics is None:
        by_topic = _group_offsets(ctx, group.group_id, None, require_stable)
        topics = [
            _group_topic(name, cluster.topics[name].topic_id, fetched)
            for name, fetched in by_topic.items()
            if name in cluster.topics
        ]
        return _Group(group_id=group.group_id, error_code=ErrorCode.NO_ERROR, topics=topics)
    resolved = [(wanted, cluster.topics_by_id.get(wanted.topic_id)) for wanted in group.topics]
    allowed = _describable(ctx, [known.name for _, known in resolved if known is not None])
    topics, refused = [], []
    for wanted, known in resolved:
        if known is None or known.name not in allowed:
            refused.append(_refused_topic(wanted, known))
            continue
        fetched = ctx.broker.groups.fetch_offsets(
            group.group_id, [(known.name, list(wanted.partition_indexes))], require_stable
        )
        topics.append(_group_topic(known.name, known.topic_id, fetched))
    return _Group(group_id=group.group_id, error_code=ErrorCode.NO_ERROR, topics=topics + refused)


def _refused_topic(wanted: Any, known: Topic | None) -> Any:
    """v10: a topic id that names no topic, or a topic the principal may not DESCRIBE."""
    if known is None:
        failed = _failed("", wanted.partition_indexes, ErrorCode.UNKNOWN_TOPIC_ID)
        return _group_topic("", wanted.topic_id, failed)
    failed = _failed(known.name, wanted.partition_indexes, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return _group_topic(known.name, known.topic_id, failed)


def _single_group(ctx: RequestContext, request: Any) -> Any:
    """v0-7: one group, its error at the top level (v2+)."""
    error = ErrorCode.NO_ERROR
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        by_topic = {}
        if ctx.api_version < GROUP_ERROR_FROM_VERSION:
            by_topic = {t.name: _failed(t.name, t.partition_indexes, error) for t in request.topics}
    elif ctx.api_version == ZOOKEEPER_VERSION:
        by_topic = _zookeeper_offsets(ctx, request.group_id, request.topics)
    else:
        by_topic = _group_offsets(ctx, request.group_id, request.topics, request.require_stable)
    return new_response(
        ApiKey.OffsetFetch,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        topics=[
            _Topic(name=name, partitions=[_Partition(**_partition_fields(f)) for f in fetched])
            for name, fetched in by_topic.items()
        ],
    )


@handles(ApiKey.OffsetFetch, 0, 10)
async def handle_offset_fetch(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version < BATCHED_FROM_VERSION:
        return _single_group(ctx, request)
    entry = _group_entry_by_ids if ctx.api_version >= TOPIC_IDS_FROM_VERSION else _group_entry
    return new_response(
        ApiKey.OffsetFetch,
        ctx.api_version,
        throttle_time_ms=0,
        groups=[entry(ctx, group, request.require_stable) for group in request.groups],
    )
