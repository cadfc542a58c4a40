"""Metadata (key 3), versions 0-13.

Behaviour: a single broker leads every partition and is the controller. In an in-process
cluster (minibroker.testing) the brokers are the live nodes (not one unregistered, until it
starts again) and the controller is the lowest live node id; a partition of a topic created
with one replica lists its node as its only replica and ISR, and as its leader unless that node
is stopped or fenced (then leader -1, LEADER_NOT_AVAILABLE, the node an offline replica), and
a replicated partition (replication factor above 1) its leader, assignment, ISR and the
replicas of unreachable nodes as offline
(`Nodes.replica_view`), with its leader epoch; a partition without a leader (no live ISR
member) answers LEADER_NOT_AVAILABLE with leader -1. Topic ids are stable, non-zero
UUIDs kept in `partition.metadata`. Unknown topics are created with `num.partitions` when
`auto.create.topics.enable` is true and the request allows it (v4+; always allowed before),
otherwise UNKNOWN_TOPIC_OR_PARTITION; illegal names get INVALID_TOPIC_EXCEPTION. Topics
requested by id (v12+) are looked up by id whatever their name (Java's consumer sends an
empty one, as Kafka's MetadataRequest.Builder leaves it); ids we don't know get
UNKNOWN_TOPIC_ID. At v10-11, which carry
the id field but not yet its meaning, a topic with a null name or a non-zero id makes the
whole request invalid, as Kafka's KafkaApis refuses it: every listed topic answers
INVALID_REQUEST, with no brokers.

Authorization, as Kafka's KafkaApis: each topic needs DESCRIBE. An all-topics answer leaves
the others out; a topic named and not describable answers TOPIC_AUTHORIZATION_FAILED whether
it exists or not (zero topic id, not internal, no partitions; asked by id: null name and the
id). A topic to auto-create needs CREATE on the cluster or on the topic, else
TOPIC_AUTHORIZATION_FAILED (zero id, `is_internal` from its name). Refused topics come after
the answered ones (those refused creation first) and carry no authorized operations.

Version notes: the topic list means "all topics" when it is empty at v0 and when it is null
at v1+; an empty list at v1+ means none. v8+ report authorized operations when asked
(`ctx.authorized_operations`): each answered topic's (topic: v8+; error entries included,
as Kafka) and the cluster's (v8-10; none without DESCRIBE on the cluster); otherwise
INT32_MIN, Kafka's "not requested" value. v13 adds a top-level error code
(KIP-1102, for REBOOTSTRAP_REQUIRED); a Kafka broker always answers NO_ERROR there, so do we.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.cluster.state import (
    INTERNAL_TOPICS,
    Partition,
    Topic,
    TopicError,
    check_topic_name,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

if TYPE_CHECKING:
    from minibroker.server.nodes import Nodes

_Broker = struct_type(ApiKey.Metadata, "response", "MetadataResponseBroker")
_Topic = struct_type(ApiKey.Metadata, "response", "MetadataResponseTopic")
_Partition = struct_type(
    ApiKey.Metadata, "response", "MetadataResponseTopic", "MetadataResponsePartition"
)
_NULL_TOPIC_ID = uuid.UUID(int=0)
# Each topic's last entry and what it was made from (never changed once answered).
_entries: weakref.WeakKeyDictionary[Topic, tuple[Hashable, Any]] = weakref.WeakKeyDictionary()
FIRST_AUTHORIZED_OPERATIONS_VERSION = 8
LAST_CLUSTER_OPERATIONS_VERSION = 10


class _Answers:
    """The topic entries in the order Kafka lists them: the topics answered (request order),
    then those refused for auto-creation, then those refused DESCRIBE."""

    def __init__(self) -> None:
        self.answered: list[Any] = []
        self.create_denied: list[Any] = []
        self.describe_denied: list[Any] = []

    def all(self) -> list[Any]:
        return self.answered + self.create_denied + self.describe_denied


def _wants_all_topics(ctx: RequestContext, request: Any) -> bool:
    if ctx.api_version == 0:
        return not request.topics
    return request.topics is None


def _topic_operations(ctx: RequestContext, request: Any, name: str) -> set[int] | None:
    """The topic's authorized operations when asked for (v8+), else None (INT32_MIN)."""
    if not request.include_topic_authorized_operations:
        return None
    return ctx.authorized_operations(ResourceType.TOPIC, name)


def _cluster_operations(ctx: RequestContext, request: Any) -> set[int] | None:
    """The cluster's authorized operations when asked for at v8-10 (none without DESCRIBE on
    the cluster), else None (INT32_MIN)."""
    if not (
        FIRST_AUTHORIZED_OPERATIONS_VERSION <= ctx.api_version <= LAST_CLUSTER_OPERATIONS_VERSION
        and request.include_cluster_authorized_operations
    ):
        return None
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return set()
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)


def _partition_state(nodes: Nodes, partition: Partition) -> Hashable:
    """What a partition's entry says, cheaply (no replica view for a single replica)."""
    if partition.replication is None:
        return nodes.leader_of(partition), partition.leader_epoch
    view = nodes.replica_view(partition)
    return view.leader, partition.leader_epoch, (*view.replicas,), (*view.isr,), (*view.offline,)


