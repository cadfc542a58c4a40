"""DescribeQuorum (key 55), versions 0-2.

Behaviour: the KRaft metadata quorum as `cluster/quorum.py` keeps it, which is what admin tools
(`Admin.describeMetadataQuorum`, `kafka-metadata-quorum.sh`) read. Under kraft.version 0 (a
static quorum) the one voter, and leader, is the controller node (the lowest live node id; this
node on a single broker), with the null directory id of a static voter; from kraft.version 1
the voters are the dynamic set AddRaftVoter and RemoveRaftVoter change (with their directory
ids), led by the lowest live voter. The other live nodes of an in-process cluster are
observers, as KRaft brokers are, each with its directory id. There is no metadata log: the
high watermark, and every live replica's end offset, is the number of voter changes made
(every replica is caught up), the leader epoch grows with each change of leader; the live
replicas' last fetch and caught-up times are now (they share the process), a stopped voter's
end offset and times are -1. As Kafka's `KafkaRaftClient`, a request that is not
exactly one topic `__cluster_metadata` with one partition 0 gets UNKNOWN_TOPIC_OR_PARTITION
for each partition it names. It needs DESCRIBE on the cluster (checked first, by Kafka's
controller), else the top-level error is CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization
failed.") with no topics.

Version notes: v1 adds the replicas' last fetch and last caught-up timestamps (KIP-836); v2
(KIP-853) adds error messages, each replica's directory id and `Nodes`: each voter's
endpoints, those AddRaftVoter was given, or, for the controller the quorum started from, its
endpoint named after the listener the request came in on, at its advertised address.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.features import KRAFT_VERSION
from minibroker.cluster.quorum import Voter
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


def _replica(node_id: int, directory: uuid.UUID, end_offset: int, now_ms: int) -> Any:
    return _ReplicaState(
        replica_id=node_id,
        replica_directory_id=directory,
        log_end_offset=end_offset,
        last_fetch_timestamp=now_ms,
        last_caught_up_timestamp=now_ms,
    )


def _voter_state(voter: Voter, live: set[int], end_offset: int, now_ms: int) -> Any:
    """A stopped voter has not fetched (Kafka: -1 for what it has not reported)."""
    if voter.node_id in live:
        return _replica(voter.node_id, voter.directory_id, end_offset, now_ms)
    return _replica(voter.node_id, voter.directory_id, -1, -1)


def _voter_node(ctx: RequestContext, voter: Voter) -> Any:
    if voter.endpoints is None:
        host, port = ctx.broker.nodes.broker(voter.node_id).advertised_endpoint(ctx.listener)
        listeners = [_Listener(name=ctx.listener.name, host=host, port=port)]
    else:
        listeners = [_Listener(name=e.name, host=e.host, port=e.port) for e in voter.endpoints]
    return _Node(node_id=voter.node_id, listeners=listeners)


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
    quorum = nodes.quorum
    voters = quorum.voters(ctx.broker.features.level(KRAFT_VERSION), nodes.controller_id())
    leader_id = quorum.leader(voters, nodes.live)
    voter_ids = {voter.node_id for voter in voters}
    now_ms = ctx.now_ms()
    end = quorum.end_offset
    partition = _PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        leader_id=leader_id,
        leader_epoch=quorum.leader_epoch,
        high_watermark=end,
        current_voters=[_voter_state(voter, nodes.live, end, now_ms) for voter in voters],
        observers=[
            _replica(node.node_id, quorum.directory_of(node.node_id), end, now_ms)
            for node in nodes.live_brokers()
            if node.node_id not in voter_ids
        ],
    )
    return new_response(
        ApiKey.DescribeQuorum,
        ctx.api_version,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        topics=[_TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
        nodes=[_voter_node(ctx, voter) for voter in voters],
    )
