"""LeaveGroup (key 13), versions 0-5.

Behaviour: the members leave at once and the group rebalances (or completes a pending
join). Unknown members get UNKNOWN_MEMBER_ID; a static member named by its instance id with
another member id gets FENCED_INSTANCE_ID; a dead group COORDINATOR_NOT_AVAILABLE. In a
KIP-848 consumer group only classic members leave this way (others: UNKNOWN_MEMBER_ID); the
group epoch is bumped, and when only classic members are left after the last member using
the consumer protocol has gone, the group becomes a classic group again (online downgrade).
In a cluster the answer waits until the ISR of the group's `__consumer_offsets` partition has
everything written to it, as Kafka's coordinator runtime answers a write operation
(context.py `replicated_write`).

Version notes: v0-2 name one member and answer its error at the top level; v3+ (KIP-345)
take a batch of members (by member id and/or instance id) and answer one error per member;
v5 adds a reason, which is only logged by Kafka and ignored here.

Authorization: READ on the group, checked first; without it GROUP_AUTHORIZATION_FAILED at the
top level and no members (Kafka's `LeaveGroupRequest.getErrorResponse`).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Member = struct_type(ApiKey.LeaveGroup, "response", "MemberResponse")
BATCHED_FROM_VERSION = 3


@handles(ApiKey.LeaveGroup, 0, 5)
async def handle_leave_group(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return new_response(
            ApiKey.LeaveGroup,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
            members=[],
        )
    batched = ctx.api_version >= BATCHED_FROM_VERSION
    if batched:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    writes = ctx.internal_writes()
    error, member_errors = ctx.broker.groups.leave_group(request.group_id, leaving)
    error = await ctx.replicated_write(request.group_id, error=error, since=writes)
    if not batched and error == ErrorCode.NO_ERROR:
        error = member_errors[0]
    return new_response(
        ApiKey.LeaveGroup,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        members=[
            _Member(member_id=member_id, group_instance_id=instance_id, error_code=member_error)
            for (member_id, instance_id), member_error in zip(leaving, member_errors, strict=False)
        ],
    )
