"""DescribeConfigs (key 32), versions 0-4 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: topic (2) and broker (4) resources, as Kafka's `ConfigHelper` describes them
(see `cluster/describe_configs.py`): every topic config with this topic's value, its source
(TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG
or DEFAULT_CONFIG) and synonyms; every broker setting with this node's effective value and
source (dynamic ones first), read-only unless Kafka lets it change dynamically, sensitive
ones without a value. The configuration keys filter keeps only the named configs; null or
empty means all. A broker resource must be named by this node's id, or "" for the
cluster-wide dynamic defaults (only those set are listed). A CLIENT_METRICS resource (16)
lists a telemetry subscription's `interval.ms`, `match` and `metrics` (CLIENT_METRICS_CONFIG
where set, else DEFAULT_CONFIG; an unknown subscription shows the defaults, as in Kafka; an
empty name is INVALID_REQUEST). A BROKER_LOGGER resource (8), named by this node's id, lists
this process's loggers with their levels (DYNAMIC_BROKER_LOGGER_CONFIG). A GROUP resource
(32) lists every group config (`groups/group_configs.py`) with the group's override
(GROUP_CONFIG) or else the broker's `group.*` synonym (its source) or Kafka's default; the
group needs not exist (an unknown one shows the defaults, as in Kafka); an empty name is
INVALID_REQUEST ("Group name must not be empty"). Errors per
resource: an illegal topic name INVALID_TOPIC_EXCEPTION, an unknown topic
UNKNOWN_TOPIC_OR_PARTITION, another broker id or a non-integer name INVALID_REQUEST, other
resource types INVALID_REQUEST.

Authorization, as Kafka's ConfigHelper: DESCRIBE_CONFIGS on the cluster for broker,
broker-logger and client-metrics resources, on the topic or the group for the others; a
resource refused gets CLUSTER_/TOPIC_/GROUP_AUTHORIZATION_FAILED with Kafka's message and no
configs, listed after the resources described.

Version notes: v0 answers `IsDefault` instead of a config source, and Kafka 3.9 (2.8 too) never
set it: it is always false. Synonyms are only listed when `include_synonyms` (v1+) is set;
config type and documentation are v3+, documentation only when asked for.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.alter_configs import (
    GROUP_NAME_EMPTY_MESSAGE,
    ConfigChangeError,
    ResourceType,
    is_java_int,
)
from minibroker.cluster.describe_configs import (
    ConfigEntry,
    broker_config_entries,
    client_metrics_entries,
    cluster_default_entries,
    group_config_entries,
    logger_entries,
    topic_config_entries,
)
from minibroker.cluster.state import TopicError, check_topic_name
from minibroker.handlers.alter_configs import DENIED_MESSAGES, config_access_error
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.DescribeConfigs, "response", "DescribeConfigsResult")
_Config = struct_type(
    ApiKey.DescribeConfigs, "response", "DescribeConfigsResult", "DescribeConfigsResourceResult"
)
_Synonym = struct_type(
    ApiKey.DescribeConfigs,
    "response",
    "DescribeConfigsResult",
    "DescribeConfigsResourceResult",
    "DescribeConfigsSynonym",
)


def _config(entry: ConfigEntry, request: Any) -> Any:
    synonyms = entry.synonyms if request.include_synonyms else ()
    return _Config(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=entry.source,
        is_sensitive=entry.sensitive,
        synonyms=[_Synonym(name=s.name, value=s.value, source=s.source) for s in synonyms],
        config_type=entry.config_type,
        documentation=entry.documentation if request.include_documentation else None,
    )


def _broker_entries(ctx: RequestContext, name: str) -> list[ConfigEntry]:
    if not name:
        return cluster_default_entries(ctx.broker.config)
    if not is_java_int(name):
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        )
    node_id = ctx.broker.node_id
    if int(name) != node_id:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id} or empty string, but received {name}",
        )
    return broker_config_entries(ctx.broker.config)


def _logger_entries(ctx: RequestContext, name: str) -> list[ConfigEntry]:
    if not name:
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if not is_java_int(name):
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        )
    node_id = ctx.broker.node_id
    if int(name) != node_id:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id} but received {name}",
        )
    return logger_entries()


def _client_metrics_entries(ctx: RequestContext, name: str) -> list[ConfigEntry]:
    if not name:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty"
        )
    return client_metrics_entries(ctx.broker.telemetry.configs.get(name, {}))


def _group_entries(ctx: RequestContext, name: str) -> list[ConfigEntry]:
    if not name:
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, GROUP_NAME_EMPTY_MESSAGE)
    return group_config_entries(ctx.broker.config, ctx.broker.group_configs.overrides(name))


def _topic_entries(ctx: RequestContext, name: str) -> list[ConfigEntry] | None:
    try:
        check_topic_name(name)
    except TopicError as exc:
        raise ConfigChangeError(exc.error_code, exc.message) from exc
    topic = ctx.broker.cluster.topics.get(name)
    if topic is None:
        return None
    return topic_config_entries(ctx.broker.config, topic.configs)


def _result(ctx: RequestContext, request: Any, resource: Any) -> Any:
    def answer(error: ErrorCode, message: str | None, configs: list[Any]) -> Any:
        return _Result(
            error_code=error,
            error_message=message,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            configs=configs,
        )

    try:
        if resource.resource_type == ResourceType.TOPIC:
            entries = _topic_entries(ctx, resource.resource_name)
            if entries is None:
                return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "", [])
        elif resource.resource_type == ResourceType.BROKER:
            entries = _broker_entries(ctx, resource.resource_name)
        elif resource.resource_type == ResourceType.BROKER_LOGGER:
            entries = _logger_entries(ctx, resource.resource_name)
        elif resource.resource_type == ResourceType.CLIENT_METRICS:
            entries = _client_metrics_entries(ctx, resource.resource_name)
        elif resource.resource_type == ResourceType.GROUP:
            entries = _group_entries(ctx, resource.resource_name)
        else:
            raise ConfigChangeError(
                ErrorCode.INVALID_REQUEST,
                f"Unsupported resource type: {resource.resource_type}",
            )
    except ConfigChangeError as exc:
        return answer(exc.error_code, exc.message, [])
    wanted = resource.configuration_keys
    return answer(
        ErrorCode.NO_ERROR,
        "",
        [_config(entry, request) for entry in entries if not wanted or entry.name in wanted],
    )


def _denied(resource: Any, error: ErrorCode) -> Any:
    return _Result(
        error_code=error,
        error_message=DENIED_MESSAGES[error],
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=[],
    )


@handles(ApiKey.DescribeConfigs, 0, 4)
async def handle_describe_configs(ctx: RequestContext, request: Any) -> Any:
    described, denied = [], []
    for resource in request.resources:
        error = config_access_error(
            ctx, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name
        )
        if error is None:
            described.append(_result(ctx, request, resource))
        else:
            denied.append(_denied(resource, error))
    return new_response(
        ApiKey.DescribeConfigs, ctx.api_version, throttle_time_ms=0, results=described + denied
    )
