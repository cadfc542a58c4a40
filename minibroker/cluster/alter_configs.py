"""Config changes as Kafka's ConfigAdminManager and ConfigurationControlManager judge them.

Shared by AlterConfigs (whole override set) and IncrementalAlterConfigs (SET, DELETE,
APPEND, SUBTRACT). Checks run in Kafka's order: duplicate resources, duplicate keys, null
values, the resource type and (for brokers) name, then the resulting topic configs
(INVALID_CONFIG), and the topic's existence last.

A broker resource (this node's id, or "" for the cluster-wide defaults) holds dynamic
broker configs (`cluster/dynamic_configs.py`): the ops are applied to its stored set
(APPEND/SUBTRACT on LIST settings only, starting from the default), and the resulting set is
checked as Kafka's broker checks it ("Cannot update these configs dynamically: [...]" and
the others, INVALID_REQUEST) before it replaces the stored one. With eligible leader
replicas enabled, a min.insync.replicas change clears the ELR (of the topic's partitions, or,
at the broker level, of every partition), as Kafka's ClearElrRecord does.

A CLIENT_METRICS resource is a client telemetry subscription (`metrics`, `interval.ms`,
`match`; `telemetry/subscriptions.py`), checked as Kafka's `ClientMetricsConfigs`; deleting
every config removes it. A BROKER_LOGGER resource (IncrementalAlterConfigs only) changes
this process's log levels (`cluster/broker_loggers.py`). A GROUP resource holds a group's
config overrides (`groups/group_configs.py`): the ops are applied to its stored overrides
(APPEND/SUBTRACT refused: no group config is a LIST) and the result is checked as Kafka's
`GroupConfig.validate` (INVALID_CONFIG); an empty group name is INVALID_REQUEST.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from minibroker.cluster.broker_loggers import LoggerError, alter_loggers
from minibroker.cluster.dynamic_configs import (
    ELR_BROKER_MIN_ISR_MESSAGE,
    ELR_CLUSTER_MIN_ISR_MESSAGE,
    MIN_ISR,
    DynamicConfigError,
    DynamicConfigs,
    validate,
)
from minibroker.cluster.state import Cluster, TopicError, check_topic_name
from minibroker.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigType,
    validate_topic_configs,
)
from minibroker.groups.group_configs import GroupConfigError, GroupConfigs, validate_group_configs
from minibroker.protocol.errors import ErrorCode
from minibroker.telemetry.manager import ClientTelemetry
from minibroker.telemetry.subscriptions import LIST_CONFIGS as CLIENT_METRICS_LISTS
from minibroker.telemetry.subscriptions import SubscriptionError, parse_subscription

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def is_java_int(text: str) -> bool:
    """What Java's `Integer.parseInt` accepts (within range is not checked)."""
    return _JAVA_INT.fullmatch(text) is not None


class ResourceType(IntEnum):
    """Kafka's `ConfigResource.Type` ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class OpType(IntEnum):
    """Kafka's `AlterConfigOp.OpType` ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConfigChangeError(Exception):
    def __init__(self, error_code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


@dataclass(frozen=True)
class ConfigOp:
    name: str
    op: int
    value: str | None


def duplicate_resources(resources: Iterable[tuple[int, str]]) -> set[tuple[int, str]]:
    counts = Counter(resources)
    return {resource for resource, count in counts.items() if count > 1}


DUPLICATE_RESOURCE_MESSAGE = "Each resource must appear at most once."


def check_ops(ops: Sequence[ConfigOp]) -> None:
    """The broker's preprocessing: duplicate keys and null values are INVALID_REQUEST."""
    names = [op.name for op in ops]
    if len(set(names)) != len(names):
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    null_updates = [op.name for op in ops if op.op != OpType.DELETE and op.value is None]
    if null_updates:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(null_updates)
        )
    for op in ops:
        if op.op not in OpType.__members__.values():
            raise ConfigChangeError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.op}")


def check_resource_type(resource_type: int, incremental: bool = True) -> ResourceType:
    """The types AlterConfigs serves; BROKER_LOGGER only through IncrementalAlterConfigs."""
    served = {
        ResourceType.TOPIC,
        ResourceType.BROKER,
        ResourceType.CLIENT_METRICS,
        ResourceType.GROUP,
    }
    if incremental:
        served.add(ResourceType.BROKER_LOGGER)
    if resource_type in served:
        return ResourceType(resource_type)
    raise ConfigChangeError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


def check_broker_name(name: str, node_id: int) -> None:
    """Blank (the cluster default) or exactly this node's id (Kafka's
    `validateResourceNameIsCurrentNodeId`)."""
    if not name:
        return
    if not is_java_int(name):
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
        )
    if int(name) != node_id:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id}, but received {name}",
        )


