"""OffsetCommit (key 8), versions 0-10 (v0-1 only under an emulated Kafka 2.8-3.9).

Behaviour: Kafka's classic-group commit. A group with no members accepts commits with
generation -1 (`assign()` + commit, admin offset changes) and is created by one if it does
not exist; otherwise the member id and generation must be current (UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, FENCED_INSTANCE_ID; REBALANCE_IN_PROGRESS while the group waits for
SyncGroup). Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION, metadata longer
than `offset.metadata.max.bytes` OFFSET_METADATA_TOO_LARGE. Accepted offsets are written to
`__consumer_offsets` before the answer.

Version notes: v2-4 carry `retention_time_ms` (-1: broker default), stored as the record's
expire timestamp; v6+ the committed leader epoch; v7+ `group_instance_id`; v8 is flexible.
v10 (KIP-848) names topics by topic id only, in the request and the response: as Kafka's
`KafkaApis`, ids are resolved to names before the group sees the commit (offsets are stored
under the topic name, so v9 and v10 clients read each other's commits), and every partition
of an id that names no topic gets UNKNOWN_TOPIC_ID (those topics come first in the answer,
and a request with only unknown ids does not reach the group). Java 4.3 sends v10 from its
KIP-848 consumer (`group.protocol=consumer`); its classic consumer stays at v9.
v1 (and v0) carry no retention; v1's per-partition `commit_timestamp` (-1: now) is stored as
the commit time, from which the offset's expiry counts (Kafka's GroupCoordinatorAdapter).
v0 commits went to ZooKeeper in Kafka 2.8-3.9 (`groups/zookeeper_offsets.py`): under an
emulated ZooKeeper-mode release (2.8-3.2) they are kept there, apart from the group's
offsets and without generation or member checks; under a KRaft release (3.3-3.9) a v0
request with any partition left after the authorization and existence checks answers every
partition UNSUPPORTED_VERSION (Kafka's `requireZkOrThrow`, then the request's error answer).
v0-1 are gone since Kafka 4.0; librdkafka's probe (1..2) finds v2.

KIP-848 consumer groups (Kafka's `ConsumerGroup.validateOffsetCommit`):
`generation_id_or_member_epoch` is the member epoch. Epoch -1 commits only while the group
has no members (else UNKNOWN_MEMBER_ID); a member id the group does not know answers
UNKNOWN_MEMBER_ID, another epoch than the member's STALE_MEMBER_EPOCH, and a member
committing below v9 UNSUPPORTED_VERSION.

Authorization, as Kafka's `handleOffsetCommitRequest`: READ on the group first (without it
every partition of the request answers GROUP_AUTHORIZATION_FAILED); then READ on each topic:
the partitions of a topic without it answer TOPIC_AUTHORIZATION_FAILED (after the unknown ids,
before the existence check) and are not committed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
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


TOPIC_IDS_FROM_VERSION = 10
ZOOKEEPER_VERSION = 0


@dataclass(frozen=True, slots=True)
class _Wanted:
    """One request topic: its name (None for an unknown id) and its id (v10)."""

    name: str | None
    topic_id: uuid.UUID | None
    partitions: list[Any]


def _wanted(ctx: RequestContext, request: Any) -> list[_Wanted]:
    if ctx.api_version < TOPIC_IDS_FROM_VERSION:
        return [_Wanted(topic.name, None, topic.partitions) for topic in request.topics]
    by_id = ctx.broker.cluster.topics_by_id
    wanted = []
    for topic in request.topics:
        known = by_id.get(topic.topic_id)
        wanted.append(_Wanted(known.name if known else None, topic.topic_id, topic.partitions))
    return wanted


def _commits(topic: _Wanted, name: str) -> list[OffsetCommit]:
    return [
        OffsetCommit(
            topic=name,
            partition=partition.partition_index,
            offset=partition.committed_offset,
            leader_epoch=partition.committed_leader_epoch,
            metadata=partition.committed_metadata,
            commit_timestamp=partition.commit_timestamp,
        )
        for partition in topic.partitions
    ]


def _response_topic(topic: _Wanted, partitions: list[Any]) -> Any:
    return _Topic(name=topic.name or "", topic_id=topic.topic_id, partitions=partitions)


def _failed_topic(topic: _Wanted, error: ErrorCode) -> Any:
    return _response_topic(
        topic,
        [_Partition(partition_index=p.partition_index, error_code=error) for p in topic.partitions],
    )


def _refused(wanted: list[_Wanted], readable: set[str]) -> list[Any]:
    """Topics answered without committing, in request order: unknown ids, then unreadable."""
    refused = []
    for topic in wanted:
        if topic.name is None:
            refused.append(_failed_topic(topic, ErrorCode.UNKNOWN_TOPIC_ID))
        elif topic.name not in readable:
            refused.append(_failed_topic(topic, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    return refused


def _commit_to_zookeeper(
    ctx: RequestContext, request: Any, commits: list[OffsetCommit]
) -> list[ErrorCode]:
    offsets = ctx.broker.groups.zookeeper_offsets
    return [
        offsets.commit(request.group_id, c.topic, c.partition, c.offset, c.metadata)
        for c in commits
    ]


def _kraft_refuses(ctx: RequestContext, commits: list[OffsetCommit]) -> bool:
    """A v0 commit a KRaft broker has no ZooKeeper for, once a partition passed its checks."""
    return (
        ctx.api_version == ZOOKEEPER_VERSION
        and not ctx.broker.release.zookeeper
        and any(ctx.broker.cluster.partition(c.topic, c.partition) for c in commits)
    )


def _commit(ctx: RequestContext, request: Any, commits: list[OffsetCommit]) -> list[ErrorCode]:
    if not commits:
        return []
    if ctx.api_version == ZOOKEEPER_VERSION:
        return _commit_to_zookeeper(ctx, request, commits)
    outcome = ctx.broker.groups.commit_offsets(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        request.generation_id_or_member_epoch,
        commits,
        request.retention_time_ms,
        ctx.api_version,
    )
    return [outcome] * len(commits) if isinstance(outcome, ErrorCode) else outcome


@handles(ApiKey.OffsetCommit, 0, 10)
async def handle_offset_commit(ctx: RequestContext, request: Any) -> Any:
    wanted = _wanted(ctx, request)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return new_response(
            ApiKey.OffsetCommit,
            ctx.api_version,
            throttle_time_ms=0,
            topics=[_failed_topic(t, ErrorCode.GROUP_AUTHORIZATION_FAILED) for t in wanted],
        )
    readable = ctx.authorized_names(
        AclOperation.READ, ResourceType.TOPIC, [t.name for t in wanted if t.name is not None]
    )
    known = [(topic, _commits(topic, topic.name)) for topic in wanted if topic.name in readable]
    if _kraft_refuses(ctx, [c for _, topic_commits in known for c in topic_commits]):
        return new_response(
            ApiKey.OffsetCommit,
            ctx.api_version,
            topics=[_failed_topic(t, ErrorCode.UNSUPPORTED_VERSION) for t in wanted],
        )
    outcomes = _commit(ctx, request, [c for _, topic_commits in known for c in topic_commits])
    if ErrorCode.NO_ERROR in outcomes and ctx.api_version != ZOOKEEPER_VERSION:
        waited = await ctx.replicated_write(request.group_id)
        outcomes = [waited if error == ErrorCode.NO_ERROR else error for error in outcomes]
    errors = iter(outcomes)
    by_topic: dict[str, tuple[_Wanted, list[Any]]] = {}
    for topic, topic_commits in known:
        _, partitions = by_topic.setdefault(topic.name or "", (topic, []))
        partitions.extend(
            _Partition(partition_index=commit.partition, error_code=next(errors))
            for commit in topic_commits
        )
    return new_response(
        ApiKey.OffsetCommit,
        ctx.api_version,
        throttle_time_ms=0,
        topics=_refused(wanted, readable)
        + [_response_topic(topic, partitions) for topic, partitions in by_topic.values()],
    )
