"""StreamsGroupDescribe (key 89), version 0 (KIP-1071).

Behaviour, as Kafka 4.3's `StreamsGroup.asDescribedGroup`: for each requested streams group
its state (Empty, NotReady, Assigning, Reconciling, Stable), group epoch, assignment epoch,
topology (the configured one, with the partition counts the coordinator decided for the
internal topics, once it is ready; else the topology as the members sent it) and every member
with its epoch, instance and rack id, client id and host, topology epoch, process id, user
endpoint, client tags, task offsets and end offsets, current and target assignment (active,
standby and warm-up tasks) and `IsClassic` false. A group that does not exist answers
GROUP_ID_NOT_FOUND ("Group <id> not found."), another kind of group GROUP_ID_NOT_FOUND
("Group <id> is not a streams group."). Authorized operations (the principal's) when asked,
for groups answered NO_ERROR, else INT32_MIN. While the `streams.version` feature is
finalized below 1 every group answers UNSUPPORTED_VERSION.

Authorization, as Kafka's `KafkaApis`: DESCRIBE on each group; the groups without it come
first, each GROUP_AUTHORIZATION_FAILED. Then, with an authorizer, a described group whose
topology names a topic the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
("The described group uses topics that the client is not authorized to describe.") with no
members and no topology.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.streams.model import (
    StreamsGroup,
    StreamsMember,
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

KEY = ApiKey.StreamsGroupDescribe
_Group = struct_type(KEY, "response", "DescribedGroup")
_Topology = struct_type(KEY, "response", "DescribedGroup", "Topology")
_Subtopology = struct_type(KEY, "response", "DescribedGroup", "Topology", "Subtopology")
_Member = struct_type(KEY, "response", "DescribedGroup", "Member")
_Endpoint = struct_type(KEY, "response", "DescribedGroup", "Member", "Endpoint")
_KeyValue = struct_type(KEY, "response", "DescribedGroup", "Member", "KeyValue")
_TaskOffset = struct_type(KEY, "response", "DescribedGroup", "Member", "TaskOffset")
_Assignment = struct_type(KEY, "response", "DescribedGroup", "Member", "Assignment")
_TaskIds = struct_type(KEY, "response", "DescribedGroup", "Member", "Assignment", "TaskIds")
_TopicInfo = struct_type(KEY, "response", "DescribedGroup", "Topology", "Subtopology", "TopicInfo")
_TopicKeyValue = struct_type(
    KEY, "response", "DescribedGroup", "Topology", "Subtopology", "TopicInfo", "KeyValue"
)
INT32_MIN = -(2**31)
HIDDEN_TOPICS_MESSAGE = (
    "The described group uses topics that the client is not authorized to describe."
)


def _task_ids(tasks: TaskMap) -> list[Any]:
    return [
        _TaskIds(subtopology_id=sub, partitions=sorted(parts))
        for sub, parts in sorted(tasks.items())
        if parts
    ]


def _assignment(tasks: TasksTuple) -> Any:
    return _Assignment(
        active_tasks=_task_ids(tasks.active),
        standby_tasks=_task_ids(tasks.standby),
        warmup_tasks=_task_ids(tasks.warmup),
    )


def _task_offsets(offsets: dict[tuple[str, int], int]) -> list[Any]:
    return [
        _TaskOffset(subtopology_id=sub, partition=partition, offset=offset)
        for (sub, partition), offset in sorted(offsets.items())
    ]


def _member(group: StreamsGroup, member: StreamsMember) -> Any:
    endpoint = member.user_endpoint
    return _Member(
        member_id=member.member_id,
        member_epoch=member.member_epoch,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        topology_epoch=member.topology_epoch,
        process_id=member.process_id,
        user_endpoint=None if endpoint is None else _Endpoint(host=endpoint[0], port=endpoint[1]),
        client_tags=[_KeyValue(key=k, value=v) for k, v in sorted(member.client_tags.items())],
        task_offsets=_task_offsets(member.task_offsets),
        task_end_offsets=_task_offsets(member.task_end_offsets),
        assignment=_assignment(member.assigned),
        target_assignment=_assignment(group.target.get(member.member_id, TasksTuple())),
        is_classic=False,
    )


def _topic_info(topic: TopicInfo, decided: dict[str, int]) -> Any:
    return _TopicInfo(
        name=topic.name,
        partitions=decided.get(topic.name, topic.partitions),
        replication_factor=topic.replication_factor,
        topic_configs=[_TopicKeyValue(key=k, value=v) for k, v in topic.configs],
    )


def _subtopology(sub: Subtopology, decided: dict[str, int]) -> Any:
    return _Subtopology(
        subtopology_id=sub.subtopology_id,
        source_topics=list(sub.source_topics),
        repartition_sink_topics=list(sub.repartition_sink_topics),
        state_changelog_topics=[_topic_info(t, decided) for t in sub.state_changelog_topics],
        repartition_source_topics=[_topic_info(t, decided) for t in sub.repartition_source_topics],
    )


def _topology(group: StreamsGroup) -> Any:
    topology = group.topology
    if topology is None:
        return None
    configured = group.configured
    decided = configured.internal_partitions if configured is not None and configured.ready else {}
    return _Topology(
        epoch=topology.epoch,
        subtopologies=[
            _subtopology(topology.subtopologies[sub_id], decided)
            for sub_id in sorted(topology.subtopologies)
        ],
    )


def _failed(group_id: str, error: ErrorCode, message: str | None) -> Any:
    return _Group(
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        topology=None,
        members=[],
        authorized_operations=INT32_MIN,
    )


def _group(group: StreamsGroup, operations: int) -> Any:
    return _Group(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        topology=_topology(group),
        members=[_member(group, member) for member in group.members.values()],
        authorized_operations=operations,
    )


def _operations(ctx: RequestContext, group_id: str, requested: bool) -> int:
    if not requested:
        return INT32_MIN
    return sum(1 << code for code in ctx.authorized_operations(ResourceType.GROUP, group_id))


def _described(ctx: RequestContext, group_id: str, requested_operations: bool) -> Any:
    if not ctx.broker.features.streams_groups_enabled:
        return _failed(group_id, ErrorCode.UNSUPPORTED_VERSION, None)
    container = ctx.broker.groups.groups.get(group_id)
    if container is None:
        return _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    group = container.streams
    if group is None:
        return _failed(
            group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group."
        )
    topics = group.topology.required_topics() if group.topology is not None else set()
    if ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, topics) != topics:
        return _failed(group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, HIDDEN_TOPICS_MESSAGE)
    return _group(group, _operations(ctx, group_id, requested_operations))


def _groups(ctx: RequestContext, request: Any) -> list[Any]:
    ids = request.group_ids
    describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.GROUP, ids)
    if not ctx.broker.features.streams_groups_enabled:
        describable = set(ids)  # every group answers UNSUPPORTED_VERSION, as Kafka
    refused = [
        _failed(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
        for group_id in ids
        if group_id not in describable
    ]
    return refused + [
        _described(ctx, group_id, request.include_authorized_operations)
        for group_id in ids
        if group_id in describable
    ]


@handles(ApiKey.StreamsGroupDescribe, 0, 0)
async def handle_streams_group_describe(ctx: RequestContext, request: Any) -> Any:
    return new_response(KEY, ctx.api_version, throttle_time_ms=0, groups=_groups(ctx, request))
