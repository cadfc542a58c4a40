"""AlterClientQuotas (key 49), versions 0-1.

Behaviour: as Kafka's controller (ClientQuotaControlManager.alterClientQuotas), one result per
distinct entity. Authorization first: ALTER_CONFIGS on the cluster, else every entry gets
CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization failed."). Each entry's entity (`user`,
`client-id`, both, or `ip`; a null name is the default) and ops (set a value, or remove a
key) are checked in Kafka's order, INVALID_REQUEST with its message: an empty entity, an
unknown entity type, an empty name, `ip` with `user`/`client-id`, an ip that is neither an
address nor a resolvable host, a key the entity does not take (`producer_byte_rate`,
`consumer_byte_rate`, `request_percentage`, `controller_mutation_rate`; `ip`:
`connection_creation_rate`), a value not above 0, too large for its type or fractional for
an integral one. Removals are not checked. A key given twice, or an entity given again,
answers "Ignoring duplicate entity ..." for the entity (the earlier entry's changes still
apply, as in Kafka). `validate_only` checks and changes nothing. Changes are saved and
enforced at once (`minibroker/auth/quotas.py`).

Version notes: v1 is v0 as a flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.quotas import Alteration, Entity, entity_of
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Entry = struct_type(ApiKey.AlterClientQuotas, "response", "EntryData")
_Entity = struct_type(ApiKey.AlterClientQuotas, "response", "EntryData", "EntityData")
CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."


def _alteration(entry: Any) -> Alteration:
    entity = entity_of((item.entity_type, item.entity_name) for item in entry.entity)
    ops = [(op.key, None if op.remove else float(op.value)) for op in entry.ops]
    return entity, ops


def _entity_data(entity: Entity) -> list[Any]:
    return [_Entity(entity_type=kind, entity_name=name) for kind, name in entity]


def _response(ctx: RequestContext, entries: list[Any]) -> Any:
    return new_response(
        ApiKey.AlterClientQuotas, ctx.api_version, throttle_time_ms=0, entries=entries
    )


@handles(ApiKey.AlterClientQuotas, 0, 1)
async def handle_alter_client_quotas(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER_CONFIGS):
        return _response(
            ctx,
            [
                _Entry(
                    error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    error_message=CLUSTER_AUTHORIZATION_FAILED_MESSAGE,
                    entity=[
                        _Entity(entity_type=item.entity_type, entity_name=item.entity_name)
                        for item in entry.entity
                    ],
                )
                for entry in request.entries
            ],
        )
    alterations = [_alteration(entry) for entry in request.entries]
    results = ctx.broker.client_quotas.alter(alterations, request.validate_only)
    return _response(
        ctx,
        [
            _Entry(error_code=error, error_message=message, entity=_entity_data(entity))
            for entity, (error, message) in results
        ],
    )
