"""ListConfigResources (key 74), versions 0-1.

Behaviour (Kafka's `KafkaApis.handleListConfigResources`, KIP-1142): the config resources of
the requested types, in Kafka's order of types — GROUP, CLIENT_METRICS, BROKER_LOGGER,
BROKER, TOPIC — each type's names sorted: groups are this coordinator's groups and the
groups with GROUP config overrides (a group id may have configs and no group), client
metrics the telemetry subscriptions (KIP-714: each is a CLIENT_METRICS resource), brokers and
broker loggers the live nodes' ids, topics every topic (internal ones included). It needs
DESCRIBE_CONFIGS on the cluster, else the whole answer is CLUSTER_AUTHORIZATION_FAILED with no
resources.

Version notes: v0 (KIP-714's ListClientMetricsResources) lists client-metrics resources
only. v1 adds `ResourceTypes`: empty means every type Kafka supports at v1 — TOPIC (2),
BROKER (4), BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32) — and any other type makes
the whole answer UNSUPPORTED_VERSION with no resources, as Kafka. Each resource carries its
type from v1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.alter_configs import ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Resource = struct_type(ApiKey.ListConfigResources, "response", "ConfigResource")


def _groups(ctx: RequestContext) -> list[str]:
    listed = {group.group_id for group in ctx.broker.groups.listed_groups()}
    return sorted(listed | set(ctx.broker.group_configs.group_ids()))


def _client_metrics(ctx: RequestContext) -> list[str]:
    return sorted(ctx.broker.telemetry.subscriptions)


def _brokers(ctx: RequestContext) -> list[str]:
    return [str(node.node_id) for node in ctx.broker.nodes.live_brokers()]


def _topics(ctx: RequestContext) -> list[str]:
    return sorted(ctx.broker.cluster.topics)


# Kafka's order of types in the answer, and the names of each.
_LISTINGS: list[tuple[ResourceType, Callable[[RequestContext], list[str]]]] = [
    (ResourceType.GROUP, _groups),
    (ResourceType.CLIENT_METRICS, _client_metrics),
    (ResourceType.BROKER_LOGGER, _brokers),
    (ResourceType.BROKER, _brokers),
    (ResourceType.TOPIC, _topics),
]
_SUPPORTED_AT_V1 = frozenset(resource_type for resource_type, _ in _LISTINGS)


def _requested_types(ctx: RequestContext, request: Any) -> set[int] | None:
    """The types to list, or None when one of them is not supported."""
    if ctx.api_version == 0:
        return {ResourceType.CLIENT_METRICS}
    requested = set(request.resource_types or [])
    if not requested:
        return set(_SUPPORTED_AT_V1)
    return requested if requested <= _SUPPORTED_AT_V1 else None


@handles(ApiKey.ListConfigResources, 0, 1)
async def handle_list_config_resources(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return new_response(
            ApiKey.ListConfigResources,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            config_resources=[],
        )
    types = _requested_types(ctx, request)
    resources = [
        _Resource(resource_name=name, resource_type=resource_type)
        for resource_type, names in _LISTINGS
        if types is not None and resource_type in types
        for name in names(ctx)
    ]
    return new_response(
        ApiKey.ListConfigResources,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR if types is not None else ErrorCode.UNSUPPORTED_VERSION,
        config_resources=resources,
    )
