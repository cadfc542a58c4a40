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

Authorization (Kafka's ControllerApis, after the broker's own checks — duplicates, keys,
null values, a broker resource's name and configs): ALTER_CONFIGS on the cluster for broker
and client-metrics resources, on the topic or the group for the others, else
CLUSTER_/TOPIC_/GROUP_AUTHORIZATION_FAILED with Kafka's message for that resource only.

Version notes: v1 only changes throttling; v2 is the flexible encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from minibroker.auth.acls import CLUSTER_NAME, AclOperation
from minibroker.auth.acls import ResourceType as AclResourceType
from minibroker.cluster.alter_configs import (
    ConfigChangeError,
    ConfigOp,
    ConfigTargets,
    OpType,
    ResourceType,
    alter_broker,
    alter_results,
    check_ops,
    check_resource_type,
    duplicate_resources,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

# Where Kafka checks a config resource's ACLs, and the error when they refuse it.
_CLUSTER_CHECK = (AclResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
_ACL_CHECKS: dict[int, tuple[AclResourceType, ErrorCode]] = {
    ResourceType.BROKER: _CLUSTER_CHECK,
    ResourceType.BROKER_LOGGER: _CLUSTER_CHECK,
    ResourceType.CLIENT_METRICS: _CLUSTER_CHECK,
    ResourceType.TOPIC: (AclResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ResourceType.GROUP: (AclResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
}
# Kafka's `ApiError(error)` carries the code's default message.
DENIED_MESSAGES = {
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
}

ConfigChange = tuple[int, str, list[ConfigOp]]


def config_access_error(
    ctx: RequestContext, operation: AclOperation, resource_type: int, name: str
) -> ErrorCode | None:
    """The authorization error for `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
    resource, as Kafka checks it: on the cluster for broker, broker-logger and client-metrics
    resources, else on the topic or group; None when allowed or of a type Kafka refuses
    before any check."""
    check = _ACL_CHECKS.get(resource_type)
    if check is None:
        return None
    acl_type, error = check
    acl_name = CLUSTER_NAME if acl_type == AclResourceType.CLUSTER else name
    return None if ctx.authorize(operation, acl_type, acl_name) else error


def _refusal(
    ctx: RequestContext, targets: ConfigTargets, change: ConfigChange, incremental: bool
) -> tuple[ErrorCode, str | None] | None:
    """The answer for a resource the principal may not alter (None when it may): the broker's
    own checks come first, as a Kafka broker runs them before forwarding to the controller,
    which checks the ACLs (a broker logger's ACLs are checked by the broker, before its
    name)."""
    kind, name, ops = change
    error = config_access_error(ctx, AclOperation.ALTER_CONFIGS, kind, name)
    if error is None:
        return None
    try:
        check_ops(ops)
        check_resource_type(kind, incremental)
        if kind == ResourceType.BROKER:
            alter_broker(
                targets.dynamic,
                targets.node_id,
                name,
                ops,
                incremental=incremental,
                validate_only=True,
                broker_checks_only=True,
            )
    except ConfigChangeError as exc:
        return exc.error_code, exc.message
    return error, DENIED_MESSAGES[error]


def _results(
    ctx: RequestContext,
    targets: ConfigTargets,
    changes: Sequence[ConfigChange],
    *,
    incremental: bool,
    validate_only: bool,
) -> list[tuple[ErrorCode, str | None]]:
    """Each resource's answer in request order; only the authorized ones are applied (a
    resource named twice is refused whatever the ACLs)."""
    duplicates = duplicate_resources((kind, name) for kind, name, _ in changes)
    refusals = [
        None if change[:2] in duplicates else _refusal(ctx, targets, change, incremental)
        for change in changes
    ]
    allowed = [change for change, refusal in zip(changes, refusals, strict=True) if not refusal]
    applied = iter(
        alter_results(targets, allowed, incremental=incremental, validate_only=validate_only)
    )
    return [refusal or next(applied) for refusal in refusals]


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
    targets = broker.config_targets()
    results = _results(
        ctx, targets, resources, incremental=incremental, validate_only=request.validate_only
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
