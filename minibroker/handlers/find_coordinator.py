"""FindCoordinator (key 10), versions 0-6.

Behaviour: a single broker coordinates every group and every transactional id; in an
in-process cluster, the node `Nodes.coordinator_for` names (the cluster's coordinator node,
or the one set for that key). A group lookup
creates `__consumer_offsets` and a transaction lookup `__transaction_state` if it does not
exist yet, as Kafka does. Key types other than GROUP (0) and TRANSACTION (1) get
INVALID_REQUEST.

Version notes: v0 has no key type (always a group); v4+ (KIP-699) batches the keys in
`coordinator_keys` and answers one `coordinators` entry per key instead of the top-level
node fields.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Coordinator = struct_type(ApiKey.FindCoordinator, "response", "Coordinator")
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
BATCHED_FROM_VERSION = 4


def _lookup(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) for one key."""
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if key_type == GROUP_KEY_TYPE:
        ctx.broker.groups.ensure_offsets_topic()
    else:
        ctx.broker.transactions.ensure_log()
    coordinator = ctx.broker.nodes.broker(ctx.broker.nodes.coordinator_for(key_type, key))
    host, port = coordinator.advertised_endpoint(ctx.listener)
    return ErrorCode.NO_ERROR, coordinator.node_id, host, port


def _message(error: ErrorCode) -> str | None:
    return None if error == ErrorCode.NO_ERROR else error.name


@handles(ApiKey.FindCoordinator, 0, 6)
async def handle_find_coordinator(ctx: RequestContext, request: Any) -> Any:
    key_type = request.key_type  # v0 decodes with the default, GROUP
    if ctx.api_version >= BATCHED_FROM_VERSION:
        coordinators = []
        for key in request.coordinator_keys:
            error, node_id, host, port = _lookup(ctx, key_type, key)
            coordinators.append(
                _Coordinator(
                    key=key,
                    node_id=node_id,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message=_message(error),
                )
            )
        return new_response(
            ApiKey.FindCoordinator, ctx.api_version, throttle_time_ms=0, coordinators=coordinators
        )
    error, node_id, host, port = _lookup(ctx, key_type, request.key)
    return new_response(
        ApiKey.FindCoordinator,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=_message(error),
        node_id=node_id,
        host=host,
        port=port,
    )
