"""Heartbeat (key 12), versions 0-4.

Behaviour: keeps a member's session alive. NO_ERROR in Stable and CompletingRebalance,
REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member must rejoin), and
UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID or COORDINATOR_NOT_AVAILABLE as
Kafka answers them. A classic member of a KIP-848 consumer group gets REBALANCE_IN_PROGRESS
when it must rejoin (a newer group epoch, partitions to revoke, or freed partitions it
waits for), ILLEGAL_GENERATION for another generation than its member epoch.

Authorization: READ on the group, checked first (GROUP_AUTHORIZATION_FAILED).

Version notes: v3+ carries `group_instance_id` (static membership); v4 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


@handles(ApiKey.Heartbeat, 0, 4)
async def handle_heartbeat(ctx: RequestContext, request: Any) -> Any:
    if ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ctx.broker.groups.heartbeat(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
    else:
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    return new_response(ApiKey.Heartbeat, ctx.api_version, throttle_time_ms=0, error_code=error)
