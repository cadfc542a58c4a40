"""Metadata (key 3), versions 0-13.

Behaviour: every partition has one replica, its leader; a single broker leads every
partition and is the controller. In an in-process cluster (minibroker.testing) the brokers
are the live nodes, each partition's leader is the node `Nodes.leader_of` says (with its
leader epoch) and the controller is the lowest live node id. Topic ids are stable, non-zero
UUIDs kept in `partition.metadata`. Unknown topics are created with `num.partitions` when
`auto.create.topics.enable` is true and the request allows it (v4+; always allowed before),
otherwise UNKNOWN_TOPIC_OR_PARTITION; illegal names get INVALID_TOPIC_EXCEPTION. Topics
requested by id (v12+) are looked up by id whatever their name (Java's consumer sends an
empty one, as Kafka's MetadataRequest.Builder leaves it); ids we don't know get
UNKNOWN_TOPIC_ID. At v10-11, which carry
the id field but not yet its meaning, a topic with a null name or a non-zero id makes the
whole request invalid, as Kafka's KafkaApis refuses it: every listed topic answers
INVALID_REQUEST, with no brokers.

Version notes: the topic list means "all topics" when it is empty at v0 and when it is null
at v1+; an empty list at v1+ means none. v8+ report authorized operations when asked
(topic: v8+, cluster: v8-10): every operation Kafka supports, as there are no ACLs;
otherwise INT32_MIN, Kafka's "not requested" value. v13 adds a top-level error code
(KIP-1102, for REBOOTSTRAP_REQUIRED); a Kafka broker always answers NO_ERROR there, so do we.
"""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.cluster.acl import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, authorized_operations
from minibroker.cluster.state import Topic, TopicError, check_topic_name
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Broker = struct_type(ApiKey.Metadata, "response", "MetadataResponseBroker")
_Topic = struct_type(ApiKey.Metadata, "response", "MetadataResponseTopic")
_Partition = struct_type(
    ApiKey.Metadata, "response", "MetadataResponseTopic", "MetadataResponsePartition"
)
_NULL_TOPIC_ID = uuid.UUID(int=0)


def _wants_all_topics(ctx: RequestContext, request: Any) -> bool:
    if ctx.api_version == 0:
        return not request.topics
    return request.topics is None


def _topic_entry(ctx: RequestContext, request: Any, topic: Topic) -> Any:
    leader_of = ctx.broker.nodes.leader_of
    return _Topic(
        error_code=ErrorCode.NO_ERROR,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=[
            _Partition(
                error_code=ErrorCode.NO_ERROR,
                partition_index=partition.index,
                leader_id=leader_of(partition),
                leader_epoch=partition.leader_epoch,
                replica_nodes=[leader_of(partition)],
                isr_nodes=[leader_of(partition)],
                offline_replicas=[],
            )
            for partition in topic.partitions
        ],
        authorized_operations=authorized_operations(
            request.include_topic_authorized_operations, TOPIC_OPERATIONS
        ),
    )


def _error_entry(name: str | None, topic_id: uuid.UUID, error: ErrorCode) -> Any:
    return _Topic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=[],
        authorized_operations=None,
    )


def _find_or_create(ctx: RequestContext, request: Any, name: str) -> Any:
    cluster = ctx.broker.cluster
    topic = cluster.topics.get(name)
    if topic is not None:
        return _topic_entry(ctx, request, topic)
    try:
        check_topic_name(name)
    except TopicError as exc:
        return _error_entry(name, _NULL_TOPIC_ID, exc.error_code)
    config = ctx.broker.config
    allow_create = ctx.api_version < 4 or request.allow_auto_topic_creation
    if not (allow_create and config.get_bool("auto.create.topics.enable")):
        return _error_entry(name, _NULL_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    try:
        topic = cluster.create_topic(name, config.get_int("num.partitions"))
    except TopicError as exc:
        return _error_entry(name, _NULL_TOPIC_ID, exc.error_code)
    return _topic_entry(ctx, request, topic)


def _requested_topics(ctx: RequestContext, request: Any) -> list[Any]:
    cluster = ctx.broker.cluster
    entries = []
    for wanted in request.topics:
        topic_id = wanted.topic_id if ctx.api_version >= 10 else None
        if topic_id not in (None, _NULL_TOPIC_ID):  # by id: the name is ignored, as Kafka
            topic = cluster.topics_by_id.get(topic_id)
            entries.append(
                _topic_entry(ctx, request, topic)
                if topic is not None
                else _error_entry(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
            )
        else:
            entries.append(_find_or_create(ctx, request, wanted.name or ""))
    return entries


def broker_entries(ctx: RequestContext) -> list[Any]:
    entries = []
    for node in ctx.broker.nodes.live_brokers():
        host, port = node.advertised_endpoint(ctx.listener)
        entries.append(_Broker(node_id=node.node_id, host=host, port=port, rack=None))
    return entries


def _ids_before_v12(ctx: RequestContext, request: Any) -> bool:
    return 10 <= ctx.api_version < 12 and any(
        wanted.name is None or wanted.topic_id not in (None, _NULL_TOPIC_ID)
        for wanted in request.topics
    )


def _invalid_request(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.Metadata,
        ctx.api_version,
        throttle_time_ms=0,
        brokers=[],
        cluster_id=None,
        controller_id=-1,
        topics=[
            _error_entry(wanted.name or "", wanted.topic_id, ErrorCode.INVALID_REQUEST)
            for wanted in request.topics
        ],
        authorized_operations=None,
        error_code=ErrorCode.INVALID_REQUEST,
    )


@handles(ApiKey.Metadata, 0, 13)
async def handle_metadata(ctx: RequestContext, request: Any) -> Any:
    if not _wants_all_topics(ctx, request) and _ids_before_v12(ctx, request):
        return _invalid_request(ctx, request)
    if _wants_all_topics(ctx, request):
        topics = [_topic_entry(ctx, request, topic) for topic in ctx.broker.cluster.topics.values()]
    else:
        topics = _requested_topics(ctx, request)
    return new_response(
        ApiKey.Metadata,
        ctx.api_version,
        throttle_time_ms=0,
        brokers=broker_entries(ctx),
        cluster_id=ctx.broker.cluster_id,
        controller_id=ctx.broker.nodes.controller_id(),
        topics=topics,
        authorized_operations=authorized_operations(
            request.include_cluster_authorized_operations, CLUSTER_OPERATIONS
        ),
        error_code=ErrorCode.NO_ERROR,
    )
