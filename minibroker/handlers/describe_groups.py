"""DescribeGroups (key 15), versions 0-5.

Behaviour: state, protocol type and members of each group. A stable group also shows its
protocol name and each member's metadata and assignment; in other states those are empty,
as in Kafka. Unknown groups are answered as Kafka's classic coordinator does: state "Dead",
no members, NO_ERROR.

Version notes: v3+ answer authorized operations (READ, DELETE, DESCRIBE: there are no ACLs)
when asked, else INT32_MIN; v4+ carry members' `group_instance_id`; v5 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.cluster.acl import GROUP_OPERATIONS, authorized_operations
from minibroker.groups.group import Group, GroupState, Member
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Group = struct_type(ApiKey.DescribeGroups, "response", "DescribedGroup")
_Member = struct_type(ApiKey.DescribeGroups, "response", "DescribedGroup", "DescribedGroupMember")


def _member(member: Member, group: Group, stable: bool) -> Any:
    return _Member(
        member_id=member.member_id,
        group_instance_id=member.group_instance_id,
        client_id=member.client_id,
        client_host=member.client_host,
        member_metadata=member.metadata(group.protocol_name) if stable else b"",
        member_assignment=member.assignment if stable else b"",
    )


def _described(group_id: str, group: Group | None, operations: set[int] | None) -> Any:
    if group is None:
        return _Group(
            error_code=ErrorCode.NO_ERROR,
            error_message=None,
            group_id=group_id,
            group_state=GroupState.DEAD.value,
            protocol_type="",
            protocol_data="",
            members=[],
            authorized_operations=operations,
        )
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


@handles(ApiKey.DescribeGroups, 0, 5)
async def handle_describe_groups(ctx: RequestContext, request: Any) -> Any:
    operations = authorized_operations(request.include_authorized_operations, GROUP_OPERATIONS)
    groups = ctx.broker.groups.groups
    return new_response(
        ApiKey.DescribeGroups,
        ctx.api_version,
        throttle_time_ms=0,
        groups=[_described(gid, groups.get(gid), operations) for gid in request.groups],
    )
