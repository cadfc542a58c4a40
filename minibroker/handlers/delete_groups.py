"""DeleteGroups (key 42), versions 0-2.

Behaviour: deletes empty groups with their committed offsets (tombstones in
`__consumer_offsets`): classic, consumer and share groups. Groups with members get
NON_EMPTY_GROUP, unknown ones GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID. A deleted
share group's share-partition state goes with it (Kafka's DeleteShareGroupState).

Version notes: v2 is flexible; the versions do not differ otherwise.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.DeleteGroups, "response", "DeletableGroupResult")


@handles(ApiKey.DeleteGroups, 0, 2)
async def handle_delete_groups(ctx: RequestContext, request: Any) -> Any:
    results = ctx.broker.groups.delete_groups(request.groups_names)
    for group_id, error in results:
        if error == ErrorCode.NO_ERROR:
            ctx.broker.share_deliveries.forget_group(group_id)
    return new_response(
        ApiKey.DeleteGroups,
        ctx.api_version,
        throttle_time_ms=0,
        results=[_Result(group_id=group_id, error_code=error) for group_id, error in results],
    )
