"""JoinGroup (key 11), versions 0-9.

Behaviour: Kafka's classic rebalance (see minibroker/groups/coordinator.py). The answer
waits until the rebalance completes; the leader gets every member's metadata for the chosen
protocol, the others an empty member list. Session timeouts outside
[`group.min.session.timeout.ms`, `group.max.session.timeout.ms`] get INVALID_SESSION_TIMEOUT.

Version notes: v0 has no rebalance timeout (the session timeout is used). v4+ joins with an
empty member id get MEMBER_ID_REQUIRED and the id to rejoin with (KIP-394), unless the
member is static (v5+ `group_instance_id`, KIP-345). v7+ carries the protocol type in the
answer. v9 (KIP-814): a static leader rejoining a stable group gets the members with
`skip_assignment`; below v9 it gets an empty member list and keeps the current assignment.

KIP-848 consumer groups (Kafka's default `group.consumer.migration.policy`, bidirectional):
an Empty consumer group becomes a classic group when a classic member joins. A classic
member joining a consumer group with members becomes a member of it (answered at once, no
leader: its generation is its member epoch, its subscription and owned partitions are
reconciled as a heartbeat's; SyncGroup then gives its assignment); its protocol must be
one every other classic member supports (INCONSISTENT_GROUP_PROTOCOL), the group below
`group.consumer.max.size` (GROUP_MAX_SIZE_REACHED). A consumer-protocol member joining a
classic group with members upgrades it to a consumer group (groups/consumer/migration.py).

In a cluster, a join answered at once with records written (a static member's new member id,
a classic member joining a consumer group) is answered once the ISR of the group's
`__consumer_offsets` partition has them, as Kafka's coordinator answers it from the append's
completion (COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR if that fails).

Authorization: READ on the group, checked first; without it GROUP_AUTHORIZATION_FAILED with
generation -1, empty member ids and no members (Kafka's `JoinGroupRequest.getErrorResponse`).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.coordinator import JoinRequest
from minibroker.groups.group import JoinResult
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Member = struct_type(ApiKey.JoinGroup, "response", "JoinGroupResponseMember")
MEMBER_ID_REQUIRED_FROM_VERSION = 4
NULLABLE_PROTOCOL_NAME_FROM_VERSION = 7
SKIP_ASSIGNMENT_FROM_VERSION = 9


def _response(ctx: RequestContext, result: JoinResult) -> Any:
    members = result.members
    if result.skip_assignment and ctx.api_version < SKIP_ASSIGNMENT_FROM_VERSION:
        members = []
    protocol_name = result.protocol_name
    if protocol_name is None and ctx.api_version < NULLABLE_PROTOCOL_NAME_FROM_VERSION:
        protocol_name = ""
    return new_response(
        ApiKey.JoinGroup,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[
            _Member(
                member_id=member.member_id,
                group_instance_id=member.group_instance_id,
                metadata=member.metadata,
            )
            for member in members
        ],
    )


@handles(ApiKey.JoinGroup, 0, 9)
async def handle_join_group(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(ctx, JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED, member_id=""))
    rebalance_timeout = request.rebalance_timeout_ms
    if rebalance_timeout < 0:
        rebalance_timeout = request.session_timeout_ms
    join = JoinRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        client_id=ctx.header.client_id,
        client_host=ctx.client_host,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout,
        protocol_type=request.protocol_type,
        protocols=[(protocol.name, bytes(protocol.metadata)) for protocol in request.protocols],
        require_known_member_id=ctx.api_version >= MEMBER_ID_REQUIRED_FROM_VERSION,
    )
    writes = ctx.internal_writes()
    started = ctx.broker.groups.begin_join(join)
    if not isinstance(started, JoinResult):
        return _response(ctx, await started)
    if ctx.internal_writes() == writes:
        return _response(ctx, started)
    # Answered at once with records written (a static member's new id, a classic member
    # joining a consumer group): as Kafka, once the ISR has them.
    error = await ctx.replicated_write(request.group_id, error=started.error)
    return _response(ctx, started if error == started.error else JoinResult(error, ""))
