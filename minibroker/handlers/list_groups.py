"""ListGroups (key 16), versions 0-5.

Behaviour: every group this coordinator knows, except dead ones, with its protocol type
("consumer", or "" for groups that only commit offsets). All groups are classic groups.

Version notes: v4+ carry the group state and filter by `states_filter` (case-insensitive,
empty = all); v5+ carry the group type ("classic") and filter by `types_filter` likewise.
"""

from __future__ import annotations

from typing import Any

from minibroker.groups.group import Group
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Group = struct_type(ApiKey.ListGroups, "response", "ListedGroup")
CLASSIC_GROUP_TYPE = "classic"


def _passes(value: str, wanted: list[str] | None) -> bool:
    return not wanted or value.lower() in {item.lower() for item in wanted}


def _listed(group: Group) -> Any:
    return _Group(
        group_id=group.group_id,
        protocol_type=group.protocol_type or "",
        group_state=group.state.value,
        group_type=CLASSIC_GROUP_TYPE,
    )


@handles(ApiKey.ListGroups, 0, 5)
async def handle_list_groups(ctx: RequestContext, request: Any) -> Any:
    groups = [
        _listed(group)
        for group in ctx.broker.groups.listed_groups()
        if _passes(group.state.value, request.states_filter)
        and _passes(CLASSIC_GROUP_TYPE, request.types_filter)
    ]
    return new_response(
        ApiKey.ListGroups,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        groups=groups,
    )
