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
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.server.context import RequestContext


@handles(ApiKey.SyncGroup, 0, 5)
async def handle_sync_group(ctx: RequestContext, request: Any) -> Any:
    result = await ctx.broker.groups.sync_group(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=request.group_instance_id,
        generation=request.generation_id,
        protocol_type=request.protocol_type,
        protocol_name=request.protocol_name,
        assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return new_response(
        ApiKey.SyncGroup,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )
