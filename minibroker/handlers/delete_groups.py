"""DeleteGroups (key 42), versions 0-2.

Behaviour: deletes empty groups with their committed offsets (tombstones in
`__consumer_offsets`): classic, consumer, share and streams groups. Groups with members get
NON_EMPTY_GROUP, unknown ones GROUP_ID_NOT_FOUND, an empty id INVALID_GROUP_ID. A deleted
share group's share-partition state goes with it (Kafka's DeleteShareGroupState). In a
cluster each deleted group is answered once the ISR of its `__consumer_offsets` partition has
its tombstones (COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR for it if that fails).

Authorization, as Kafka's `handleDeleteGroupsRequest`: DELETE on each group (the request's
ids taken once each); the groups without it answer GROUP_AUTHORIZATION_FAILED after the others
and are not deleted.

Version notes: v2 is flexible; the versions do not differ otherwise.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.DeleteGroups, "response", "DeletableGroupResult")


@handles(ApiKey.DeleteGroups, 0, 2)
async def handle_delete_groups(ctx: RequestContext, request: Any) -> Any:
    names = list(dict.fromkeys(request.groups_names))
    allowed = ctx.authorized_names(AclOperation.DELETE, ResourceType.GROUP, names)
    writes = ctx.internal_writes()
    deleted = ctx.broker.groups.delete_groups([name for name in names if name in allowed])
    results = [
        (group_id, await ctx.replicated_write(group_id, error=error, since=writes))
        for group_id, error in deleted
    ]
    for group_id, error in deleted:
        if error == ErrorCode.NO_ERROR:
            ctx.broker.share_deliveries.forget_group(group_id)
    return new_response(
        ApiKey.DeleteGroups,
        ctx.api_version,
        throttle_time_ms=0,
        results=[_Result(group_id=group_id, error_code=error) for group_id, error in results]
        + [
            _Result(group_id=name, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
            for name in names
            if name not in allowed
        ],
    )
