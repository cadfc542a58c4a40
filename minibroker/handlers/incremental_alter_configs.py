"""IncrementalAlterConfigs (key 44), versions 0-1.

Behaviour: SET, DELETE, APPEND and SUBTRACT on a topic's overrides, checked as Kafka's
broker and controller check them (see `cluster/alter_configs.py`): a resource named twice
is INVALID_REQUEST for both, duplicate keys or a null value for anything but DELETE
INVALID_REQUEST, APPEND/SUBTRACT on a non-LIST config or an unknown or invalid topic config
INVALID_CONFIG, an unknown topic UNKNOWN_TOPIC_OR_PARTITION. `validate_only` checks
without changing anything. Broker settings are all static here: changing one is
INVALID_REQUEST ("Cannot update these configs dynamically"), deleting one succeeds.

Version notes: v1 is the flexible encoding of v0.
"""

from __future__ import annotations

from typing import Any

from minibroker.cluster.alter_configs import ConfigOp, alter_results
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.server.context import RequestContext

_Response = struct_type(ApiKey.IncrementalAlterConfigs, "response", "AlterConfigsResourceResponse")


@handles(ApiKey.IncrementalAlterConfigs, 0, 1)
async def handle_incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    resources = [
        (
            resource.resource_type,
            resource.resource_name,
            [ConfigOp(c.name, c.config_operation, c.value) for c in resource.configs],
        )
        for resource in request.resources
    ]
    results = alter_results(
        ctx.broker.cluster,
        ctx.broker.node_id,
        resources,
        incremental=True,
        validate_only=request.validate_only,
    )
    return new_response(
        ApiKey.IncrementalAlterConfigs,
        ctx.api_version,
        throttle_time_ms=0,
        responses=[
            _Response(
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
            for resource, (error, message) in zip(request.resources, results, strict=True)
        ],
    )
