"""ShareGroupDescribe (key 77), version 1 (KIP-932).

Behaviour, as Kafka 4.3's `GroupMetadataManager.shareGroupDescribe`: for each requested share
group its state (Empty, Stable), group epoch, assignment epoch, assignor ("simple") and every
member with its rack, epoch, client, subscribed topic names and current assignment (topic id,
name, partitions). A group that does not exist answers GROUP_ID_NOT_FOUND ("Group <id> not
found."), another kind of group GROUP_ID_NOT_FOUND ("Group <id> is not a share group.").
Authorized operations (the principal's, `ctx.authorized_operations`) when asked, for groups
answered NO_ERROR, else INT32_MIN.
While the `share.version` feature is finalized below 1 every group answers
UNSUPPORTED_VERSION, as Kafka.

Version notes: v0 (Kafka 4.0's early access) is not served, as Kafka 4.1+.

Authorization, as Kafka's `KafkaApis`: DESCRIBE on each group; the groups without it come
first, each GROUP_AUTHORIZATION_FAILED. Then, with an authorizer, a described group whose
members' assignments name a topic the principal may not DESCRIBE answers
TOPIC_AUTHORIZATION_FAILED ("The group has described topic(s) that the client is not
authorized to describe.") with no members.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.consumer.model import Assignment
from minibroker.groups.settings import SHARE_ASSIGNOR
from minibroker.groups.share.model import ShareGroup, ShareMember
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_answers import authorized_described_groups, described_assignment
from minibroker.server.context import RequestContext

_Group = struct_type(ApiKey.ShareGroupDescribe, "response", "DescribedGroup")
_Member = struct_type(ApiKey.ShareGroupDescribe, "response", "DescribedGroup", "Member")
INT32_MIN = -(2**31)


def _assignment(ctx: RequestContext, assignment: Assignment) -> Any:
    return described_assignment(
        ApiKey.ShareGroupDescribe, assignment, ctx.broker.cluster.topic_name
    )


def _member(ctx: RequestContext, member: ShareMember) -> Any:
    return _Member(
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=sorted(member.subscribed_topic_names),
        assignment=_assignment(ctx, member.assigned),
    )


def _failed(group_id: str, error: ErrorCode, message: str | None) -> Any:
    return _Group(
        error_code=error,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=[],
        authorized_operations=INT32_MIN,
    )


def _group(ctx: RequestContext, group: ShareGroup, operations: int) -> Any:
    return _Group(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=SHARE_ASSIGNOR,
        members=[_member(ctx, member) for member in group.members.values()],
        authorized_operations=operations,
    )


def _operations(ctx: RequestContext, group_id: str, requested: bool) -> int:
    if not requested:
        return INT32_MIN
    return sum(1 << code for code in ctx.authorized_operations(ResourceType.GROUP, group_id))


def _described(ctx: RequestContext, group_id: str, requested_operations: bool) -> Any:
    operations = _operations(ctx, group_id, requested_operations)
    if not ctx.broker.features.share_groups_enabled:
        return _failed(group_id, ErrorCode.UNSUPPORTED_VERSION, None)
    container = ctx.broker.groups.groups.get(group_id)
    if container is None:
        return _failed(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if container.share is None:
        return _failed(
            group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
        )
    return _group(ctx, container.share, operations)


def _groups(ctx: RequestContext, request: Any) -> list[Any]:
    ids = request.group_ids
    describable = ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.GROUP, ids)
    if not ctx.broker.features.share_groups_enabled:
        describable = set(ids)  # every group answers UNSUPPORTED_VERSION, as Kafka
    return authorized_described_groups(
        ids,
        describable,
        lambda group_id: _described(ctx, group_id, request.include_authorized_operations),
        _failed,
        lambda names: ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names),
    )


@handles(ApiKey.ShareGroupDescribe, 1, 1)
async def handle_share_group_describe(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.ShareGroupDescribe,
        ctx.api_version,
        throttle_time_ms=0,
        groups=_groups(ctx, request),
    )
