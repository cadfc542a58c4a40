"""DescribeGroups (key 15), versions 0-6.

Behaviour: state, protocol type and members of each group. A stable group also shows its
protocol name and each member's metadata and assignment; in other states those are empty,
as in Kafka. Unknown groups are answered as Kafka's group coordinator does: state "Dead",
no members, and NO_ERROR before v6, GROUP_ID_NOT_FOUND with the message
"Group <id> not found." from v6 (KIP-1043; no authorized operations on an error, as Kafka).

Authorization, as Kafka's `handleDescribeGroupsRequest`: DESCRIBE on each group; the groups
without it come first, each GROUP_AUTHORIZATION_FAILED with an empty state and no members.

Version notes: v3+ answer the group's authorized operations for the principal
(`ctx.authorized_operations`) when asked and the group answers NO_ERROR, else INT32_MIN;
v4+ carry members' `group_instance_id`; v5 is flexible; v6 adds each group's error message
and GROUP_ID_NOT_FOUND for unknown groups.

A KIP-848 consumer group, a KIP-932 share group or a KIP-1071 streams group is not a classic
group: as Kafka 4.3, it is described "Dead" with no protocol type and no members, with
NO_ERROR before v6 and from v6 GROUP_ID_NOT_FOUND with "Group <id> is not a classic
group." (ConsumerGroupDescribe, ShareGroupDescribe and StreamsGroupDescribe describe them).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.group import Group, GroupState, Member
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Group = struct_type(ApiKey.DescribeGroups, "response", "DescribedGroup")
_Member = struct_type(ApiKey.DescribeGroups, "response", "DescribedGroup", "DescribedGroupMember")
GROUP_ID_NOT_FOUND_FROM_VERSION = 6


def _member(member: Member, group: Group, stable: bool) -> Any:
    return _Member(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        client_host=member.client_host,
        member_metadata=member.metadata(group.protocol_name) if stable else b"",
        member_assignment=member.assignment if stable else b"",
    )


def _unknown(
    group_id: str, version: int, operations: set[int] | None, message: str = "not found"
) -> Any:
    not_found = version >= GROUP_ID_NOT_FOUND_FROM_VERSION
    return _Group(
        error_code=ErrorCode.GROUP_ID_NOT_FOUND if not_found else ErrorCode.NO_ERROR,
        error_message=f"Group {group_id} {message}." if not_found else None,
        group_id=group_id,
        group_state=GroupState.DEAD.value,
        protocol_type="",
        protocol_data="",
        members=[],
        authorized_operations=None if not_found else operations,
    )


def _described(group_id: str, group: Group, operations: set[int] | None) -> Any:
    stable = group.is_in(GroupState.STABLE)
    return _Group(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[_member(member, group, stable) for member in group.members.values()],
        authorized_operations=operations,
    )


def _unauthorized(group_id: str) -> Any:
    return _Group(
        error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
        error_message=None,
        group_id=group_id,
        group_state="",
        protocol_type="",
        protocol_data="",
        members=[],
        authorized_operations=None,
    )


def _describe(ctx: RequestContext, group_id: str, include_operations: bool) -> Any:
    operations = None
    if include_operations:
        operations = ctx.authorized_operations(ResourceType.GROUP, group_id)
    group = ctx.broker.groups.groups.get(group_id)
    if group is None:
        return _unknown(group_id, ctx.api_version, operations)
    if group.consumer is not None or group.share is not None or group.streams is not None:
        return _unknown(group_id, ctx.api_version, operations, "is not a classic group")
    return _described(group_id, group, operations)


@handles(ApiKey.DescribeGroups, 0, 6)
async def handle_describe_groups(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.GROUP, request.groups)
    described = [_unauthorized(group_id) for group_id in request.groups if group_id not in allowed]
    described += [
        _describe(ctx, group_id, request.include_authorized_operations)
        for group_id in request.groups
        if group_id in allowed
    ]
    return new_response(
        ApiKey.DescribeGroups, ctx.api_version, throttle_time_ms=0, groups=described
    )