def _broker_list_op(current: str | None, op: ConfigOp) -> str:
    """APPEND/SUBTRACT on a LIST broker setting, from its default when it has no dynamic value
    (Kafka's `prepareIncrementalConfigs`); INVALID_CONFIG for other settings."""
    definition = BROKER_CONFIGS.get(op.name)
    if definition is None:
        raise ConfigChangeError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {op.name}")
    if definition.type != ConfigType.LIST:
        verb = "append" if op.op == OpType.APPEND else "subtract"
        raise ConfigChangeError(
            ErrorCode.INVALID_CONFIG,
            f"Config value {verb} is not allowed for config key: {op.name}",
        )
    start = (definition.default or "") if current is None else current
    parts = [part for part in start.split(",") if part]
    for item in (op.value or "").split(","):
        if op.op == OpType.APPEND and item not in parts:
            parts.append(item)
        elif op.op == OpType.SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def apply_broker_incremental(current: Mapping[str, str], ops: Sequence[ConfigOp]) -> dict[str, str]:
    """A broker resource's dynamic configs after `ops`."""
    result = dict(current)
    for op in ops:
        if op.op == OpType.SET:
            assert op.value is not None
            result[op.name] = op.value
        elif op.op == OpType.DELETE:
            result.pop(op.name, None)
        else:
            result[op.name] = _broker_list_op(result.get(op.name), op)
    return result


def alter_broker(
    dynamic: DynamicConfigs,
    node_id: int,
    name: str,
    ops: Sequence[ConfigOp],
    *,
    incremental: bool,
    validate_only: bool,
    broker_checks_only: bool = False,
) -> None:
    """Check (and unless validate_only store) a broker resource's new dynamic configs;
    `broker_checks_only`: only the checks Kafka's broker makes before forwarding the change
    to the controller (which checks the ACLs, then its own rules)."""
    check_broker_name(name, node_id)
    target = int(name) if name else None
    if incremental:
        configs = apply_broker_incremental(dynamic.configs(target), ops)
    else:
        configs = {op.name: op.value for op in ops if op.value is not None}
    try:
        validate(configs, per_broker=target is not None)
    except DynamicConfigError as exc:
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, str(exc)) from exc
    if broker_checks_only:
        return
    if dynamic.elr_enabled():
        _check_elr_min_isr(dynamic.configs(target), configs, ops, per_broker=target is not None)
    if not validate_only:
        dynamic.replace(target, configs)


def _check_elr_min_isr(
    current: Mapping[str, str],
    configs: Mapping[str, str],
    ops: Sequence[ConfigOp],
    *,
    per_broker: bool,
) -> None:
    """Kafka's controller while ELR is enabled: no broker-level min.insync.replicas, and the
    cluster-level one stays (`isDisallowedBrokerMinIsrTransition`, `...ClusterMinIsrRemoval`)."""
    touched = any(op.name == MIN_ISR for op in ops) or (MIN_ISR in current) != (MIN_ISR in configs)
    if per_broker and touched:
        raise ConfigChangeError(ErrorCode.INVALID_CONFIG, ELR_BROKER_MIN_ISR_MESSAGE)
    if not per_broker and MIN_ISR in current and MIN_ISR not in configs:
        raise ConfigChangeError(ErrorCode.INVALID_CONFIG, ELR_CLUSTER_MIN_ISR_MESSAGE)


GROUP_NAME_EMPTY_MESSAGE = "Group name must not be empty"


def no_list_default(name: str) -> str | None:
    """No group config is a LIST: APPEND/SUBTRACT are refused."""
    return None


def alter_group(
    group_configs: GroupConfigs,
    broker_config: BrokerConfig,
    name: str,
    ops: Sequence[ConfigOp],
    *,
    incremental: bool,
    validate_only: bool,
) -> None:
    """A GROUP resource: the group `name`'s overrides (none left: it has none)."""
    if not name:
        raise ConfigChangeError(ErrorCode.INVALID_REQUEST, GROUP_NAME_EMPTY_MESSAGE)
    if incremental:
        configs = apply_incremental(group_configs.overrides(name), ops, no_list_default)
    else:
        configs = {op.name: op.value for op in ops if op.value is not None}
    try:
        validate_group_configs(configs, broker_config)
    except GroupConfigError as exc:
        raise ConfigChangeError(ErrorCode.INVALID_CONFIG, str(exc)) from exc
    if not validate_only:
        group_configs.replace(name, configs)


def topic_list_default(name: str) -> str | None:
    """The default of a LIST topic config; None for any other name."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None or definition.type != ConfigType.LIST:
        return None
    return definition.default


def client_metrics_list_default(name: str) -> str | None:
    return "" if name in CLIENT_METRICS_LISTS else None


def apply_incremental(
    current: Mapping[str, str],
    ops: Sequence[ConfigOp],
    list_default: Callable[[str], str | None] = topic_list_default,
) -> dict[str, str]:
    """A topic's (or a subscription's) configs after `ops`, as Kafka's controller applies
    them: APPEND/SUBTRACT only on LIST configs, starting from the default."""
    result = dict(current)
    for op in ops:
        if op.op == OpType.SET:
            assert op.value is not None
            result[op.name] = op.value
        elif op.op == OpType.DELETE:
            result.pop(op.name, None)
        else:
            default = list_default(op.name)
            if default is None:
                verb = "APPEND" if op.op == OpType.APPEND else "SUBTRACT"
                raise ConfigChangeError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {verb} to key {op.name} because its type is not LIST.",
                )
            start = result.get(op.name, default)
            parts = [part for part in start.split(",") if part]
            for item in (op.value or "").split(","):
                if op.op == OpType.APPEND and item not in parts:
                    parts.append(item)
                elif op.op == OpType.SUBTRACT and item in parts:
                    parts.remove(item)
            result[op.name] = ",".join(parts)
    return result


def check_topic_configs(cluster: Cluster, name: str, configs: Mapping[str, str]) -> None:
    """Kafka's controller-side validation: the name, the resulting configs, then existence."""
    if not name:
        raise ConfigChangeError(
            ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."
        )
    try:
        check_topic_name(name)
    except TopicError as exc:
        raise ConfigChangeError(exc.error_code, exc.message) from exc
    try:
        validate_topic_configs(configs)
    except ConfigError as exc:
        raise ConfigChangeError(ErrorCode.INVALID_CONFIG, str(exc)) from exc
    if name not in cluster.topics:
        raise ConfigChangeError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        )