def _topic_entry(ctx: RequestContext, request: Any, topic: Topic) -> Any:
    """The topic's entry; the same object as last time while nothing in it changed, so that
    its bytes are not encoded again (protocol/metadata_response.py)."""
    nodes = ctx.broker.nodes
    operations = _topic_operations(ctx, request, topic.name)
    key = (
        topic.topic_id,
        None if operations is None else frozenset(operations),
        tuple(_partition_state(nodes, partition) for partition in topic.partitions),
    )
    cached = _entries.get(topic)
    if cached is not None and cached[0] == key:
        return cached[1]
    entry = _new_topic_entry(nodes, topic, operations)
    _entries[topic] = (key, entry)
    return entry


def _new_topic_entry(nodes: Nodes, topic: Topic, operations: set[int] | None) -> Any:
    views = [(partition, nodes.replica_view(partition)) for partition in topic.partitions]
    return _Topic(
        error_code=ErrorCode.NO_ERROR,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=[
            _Partition(
                error_code=ErrorCode.LEADER_NOT_AVAILABLE
                if view.leader < 0
                else ErrorCode.NO_ERROR,
                partition_index=partition.index,
                leader_id=view.leader,
                leader_epoch=partition.leader_epoch,
                replica_nodes=view.replicas,
                isr_nodes=view.isr,
                offline_replicas=view.offline,
            )
            for partition, view in views
        ],
        authorized_operations=operations,
    )


def _error_entry(
    name: str | None,
    topic_id: uuid.UUID,
    error: ErrorCode,
    operations: set[int] | None = None,
    *,
    internal: bool = False,
) -> Any:
    return _Topic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=internal,
        partitions=[],
        authorized_operations=operations,
    )


def _may_create(ctx: RequestContext, name: str) -> bool:
    return ctx.authorize_cluster(AclOperation.CREATE) or ctx.authorize(
        AclOperation.CREATE, ResourceType.TOPIC, name
    )


def _find_or_create(ctx: RequestContext, request: Any, name: str, answers: _Answers) -> None:
    cluster = ctx.broker.cluster
    topic = cluster.topics.get(name)
    if topic is not None:
        answers.answered.append(_topic_entry(ctx, request, topic))
        return
    config = ctx.broker.config
    allow_create = ctx.api_version < 4 or request.allow_auto_topic_creation
    auto_create = allow_create and config.get_bool("auto.create.topics.enable")
    if auto_create and not _may_create(ctx, name):
        answers.create_denied.append(
            _error_entry(
                name,
                _NULL_TOPIC_ID,
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                internal=name in INTERNAL_TOPICS,
            )
        )
        return
    try:
        check_topic_name(name)
        if auto_create:
            topic = cluster.create_topic(name, config.get_int("num.partitions"))
    except TopicError as exc:
        error = exc.error_code
    else:
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if topic is not None:
        answers.answered.append(_topic_entry(ctx, request, topic))
        return
    operations = _topic_operations(ctx, request, name)
    answers.answered.append(_error_entry(name, _NULL_TOPIC_ID, error, operations))


def _requested_topics(ctx: RequestContext, request: Any) -> list[Any]:
    answers = _Answers()
    for wanted in request.topics:
        topic_id = wanted.topic_id if ctx.api_version >= 10 else None
        if topic_id not in (None, _NULL_TOPIC_ID):  # by id: the name is ignored, as Kafka
            _by_id(ctx, request, topic_id, answers)
        else:
            name = wanted.name or ""
            if ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                _find_or_create(ctx, request, name, answers)
            else:  # the topic's id is not disclosed, nor whether it exists
                answers.describe_denied.append(
                    _error_entry(name, _NULL_TOPIC_ID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                )
    return answers.all()


def _by_id(ctx: RequestContext, request: Any, topic_id: uuid.UUID, answers: _Answers) -> None:
    topic = ctx.broker.cluster.topics_by_id.get(topic_id)
    if topic is None:
        answers.answered.append(_error_entry(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
    elif ctx.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
        answers.answered.append(_topic_entry(ctx, request, topic))
    else:  # topic ids are not secret: Kafka answers the id, not the name
        answers.describe_denied.append(
            _error_entry(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        )


def _all_topics(ctx: RequestContext, request: Any) -> list[Any]:
    """Every topic the principal may DESCRIBE; the others are left out."""
    topics = list(ctx.broker.cluster.topics.values())
    allowed = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.TOPIC, (topic.name for topic in topics)
    )
    return [_topic_entry(ctx, request, topic) for topic in topics if topic.name in allowed]


def broker_entries(ctx: RequestContext) -> list[Any]:
    entries = []
    for node in ctx.broker.nodes.registered_brokers(include_fenced=False):
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
    all_topics = _wants_all_topics(ctx, request)
    if not all_topics and _ids_before_v12(ctx, request):
        return _invalid_request(ctx, request)
    topics = _all_topics(ctx, request) if all_topics else _requested_topics(ctx, request)
    return new_response(
        ApiKey.Metadata,
        ctx.api_version,
        throttle_time_ms=0,
        brokers=broker_entries(ctx),
        cluster_id=ctx.broker.cluster_id,
        controller_id=ctx.broker.nodes.controller_id(),
        topics=topics,
        authorized_operations=_cluster_operations(ctx, request),
        error_code=ErrorCode.NO_ERROR,
    )
