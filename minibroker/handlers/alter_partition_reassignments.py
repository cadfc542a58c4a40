"""AlterPartitionReassignments (key 45), versions 0-1.

Behaviour, as Kafka's controller (`ReplicationControlManager.alterPartitionReassignments`), for
the replicated partitions of an in-process cluster (cluster/reassignment.py): a partition
given a replica list is reassigned to it. Its replicas become the target followed by the
replicas being removed (as Metadata shows them meanwhile); the new replicas start empty and
catch up as followers; once every target replica is in the ISR the removed ones are dropped
(their logs deleted), the leader re-elected if it was removed (the target's first in-sync
replica), and ListPartitionReassignments no longer lists it. A list that only reorders the
replicas, or only drops some of an ISR, is done at once. Null replicas cancel the partition's
reassignment (back to the original replicas, the added ones deleted), NO_REASSIGNMENT_IN_PROGRESS
when there is none, INVALID_REPLICATION_ASSIGNMENT when reverting would need an unclean
election the topic does not allow. A replica list that is empty, names a node the cluster does
not have or one node twice is INVALID_REPLICATION_ASSIGNMENT with Kafka's messages; unknown
topics and partitions UNKNOWN_TOPIC_OR_PARTITION ("Unable to find a topic named t.",
"Unable to find partition t:9."). Each partition succeeds or fails alone. The timeout is not
used.

A partition of a topic created with one replica keeps one log that every node serves: it can
be "reassigned" to a single live node, which then leads it; any other list is
INVALID_REPLICATION_ASSIGNMENT saying so.

Authorization, as Kafka's ControllerApis: ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED ("Request ... is not authorized.") at the top level and for every
partition.

Version notes: v0 is flexible; v1 (KIP-860) adds AllowReplicationFactorChange: false refuses a
replica list whose size differs from the partition's (an ongoing reassignment's target's)
with INVALID_REPLICATION_FACTOR ("The replication factor is changed from 3 to 2"); the answer
repeats the option.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.cluster.reassignment import cancel_reassignment, reassign
from minibroker.cluster.state import Partition, TopicError
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_TopicResponse = struct_type(
    ApiKey.AlterPartitionReassignments, "response", "ReassignableTopicResponse"
)
_PartitionResponse = struct_type(
    ApiKey.AlterPartitionReassignments,
    "response",
    "ReassignableTopicResponse",
    "ReassignablePartitionResponse",
)


def _partition(ctx: RequestContext, topic: str, index: int) -> Partition:
    cluster = ctx.broker.cluster
    if topic not in cluster.topics:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
        )
    partition = cluster.partition(topic, index)
    if partition is None:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
        )
    return partition


def _alter(ctx: RequestContext, topic: str, wanted: Any, allow_rf_change: bool) -> Any:
    try:
        partition = _partition(ctx, topic, wanted.partition_index)
        if wanted.replicas is None:
            cancel_reassignment(ctx.broker, partition)
        else:
            reassign(ctx.broker, partition, list(wanted.replicas), allow_rf_change=allow_rf_change)
    except TopicError as exc:
        return _PartitionResponse(
            partition_index=wanted.partition_index,
            error_code=exc.error_code,
            error_message=exc.message,
        )
    return _PartitionResponse(
        partition_index=wanted.partition_index, error_code=ErrorCode.NO_ERROR, error_message=None
    )


def _refused(ctx: RequestContext, request: Any, message: str) -> Any:
    """Kafka's `AlterPartitionReassignmentsRequest.getErrorResponse`."""
    error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    responses = [
        _TopicResponse(
            name=topic.name,
            partitions=[
                _PartitionResponse(
                    partition_index=wanted.partition_index, error_code=error, error_message=message
                )
                for wanted in topic.partitions
            ],
        )
        for topic in request.topics
    ]
    return _response(ctx, error, message, responses, allow_rf_change=True)


def _response(
    ctx: RequestContext,
    error: ErrorCode,
    message: str | None,
    responses: list[Any],
    *,
    allow_rf_change: bool,
) -> Any:
    return new_response(
        ApiKey.AlterPartitionReassignments,
        ctx.api_version,
        throttle_time_ms=0,
        allow_replication_factor_change=allow_rf_change,
        error_code=error,
        error_message=message,
        responses=responses,
    )


@handles(ApiKey.AlterPartitionReassignments, 0, 1)
async def handle_alter_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _refused(
            ctx, request, cluster_denied_message("AlterPartitionReassignments", ctx.principal)
        )
    allow = bool(request.allow_replication_factor_change)
    responses = [
        _TopicResponse(
            name=topic.name,
            partitions=[_alter(ctx, topic.name, wanted, allow) for wanted in topic.partitions],
        )
        for topic in request.topics
    ]
    return _response(ctx, ErrorCode.NO_ERROR, None, responses, allow_rf_change=allow)