@dataclass(frozen=True)
class ConfigTargets:
    """What config resources change: topics, dynamic broker configs, subscriptions, group
    configs (checked against this node's `broker_config`)."""

    cluster: Cluster
    dynamic: DynamicConfigs
    telemetry: ClientTelemetry
    node_id: int
    group_configs: GroupConfigs
    broker_config: BrokerConfig


def alter_client_metrics(
    telemetry: ClientTelemetry,
    name: str,
    ops: Sequence[ConfigOp],
    *,
    incremental: bool,
    validate_only: bool,
) -> None:
    """A CLIENT_METRICS resource: the subscription `name`'s configs (none left: removed)."""
    if incremental:
        configs = apply_incremental(
            telemetry.configs.get(name, {}), ops, client_metrics_list_default
        )
    else:
        configs = {op.name: op.value for op in ops if op.value is not None}
    try:
        parse_subscription(name, configs)
    except SubscriptionError as exc:
        raise ConfigChangeError(exc.error_code, str(exc)) from exc
    if not validate_only:
        telemetry.set_configs(name, configs)


def alter_resource(
    targets: ConfigTargets,
    resource_type: int,
    name: str,
    ops: Sequence[ConfigOp],
    *,
    incremental: bool,
    validate_only: bool,
) -> None:
    """Apply one resource's changes (or only check them); raises ConfigChangeError."""
    check_ops(ops)
    kind = check_resource_type(resource_type, incremental)
    if kind == ResourceType.BROKER_LOGGER:
        try:
            alter_loggers(targets.node_id, name, ops, validate_only)
        except LoggerError as exc:
            raise ConfigChangeError(exc.error_code, exc.message) from exc
        return
    if kind == ResourceType.BROKER:
        alter_broker(
            targets.dynamic,
            targets.node_id,
            name,
            ops,
            incremental=incremental,
            validate_only=validate_only,
        )
        if not validate_only and any(op.name == MIN_ISR for op in ops):
            _min_isr_changed(targets.cluster, None)
        return
    if kind == ResourceType.CLIENT_METRICS:
        alter_client_metrics(
            targets.telemetry, name, ops, incremental=incremental, validate_only=validate_only
        )
        return
    if kind == ResourceType.GROUP:
        alter_group(
            targets.group_configs,
            targets.broker_config,
            name,
            ops,
            incremental=incremental,
            validate_only=validate_only,
        )
        return
    cluster = targets.cluster
    topic = cluster.topics.get(name)
    current = topic.configs if topic is not None else {}
    if incremental:
        configs = apply_incremental(current, ops)
    else:
        configs = {op.name: op.value for op in ops if op.value is not None}
    check_topic_configs(cluster, name, configs)
    if not validate_only:
        cluster.set_topic_configs(name, configs)
        if current.get(MIN_ISR) != configs.get(MIN_ISR):
            _min_isr_changed(cluster, name)


def _min_isr_changed(cluster: Cluster, topic: str | None) -> None:
    """Kafka's `createClearElrRecordsAsNeeded`: with ELR enabled, a min.insync.replicas change
    clears the ELR of the topic's partitions (a cluster-level one: of every partition)."""
    if cluster.elr_enabled():
        cluster.clear_elr(topic)


def alter_results(
    targets: ConfigTargets,
    resources: Sequence[tuple[int, str, Sequence[ConfigOp]]],
    *,
    incremental: bool,
    validate_only: bool,
) -> list[tuple[ErrorCode, str | None]]:
    """(error, message) for each (type, name, ops), in request order."""
    duplicates = duplicate_resources((kind, name) for kind, name, _ in resources)
    results: list[tuple[ErrorCode, str | None]] = []
    for kind, name, ops in resources:
        if (kind, name) in duplicates:
            results.append((ErrorCode.INVALID_REQUEST, DUPLICATE_RESOURCE_MESSAGE))
            continue
        try:
            alter_resource(
                targets,
                kind,
                name,
                ops,
                incremental=incremental,
                validate_only=validate_only,
            )
        except ConfigChangeError as exc:
            results.append((exc.error_code, exc.message))
        else:
            results.append((ErrorCode.NO_ERROR, None))
    return results
