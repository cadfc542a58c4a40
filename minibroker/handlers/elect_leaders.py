"""ElectLeaders (key 43), versions 0-2.

Behaviour, as Kafka's controller (`ReplicationControlManager.electLeaders`), for the replicated
partitions of an in-process cluster (cluster/reassignment.py):
- PREFERRED (0): the first replica of the assignment becomes leader if it is live and in the
  ISR; ELECTION_NOT_NEEDED when it leads already; PREFERRED_LEADER_NOT_AVAILABLE when it may
  not lead and the leader may (else another live ISR member is elected).
- UNCLEAN (1): only for a partition without a leader (else ELECTION_NOT_NEEDED): a live ISR
  member, else the first live replica (its log becomes the partition's: what only the others
  had is lost); ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live.
A partition of a topic created with one replica has it as leader: ELECTION_NOT_NEEDED.
Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION ("No such topic as t", "No such
partition as t-9"). Null topic partitions asks for every partition: each topic is listed, with
the partitions whose answer is not ELECTION_NOT_NEEDED. Every error message is Kafka's. An
unknown election type is INVALID_REQUEST for the request and each partition named. The
timeout is not used: elections are immediate.

Authorization, as Kafka's ControllerApis: ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED ("Request ... is not authorized.") at the top level and for every
partition named.

Version notes: v0 has no election type (preferred) and no top-level error code (a refused
request shows in the partitions only); v1 adds both (KIP-460); v2 is the first flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.cluster.reassignment import ElectionOutcome, ElectionType, elect
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_TopicResult = struct_type(ApiKey.ElectLeaders, "response", "ReplicaElectionResult")
_PartitionResult = struct_type(
    ApiKey.ElectLeaders, "response", "ReplicaElectionResult", "PartitionResult"
)


def _partition_result(index: int, outcome: ElectionOutcome) -> Any:
    error, message = outcome
    return _PartitionResult(partition_id=index, error_code=error, error_message=message)


def _elect_one(
    ctx: RequestContext, topic: str, index: int, election_type: ElectionType
) -> ElectionOutcome:
    cluster = ctx.broker.cluster
    if topic not in cluster.topics:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    partition = cluster.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
    return elect(ctx.broker, partition, election_type)


def _elect_named(ctx: RequestContext, request: Any, election_type: ElectionType) -> list[Any]:
    return [
        _TopicResult(
            topic=wanted.topic,
            partition_result=[
                _partition_result(index, _elect_one(ctx, wanted.topic, index, election_type))
                for index in wanted.partitions
            ],
        )
        for wanted in request.topic_partitions
    ]


def _elect_everywhere(ctx: RequestContext, election_type: ElectionType) -> list[Any]:
    results = []
    for topic in list(ctx.broker.cluster.topics.values()):
        elected = []
        for partition in topic.partitions:
            outcome = elect(ctx.broker, partition, election_type)
            if outcome[0] != ErrorCode.ELECTION_NOT_NEEDED:
                elected.append(_partition_result(partition.index, outcome))
        results.append(_TopicResult(topic=topic.name, partition_result=elected))
    return results


def _refused(ctx: RequestContext, request: Any, error: ErrorCode, message: str) -> Any:
    """Kafka's `ElectLeadersRequest.getErrorResponse`: the error for each partition named."""
    results = [
        _TopicResult(
            topic=wanted.topic,
            partition_result=[
                _partition_result(index, (error, message)) for index in wanted.partitions
            ],
        )
        for wanted in request.topic_partitions or []
    ]
    return _response(ctx, error, results)


def _response(ctx: RequestContext, error: ErrorCode, results: list[Any]) -> Any:
    return new_response(
        ApiKey.ElectLeaders,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        replica_election_results=results,
    )


@handles(ApiKey.ElectLeaders, 0, 2)
async def handle_elect_leaders(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = cluster_denied_message("ElectLeaders", ctx.principal)
        return _refused(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
    try:
        election_type = ElectionType(request.election_type)
    except ValueError:
        message = f"Unknown election type {request.election_type}"
        return _refused(ctx, request, ErrorCode.INVALID_REQUEST, message)
    if request.topic_partitions is None:
        return _response(ctx, ErrorCode.NO_ERROR, _elect_everywhere(ctx, election_type))
    return _response(ctx, ErrorCode.NO_ERROR, _elect_named(ctx, request, election_type))
