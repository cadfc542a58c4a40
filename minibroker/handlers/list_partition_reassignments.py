"""ListPartitionReassignments (key 46), version 0.

Behaviour, as Kafka's controller (`ReplicationControlManager.listPartitionReassignments`): the
ongoing reassignments (AlterPartitionReassignments, cluster/reassignment.py) of the partitions
named, or of every partition when the topics are null. Each lists the partition's replicas
(the target followed by the replicas being removed), the replicas being added and those being
removed. Unknown topics and partitions, and partitions not being reassigned, are left out, and
so is a topic with none left. The timeout is not used.

Authorization, as Kafka's ControllerApis: DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED ("Request ... is not authorized.") at the top level, the topics
named listed with their partition indexes only.

Version notes: v0 is the only version, flexible.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.cluster.reassignment import ongoing
from minibroker.cluster.state import Cluster, Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.ListPartitionReassignments, "response", "OngoingTopicReassignment")
_Partition = struct_type(
    ApiKey.ListPartitionReassignments,
    "response",
    "OngoingTopicReassignment",
    "OngoingPartitionReassignment",
)


def _named(cluster: Cluster, name: str, indexes: Iterable[int]) -> list[Partition]:
    found = (cluster.partition(name, index) for index in indexes)
    return [partition for partition in found if partition is not None]


def _listed(cluster: Cluster, request: Any) -> list[Any]:
    if request.topics is None:
        wanted = [(topic.name, topic.partitions) for topic in cluster.topics.values()]
    else:
        wanted = [
            (topic.name, _named(cluster, topic.name, topic.partition_indexes))
            for topic in request.topics
        ]
    listed = []
    for name, partitions in wanted:
        reassigning = [
            _Partition(
                partition_index=partition.index,
                replicas=list(replica_set.assignment),
                adding_replicas=list(reassignment.adding),
                removing_replicas=list(reassignment.removing),
            )
            for partition, replica_set, reassignment in ongoing(partitions)
        ]
        if reassigning:
            listed.append(_Topic(name=name, partitions=reassigning))
    return listed


def _refused(ctx: RequestContext, request: Any, message: str) -> Any:
    """Kafka's `ListPartitionReassignmentsRequest.getErrorResponse`."""
    topics = [
        _Topic(
            name=topic.name,
            partitions=[
                _Partition(
                    partition_index=index, replicas=[], adding_replicas=[], removing_replicas=[]
                )
                for index in topic.partition_indexes
            ],
        )
        for topic in request.topics or []
    ]
    return _response(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message, topics)


def _response(ctx: RequestContext, error: ErrorCode, message: str | None, topics: list[Any]) -> Any:
    return new_response(
        ApiKey.ListPartitionReassignments,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        topics=topics,
    )


@handles(ApiKey.ListPartitionReassignments, 0, 0)
async def handle_list_partition_reassignments(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        message = cluster_denied_message("ListPartitionReassignments", ctx.principal)
        return _refused(ctx, request, message)
    return _response(ctx, ErrorCode.NO_ERROR, None, _listed(ctx.broker.cluster, request))
