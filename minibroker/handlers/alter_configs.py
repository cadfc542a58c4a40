"""AlterConfigs (key 33), versions 0-2.

Behaviour: the legacy API: the configs given become the topic's whole override set (any
override not listed is removed). Checked as IncrementalAlterConfigs is (see
`cluster/alter_configs.py`): duplicate resources or keys and null values are
INVALID_REQUEST, unknown or invalid topic configs INVALID_CONFIG, unknown topics
UNKNOWN_TOPIC_OR_PARTITION; `validate_only` changes nothing. A broker resource (this
node's id, or "" for the cluster-wide default) gets the configs given as its whole set of
dynamic broker configs, checked as Kafka does (`cluster/dynamic_configs.py`: a static
setting is INVALID_REQUEST "Cannot update these configs dynamically: [name]"); a change is
stored in the data directory and applied to every node at once. A CLIENT_METRICS resource
(16) is a client telemetry subscription (`metrics`, `interval.ms`, `match`) whose configs
become the ones given (none: removed), checked as Kafka's `ClientMetricsConfigs`. A GROUP
resource (32) gets the configs given as its whole set of group config overrides, checked as
Kafka's `GroupConfig` (`groups/group_configs.py`: unknown names, bad values, values outside
the broker's `group.*` bounds INVALID_CONFIG), kept in the data directory.

Version notes: v1 only changes throttling; v2 is the flexible encoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minibroker.cluster.alter_configs import (
    ConfigOp,
    ConfigTargets,
    OpType,
    ResourceType,
    alter_results,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.server.context import RequestContext


def answer_config_changes(
    ctx: RequestContext,
    request: Any,
    api_key: ApiKey,
    op_of: Callable[[Any], ConfigOp],
    incremental: bool,
) -> Any:
    """Apply (or, with validate_only, check) each resource's changes; one answer each."""
    resources = [
        (resource.resource_type, resource.resource_name, [op_of(c) for c in resource.configs])
        for resource in request.resources
    ]
    broker = ctx.broker
    targets = ConfigTargets(
        broker.cluster,
        broker.dynamic_configs,
        broker.telemetry,
        broker.node_id,
        broker.group_configs,
        broker.config,
    )
    results = alter_results(
        targets,
        resources,
        incremental=incremental,
        validate_only=request.validate_only,
    )
    if not request.validate_only and any(kind == ResourceType.BROKER for kind, _, _ in resources):
        nodes = list(broker.nodes.brokers.values())
        owner = next(node for node in nodes if node.owns_state)
        broker.dynamic_configs.apply(nodes, owner, broker.cluster)
    response_type = struct_type(api_key, "response", "AlterConfigsResourceResponse")
    return new_response(
        api_key,
        ctx.api_version,
        throttle_time_ms=0,
        responses=[
            response_type(
                error_code=error,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
            for resource, (error, message) in zip(request.resources, results, strict=True)
        ],
    )


@handles(ApiKey.AlterConfigs, 0, 2)
async def handle_alter_configs(ctx: RequestContext, request: Any) -> Any:
    return answer_config_changes(
        ctx,
        request,
        ApiKey.AlterConfigs,
        lambda config: ConfigOp(config.name, OpType.SET, config.value),
        incremental=False,
    )
