"""DescribeQuorum (key 55), versions 0-2.

Behaviour: the KRaft metadata quorum as a single-voter quorum, which is what admin tools
(`Admin.describeMetadataQuorum`, `kafka-metadata-quorum.sh`) read. The voter, and leader, is
the controller node (the lowest live node id; this node on a single broker); the other live
nodes of an in-process cluster are observers, as KRaft brokers are. There is no metadata log,
so the quorum answers leader epoch 1 and offset 0 for the high watermark and every replica's
end offset (every replica is caught up); the leader's last fetch and caught-up times are now,
and so are the observers' (they share the process). Replica directory ids are the null id,
as for voters of a static quorum. As Kafka's `KafkaRaftClient`, a request that is not
exactly one topic `__cluster_metadata` with one partition 0 gets UNKNOWN_TOPIC_OR_PARTITION
for each partition it names. It needs DESCRIBE on the cluster (checked first, by Kafka's
controller), else the top-level error is CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization
failed.") with no topics.

Version notes: v1 adds the replicas' last fetch and last caught-up timestamps (KIP-836); v2
(KIP-853) adds error messages, each replica's directory id and `Nodes`: the voter's
endpoint, named after the listener the request came in on, at its advertised address.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_TopicData = struct_type(ApiKey.DescribeQuorum, "response", "TopicData")
_PartitionData = struct_type(ApiKey.DescribeQuorum, "response", "TopicData", "PartitionData")
_ReplicaState = struct_type(
    ApiKey.DescribeQuorum, "response", "TopicData", "PartitionData", "ReplicaState"
)
_Node = struct_type(ApiKey.DescribeQuorum, "response", "Node")
_Listener = struct_type(ApiKey.DescribeQuorum, "response", "Node", "Listener")
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
LEADER_EPOCH = 1
METADATA_END_OFFSET = 0
NO_DIRECTORY_ID = uuid.UUID(int=0)
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."


def _is_metadata_partition(request: Any) -> bool:
    topics = request.topics
    return (
        len(topics) == 1
        and topics[0].topic_name == METADATA_TOPIC
        and [p.partition_index for p in topics[0].partitions] == [METADATA_PARTITION]
    )


def _unknown_partitions(ctx: RequestContext, request: Any) -> Any:
    topics = [
        _TopicData(
            topic_name=topic.topic_name,
            partitions=[
                _PartitionData(
                    partition_index=partition.partition_index,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=UNKNOWN_PARTITION_MESSAGE,
                    leader_id=-1,
                    leader_epoch=-1,
                    high_watermark=-1,
                    current_voters=[],
                    observers=[],
                )
                for partition in topic.partitions
            ],
        )
        for topic in request.topics
    ]
    return new_response(
        ApiKey.DescribeQuorum,
        ctx.api_version,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        topics=topics,
        nodes=[],
    )


def _replica(node_id: int, now_ms: int) -> Any:
    return _ReplicaState(
        replica_id=node_id,
        replica_directory_id=NO_DIRECTORY_ID,
        log_end_offset=METADATA_END_OFFSET,
        last_fetch_timestamp=now_ms,
        last_caught_up_timestamp=now_ms,
    )


def _voter_node(ctx: RequestContext, leader_id: int) -> Any:
    host, port = ctx.broker.nodes.broker(leader_id).advertised_endpoint(ctx.listener)
    return _Node(
        node_id=leader_id, listeners=[_Listener(name=ctx.listener.name, host=host, port=port)]
    )


@handles(ApiKey.DescribeQuorum, 0, 2)
async def handle_describe_quorum(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return new_response(
            ApiKey.DescribeQuorum,
            ctx.api_version,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message="Cluster authorization failed.",
            topics=[],
            nodes=[],
        )
    if not _is_metadata_partition(request):
        return _unknown_partitions(ctx, request)
    nodes = ctx.broker.nodes
    leader_id = nodes.controller_id()
    now_ms = ctx.now_ms()
    partition = _PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        leader_id=leader_id,
        leader_epoch=LEADER_EPOCH,
        high_watermark=METADATA_END_OFFSET,
        current_voters=[_replica(leader_id, now_ms)],
        observers=[
            _replica(node.node_id, now_ms)
            for node in nodes.live_brokers()
            if node.node_id != leader_id
        ],
    )
    return new_response(
        ApiKey.DescribeQuorum,
        ctx.api_version,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        topics=[_TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
        nodes=[_voter_node(ctx, leader_id)],
    )
