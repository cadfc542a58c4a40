"""SyncGroup (key 14), versions 0-5.

Behaviour: the leader's assignments are stored (in `__consumer_offsets`, as group metadata)
and relayed as opaque bytes; members without one get an empty assignment. Followers wait
for the leader's SyncGroup; in a stable group every member gets its current assignment at
once. Errors as Kafka: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL, COORDINATOR_NOT_AVAILABLE.

A classic member of a KIP-848 consumer group (groups/consumer/migration.py) gets its current
assignment as the coordinator computed it (consumer-protocol bytes; the leader's
assignments are ignored; while it revokes partitions, the ones it keeps), or
REBALANCE_IN_PROGRESS when the group epoch moved past its epoch and it is not revoking (it
rejoins); a member using the consumer protocol gets UNKNOWN_MEMBER_ID.

Version notes: v3+ carries `group_instance_id`; v5+ the protocol type and name, checked
against the group's when given.

Checks before the group sees the request, in Kafka's order: v5+ without protocol type or name
INCONSISTENT_GROUP_PROTOCOL; then READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.group import SyncResult
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

MANDATORY_PROTOCOL_FROM_VERSION = 5


def _refused(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if ctx.api_version >= MANDATORY_PROTOCOL_FROM_VERSION and (
        request.protocol_type is None or request.protocol_name is None
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


async def _synced(ctx: RequestContext, request: Any) -> SyncResult:
    refused = _refused(ctx, request)
    if refused is not None:
        return SyncResult(refused)
    return await ctx.broker.groups.sync_group(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=request.group_instance_id,
        generation=request.generation_id,
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )


@handles(ApiKey.SyncGroup, 0, 5)
async def handle_sync_group(ctx: RequestContext, request: Any) -> Any:
    result = await _synced(ctx, request)
    return new_response(
        ApiKey.SyncGroup,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=await ctx.replicated_write(request.group_id, error=result.error),
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
