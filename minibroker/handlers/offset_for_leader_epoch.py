"""OffsetForLeaderEpoch (key 23), versions 0-4 (v0-1 only under an emulated Kafka 2.8-3.9).

Behaviour: a replicated partition (in-process cluster) answers from its leader replica's
leader-epoch cache (cluster/replicas.py). A single-replica partition keeps no cache: its only
entry is its current leader epoch (0 on a single broker; bumped when a cluster moves its
leader), starting at its log start once the log has ever held data. So the current epoch
gives (epoch, log end offset), an older one the requested epoch and the log start offset,
and -1, a newer epoch or any epoch on a never-written log (-1, -1) without error, as Kafka's
`LeaderEpochFileCache.endOffsetFor` answers a cache with that one entry. A current leader
epoch newer than the partition's is UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH
(-1 skips the check); a node that does not lead the partition answers NOT_LEADER_OR_FOLLOWER;
an unknown partition is UNKNOWN_TOPIC_OR_PARTITION.

Authorization: with CLUSTER_ACTION on the cluster (a follower) every topic is answered;
otherwise each topic needs DESCRIBE (KIP-320 consumers), else its partitions get
TOPIC_AUTHORIZATION_FAILED, listed after the authorized topics as Kafka does.

Version notes: v0 answers no leader epoch (v1+); v0-1 carry no current leader epoch (v2+),
so it is not checked; v3 adds the replica id (consumers send -1, ignored here); v4 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.OffsetForLeaderEpoch, "response", "OffsetForLeaderTopicResult")
_Partition = struct_type(
    ApiKey.OffsetForLeaderEpoch, "response", "OffsetForLeaderTopicResult", "EpochEndOffset"
)
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


def end_offset_for(partition: Partition, requested_epoch: int) -> tuple[int, int]:
    """(epoch, end offset) for `requested_epoch`, as Kafka's leader-epoch cache answers."""
    leader = None if partition.replication is None else partition.replication.leader_replica()
    if leader is not None:
        return leader.epochs.end_offset_for(requested_epoch, leader.log_end_offset)
    log = partition.log
    has_epoch_entry = log.log_end_offset > 0
    if requested_epoch == UNDEFINED_EPOCH or not has_epoch_entry:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if requested_epoch == partition.leader_epoch:
        return requested_epoch, log.log_end_offset
    if requested_epoch > partition.leader_epoch:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    return requested_epoch, log.log_start_offset


def _authorized_topics(ctx: RequestContext, request: Any) -> set[str]:
    """Every topic for CLUSTER_ACTION on the cluster (a follower), else those it may DESCRIBE."""
    names = (topic.topic for topic in request.topics)
    if ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return set(names)
    return ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _error(error: ErrorCode | None, wanted: Any) -> Any:
    return _Partition(
        error_code=error,
        partition=wanted.partition,
        leader_epoch=UNDEFINED_EPOCH,
        end_offset=UNDEFINED_EPOCH_OFFSET,
    )


def _answer(ctx: RequestContext, topic: str, wanted: Any) -> Any:
    partition = ctx.broker.cluster.partition(topic, wanted.partition)
    error = (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if partition is None
        else partition.leader_epoch_error(wanted.current_leader_epoch)
        or ctx.leader_error(partition)
    )
    if error is not None or partition is None:
        return _error(error, wanted)
    epoch, end_offset = end_offset_for(partition, wanted.leader_epoch)
    return _Partition(
        error_code=ErrorCode.NO_ERROR,
        partition=wanted.partition,
        leader_epoch=epoch,
        end_offset=end_offset,
    )


@handles(ApiKey.OffsetForLeaderEpoch, 0, 4)
async def handle_offset_for_leader_epoch(ctx: RequestContext, request: Any) -> Any:
    allowed = _authorized_topics(ctx, request)
    topics = [
        _Topic(
            topic=topic.topic, partitions=[_answer(ctx, topic.topic, p) for p in topic.partitions]
        )
        for topic in request.topics
        if topic.topic in allowed
    ]
    topics.extend(
        _Topic(
            topic=topic.topic,
            partitions=[_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, p) for p in topic.partitions],
        )
        for topic in request.topics
        if topic.topic not in allowed
    )
    return new_response(
        ApiKey.OffsetForLeaderEpoch, ctx.api_version, throttle_time_ms=0, topics=topics
    )
