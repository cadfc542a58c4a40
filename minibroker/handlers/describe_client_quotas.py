"""DescribeClientQuotas (key 48), versions 0-1.

Behaviour: as Kafka's broker (ClientQuotasImage.describe). Authorization first: DESCRIBE_CONFIGS
on the cluster, else CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization failed.") with null
entries. The filter's components each name an entity type (`user`, `client-id`, `ip`) and a
match: exact (match type 0, a name), default (1, the default entity) or any (2, the entity has
the type); without `strict` an entity may have other types too, with it exactly those. Every
matching entity is answered with its quota values (`minibroker/auth/quotas.py`). A filter
Kafka refuses answers an error with its message and null entries: an empty entity type, a
type given twice, an exact match without a name, a default or any match with one, an unknown
match type, or `ip` combined with `user`/`client-id` INVALID_REQUEST; an unknown entity type
UNSUPPORTED_VERSION.

Version notes: v1 is v0 as a flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.quotas import ComponentFilter, Entity, QuotaError
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Entry = struct_type(ApiKey.DescribeClientQuotas, "response", "EntryData")
_Entity = struct_type(ApiKey.DescribeClientQuotas, "response", "EntryData", "EntityData")
_Value = struct_type(ApiKey.DescribeClientQuotas, "response", "EntryData", "ValueData")
CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."


def _error(ctx: RequestContext, error: ErrorCode, message: str) -> Any:
    return new_response(
        ApiKey.DescribeClientQuotas,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        entries=None,
    )


def _entry(entity: Entity, values: dict[str, float]) -> Any:
    return _Entry(
        entity=[_Entity(entity_type=kind, entity_name=name) for kind, name in entity],
        values=[_Value(key=key, value=value) for key, value in values.items()],
    )


@handles(ApiKey.DescribeClientQuotas, 0, 1)
async def handle_describe_client_quotas(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return _error(
            ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED_MESSAGE
        )
    components = [ComponentFilter(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        found = ctx.broker.client_quotas.describe(components, request.strict)
    except QuotaError as exc:
        return _error(ctx, exc.error, exc.message)
    return new_response(
        ApiKey.DescribeClientQuotas,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        entries=[_entry(entity, values) for entity, values in found],
    )
