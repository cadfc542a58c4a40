"""StreamsGroupHeartbeat (key 88), version 0 (KIP-1071).

Behaviour, as Kafka 4.3's group coordinator (`minibroker/groups/streams/`): a Kafka Streams
member joins a streams group with epoch 0, its topology, process id, optional user endpoint
and client tags, then heartbeats with its member epoch and the tasks it owns; the answer
carries its member epoch, the heartbeat interval (`streams.heartbeat.interval.ms`), its active,
standby and warm-up tasks when they changed (or on a join), the statuses of the topology
(STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS,
INCORRECTLY_PARTITIONED_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED for the initial
rebalance delay or the assignment interval) and, when the member's endpoint information
epoch is behind the group's, the partitions each user endpoint serves. Epoch -1 leaves.
`AcceptableRecoveryLag` and `TaskOffsetIntervalMs` answer 0, as Kafka's coordinator leaves
them. In a cluster the answer waits until the ISR of the group's `__consumer_offsets`
partition has everything written to it, as Kafka's coordinator runtime answers a write
operation (one that wrote nothing is not refused under min ISR).

Internal topics (repartition and changelog topics) the topology needs and that do not exist
are created here, as Kafka's broker does after the coordinator answers
(`groups/streams/internal_topics.py`: the partition count the coordinator decided, the
topology's topic configs and replication factor, else `default.replication.factor`; a
failure is named in the MISSING_INTERNAL_TOPICS status, "; Creation failed: t (message).",
and not retried for twice the heartbeat interval). Creating needs CREATE on the cluster, else
on every topic to create: otherwise none is created and the status detail ends with
"; Unauthorized to CREATE on topics a, b.".

UNSUPPORTED_VERSION (no message) while the `streams.version` feature is finalized below 1, as
Kafka answers when the streams rebalance protocol is not enabled.

Errors, each with Kafka's message: INVALID_REQUEST (empty ids, a join without rebalance
timeout or topology or with owned tasks, a topology after joining, an epoch below -2, tasks of
one type without the others, tasks outside the topology, source topic regular expressions,
topology updates), STREAMS_INVALID_TOPOLOGY (a changelog topic with a partition count,
repartition topics whose counts cannot be derived), GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (`group.streams.max.size`); static members
(an instance id) answer UNKNOWN_SERVER_ERROR without a message, as Kafka 4.3's coordinator
does ("Static members are not supported yet.", an UnsupportedOperationException).

Authorization, as Kafka 4.3's `KafkaApis`, after the feature check: READ on the group
(GROUP_AUTHORIZATION_FAILED), then, with a topology, DESCRIBE on every topic it names
(TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.groups.streams.manager import (
    StreamsGroupError,
    StreamsHeartbeatRequest,
    StreamsHeartbeatResult,
)
from minibroker.groups.streams.model import (
    MISSING_INTERNAL_TOPICS,
    CopartitionGroup,
    StreamsTopology,
    Subtopology,
    TaskMap,
    TasksTuple,
    TopicInfo,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

KEY = ApiKey.StreamsGroupHeartbeat
_Status = struct_type(KEY, "response", "Status")
_TaskIds = struct_type(KEY, "response", "TaskIds")
_EndpointToPartitions = struct_type(KEY, "response", "EndpointToPartitions")
_Endpoint = struct_type(KEY, "response", "EndpointToPartitions", "Endpoint")
_TopicPartition = struct_type(KEY, "response", "EndpointToPartitions", "TopicPartition")


def _topic_info(info: Any) -> TopicInfo:
    configs = tuple(sorted((kv.key, kv.value) for kv in info.topic_configs or ()))
    return TopicInfo(info.name, info.partitions, info.replication_factor, configs)


def _subtopology(sub: Any) -> Subtopology:
    return Subtopology(
        subtopology_id=sub.subtopology_id,
        source_topics=tuple(sub.source_topics or ()),
        repartition_sink_topics=tuple(sub.repartition_sink_topics or ()),
        state_changelog_topics=tuple(_topic_info(t) for t in sub.state_changelog_topics or ()),
        repartition_source_topics=tuple(
            _topic_info(t) for t in sub.repartition_source_topics or ()
        ),
        copartition_groups=tuple(
            CopartitionGroup(
                tuple(group.source_topics or ()), tuple(group.repartition_source_topics or ())
            )
            for group in sub.copartition_groups or ()
        ),
    )


def _topology(topology: Any) -> StreamsTopology | None:
    if topology is None:
        return None
    subtopologies = [_subtopology(sub) for sub in topology.subtopologies or ()]
    return StreamsTopology(topology.epoch, {sub.subtopology_id: sub for sub in subtopologies})


def _uses_regex(topology: Any) -> bool:
    return topology is not None and any(
        sub.source_topic_regex for sub in topology.subtopologies or ()
    )


def _tasks(tasks: Any) -> TaskMap | None:
    if tasks is None:
        return None
    owned: TaskMap = {}
    for entry in tasks:
        owned.setdefault(entry.subtopology_id, set()).update(entry.partitions)
    return owned


def _offsets(offsets: Any) -> dict[tuple[str, int], int] | None:
    if offsets is None:
        return None
    return {(entry.subtopology_id, entry.partition): entry.offset for entry in offsets}


def _heartbeat_request(ctx: RequestContext, request: Any) -> StreamsHeartbeatRequest:
    config = ctx.broker.group_configs.effective(request.group_id, ctx.broker.config)
    endpoint = request.user_endpoint
    return StreamsHeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=_topology(request.topology),
        uses_source_topic_regex=_uses_regex(request.topology),
        active=_tasks(request.active_tasks),
        standby=_tasks(request.standby_tasks),
        warmup=_tasks(request.warmup_tasks),
        process_id=request.process_id,
        user_endpoint=None if endpoint is None else (endpoint.host, endpoint.port),
        client_tags=None
        if request.client_tags is None
        else {kv.key: kv.value for kv in request.client_tags},
        task_offsets=_offsets(request.task_offsets),
        task_end_offsets=_offsets(request.task_end_offsets),
        shutdown_application=request.shutdown_application,
        client_id=ctx.header.client_id or "",
        client_host=ctx.client_host,
        session_timeout_ms=config.streams_session_timeout_ms,
        heartbeat_interval_ms=config.streams_heartbeat_interval_ms,
        num_standby_replicas=config.streams_num_standby_replicas,
        initial_rebalance_delay_ms=config.streams_initial_rebalance_delay_ms,
        assignment_interval_ms=config.streams_assignment_interval_ms,
    )


def _refused(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    topology = _topology(request.topology)
    names = topology.required_topics() if topology is not None else set()
    if ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


def _create_internal_topics(ctx: RequestContext, result: StreamsHeartbeatResult) -> str | None:
    """Create the missing internal topics (Kafka's KafkaApis and AutoTopicCreationManager):
    CREATE on the cluster, else on every one of them, or none is created. What to add to the
    MISSING_INTERNAL_TOPICS status detail, or None."""
    wanted = result.to_create
    if not wanted:
        return None
    if not ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        allowed = ctx.authorized_names(AclOperation.CREATE, ResourceType.TOPIC, set(wanted))
        refused = sorted(set(wanted) - allowed)
        if refused:
            return f"Unauthorized to CREATE on topics {', '.join(refused)}."
    failures = ctx.broker.groups.streams_topics.create(
        wanted,
        ctx.broker.nodes.reachable(),
        ctx.broker.config.get_int("default.replication.factor"),
        2 * result.heartbeat_interval_ms,
    )
    return None if failures is None else f"Creation failed: {failures}."


def _task_ids(tasks: TaskMap) -> list[Any]:
    return [
        _TaskIds(subtopology_id=sub, partitions=sorted(parts))
        for sub, parts in sorted(tasks.items())
        if parts
    ]


def _assignment_fields(assignment: TasksTuple | None) -> dict[str, Any]:
    if assignment is None:
        return {"active_tasks": None, "standby_tasks": None, "warmup_tasks": None}
    return {
        "active_tasks": _task_ids(assignment.active),
        "standby_tasks": _task_ids(assignment.standby),
        "warmup_tasks": _task_ids(assignment.warmup),
    }


def _topic_partitions(partitions: dict[str, list[int]]) -> list[Any]:
    return [_TopicPartition(topic=name, partitions=parts) for name, parts in partitions.items()]


def _endpoints(result: StreamsHeartbeatResult) -> list[Any] | None:
    if result.partitions_by_endpoint is None:
        return None
    return [
        _EndpointToPartitions(
            user_endpoint=_Endpoint(host=entry.endpoint[0], port=entry.endpoint[1]),
            active_partitions=_topic_partitions(entry.active),
            standby_partitions=_topic_partitions(entry.standby),
        )
        for entry in result.partitions_by_endpoint
    ]


def _statuses(result: StreamsHeartbeatResult, creation: str | None) -> list[Any]:
    """The answer's statuses, the creation outcome joined to MISSING_INTERNAL_TOPICS's detail
    with "; " (a status of its own when there is none). An empty list when there is none, as
    Kafka's default."""
    statuses = [(status.code, status.detail) for status in result.statuses or ()]
    if creation is not None:
        for index, (code, detail) in enumerate(statuses):
            if code == MISSING_INTERNAL_TOPICS:
                statuses[index] = (code, f"{detail}; {creation}")
                break
        else:
            statuses.append((MISSING_INTERNAL_TOPICS, creation))
    return [_Status(status_code=code, status_detail=detail) for code, detail in statuses]


def _error(ctx: RequestContext, error: ErrorCode, message: str | None) -> Any:
    return new_response(
        KEY,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        member_id="",
        member_epoch=0,
        heartbeat_interval_ms=0,
        acceptable_recovery_lag=0,
        task_offset_interval_ms=0,
        status=[],
        endpoint_information_epoch=0,
        partitions_by_user_endpoint=None,
        **_assignment_fields(None),
    )


@handles(ApiKey.StreamsGroupHeartbeat, 0, 0)
async def handle_streams_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.features.streams_groups_enabled:
        return _error(ctx, ErrorCode.UNSUPPORTED_VERSION, None)
    refused = _refused(ctx, request)
    if refused is not None:
        return _error(ctx, refused, None)
    writes = ctx.internal_writes()
    try:
        result = ctx.broker.groups.streams.heartbeat(_heartbeat_request(ctx, request))
    except StreamsGroupError as exc:
        return _error(ctx, exc.error, exc.message)
    waited = await ctx.replicated_write(request.group_id, since=writes)
    if waited != ErrorCode.NO_ERROR:
        return _error(ctx, waited, None)
    creation = _create_internal_topics(ctx, result)
    return new_response(
        KEY,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        acceptable_recovery_lag=0,
        task_offset_interval_ms=0,
        status=_statuses(result, creation),
        endpoint_information_epoch=result.endpoint_information_epoch,
        partitions_by_user_endpoint=_endpoints(result),
        **_assignment_fields(result.assignment),
    )
