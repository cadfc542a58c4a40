"""ListGroups (key 16), versions 0-5.

Behaviour: every group this coordinator knows, except dead ones, with its protocol type
("consumer", or "" for groups that only commit offsets). Classic groups have type "classic"
and Kafka's classic states; KIP-848 consumer groups type "consumer", protocol type
"consumer" and their states (Empty, Assigning, Reconciling, Stable); share groups (KIP-932)
type "share", protocol type "share" and their states (Empty, Stable); streams groups
(KIP-1071) type "streams", protocol type "streams" and their states (Empty, NotReady,
Assigning, Reconciling, Stable).

Authorization, as Kafka's `handleListGroupsRequest`: DESCRIBE on the cluster lists every
group; otherwise only the groups the principal may DESCRIBE are listed.

Version notes: v4+ carry the group state and filter by `states_filter` (case-insensitive,
empty = all); v5+ carry the group type ("classic", "consumer", "share", "streams") and filter by
`types_filter` likewise.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.group import CONSUMER_PROTOCOL_TYPE, Group
from minibroker.groups.share.model import SHARE_PROTOCOL_TYPE
from minibroker.groups.streams.model import STREAMS_PROTOCOL_TYPE
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Group = struct_type(ApiKey.ListGroups, "response", "ListedGroup")
CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"
SHARE_GROUP_TYPE = "share"
STREAMS_GROUP_TYPE = "streams"


def _passes(value: str, wanted: list[str] | None) -> bool:
    return not wanted or value.lower() in {item.lower() for item in wanted}


def _type_and_state(group: Group) -> tuple[str, str]:
    if group.consumer is not None:
        return CONSUMER_GROUP_TYPE, group.consumer.state.value
    if group.share is not None:
        return SHARE_GROUP_TYPE, group.share.state.value
    if group.streams is not None:
        return STREAMS_GROUP_TYPE, group.streams.state.value
    return CLASSIC_GROUP_TYPE, group.state.value


def _protocol_type(group: Group) -> str:
    if group.consumer is not None:
        return CONSUMER_PROTOCOL_TYPE
    if group.share is not None:
        return SHARE_PROTOCOL_TYPE
    if group.streams is not None:
        return STREAMS_PROTOCOL_TYPE
    return group.protocol_type or ""


def _listed(group: Group) -> Any:
    group_type, state = _type_and_state(group)
    return _Group(
        group_id=group.group_id,
        protocol_type=_protocol_type(group),
        group_state=state,
        group_type=group_type,
    )


def _visible(ctx: RequestContext, groups: list[Group]) -> list[Group]:
    if ctx.authorize_cluster(AclOperation.DESCRIBE):
        return groups
    allowed = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.GROUP, [group.group_id for group in groups]
    )
    return [group for group in groups if group.group_id in allowed]


@handles(ApiKey.ListGroups, 0, 5)
async def handle_list_groups(ctx: RequestContext, request: Any) -> Any:
    groups = [
        _listed(group)
        for group in _visible(ctx, ctx.broker.groups.listed_groups())
        if _passes(_type_and_state(group)[1], request.states_filter)
        and _passes(_type_and_state(group)[0], request.types_filter)
    ]
    return new_response(
        ApiKey.ListGroups,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        groups=groups,
    )
