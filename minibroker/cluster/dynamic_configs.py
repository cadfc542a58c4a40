"""Dynamic broker configs (KIP-226) as Kafka's `DynamicBrokerConfig` keeps and checks them.

Two levels, as in Kafka: the cluster-wide defaults (resource name "") and each node's own
configs (resource name = node id). A node's effective config is its static settings, then
the cluster defaults, then its own dynamic configs on top (`BrokerConfig.with_dynamic`).
They are kept in `<data dir>/minibroker-broker-configs.json` (Kafka keeps them in its
metadata log), so a restart applies them again; an in-memory broker keeps them in memory.

A change is checked as Kafka's broker checks it before forwarding it to the controller, on
the resource's resulting set of dynamic configs; every failure is INVALID_REQUEST with
Kafka's message (Java's set notation, names sorted):
- a setting Kafka does not let change at run time: "Cannot update these configs
  dynamically: [num.partitions]";
- an SSL store setting without a listener prefix: "These security configs can be
  dynamically updated only per-listener using the listener prefix: [...]";
- a value of the wrong type: "Invalid value x for configuration log.retention.ms: Not a
  number of type LONG" (and Kafka's enumerations for the few string settings that have one);
- a per-broker setting (listeners, SSL, SASL) at the cluster-default level: "Cannot update
  these configs at default cluster level, broker id must be specified: [...]".
Names Kafka does not know are custom configs: stored and shown, as Kafka does.

With eligible leader replicas enabled (KIP-966) the controller keeps min.insync.replicas at
the cluster level only, as Kafka's `ConfigurationControlManager` does: enabling ELR (a new
4.3 cluster, or UpdateFeatures) sets the cluster-level value to the static setting's unless
one is set and removes broker-level ones, and while ELR is enabled a broker-level
min.insync.replicas is INVALID_CONFIG ("Broker-level min.insync.replicas cannot be altered
while ELR is enabled.") and so is removing the cluster-level one ("Cluster-level ... cannot
be removed while ELR is enabled.").

Live effect: minibroker re-derives every topic's log and validation settings from the new
effective config (`log.retention.ms`, `log.segment.bytes`, `message.max.bytes`,
`compression.type`, ... apply to topics without their own override at once). In an
in-process cluster the shared topic state follows the first node's effective config.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from minibroker.cluster.state import Cluster
from minibroker.config import (
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIGS,
    DYNAMIC_SECURITY_CONFIGS,
    KAFKA_STATIC_BROKER_CONFIGS,
    PER_BROKER_CONFIGS,
    BrokerConfig,
    ConfigType,
)
from minibroker.log.checkpoints import write_atomically

BROKER_CONFIGS_FILE = "minibroker-broker-configs.json"
MIN_ISR = "min.insync.replicas"
ELR_BROKER_MIN_ISR_MESSAGE = (
    "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
)
ELR_CLUSTER_MIN_ISR_MESSAGE = (
    "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
)
_LISTENER_PREFIX = "listener.name."

# Kafka's `ConfigDef.ValidString` settings among the dynamic ones, with Kafka's order.
_VALID_STRINGS: dict[str, tuple[str, ...]] = {
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "log.message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
_INT_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}


class DynamicConfigError(ValueError):
    """A change Kafka refuses (answered INVALID_REQUEST with this message)."""


def java_set(names: Iterable[str]) -> str:
    return "[" + ", ".join(sorted(names)) + "]"


def _base_name(name: str) -> str:
    """`listener.name.<listener>.<config>` → `<config>`."""
    if name.startswith(_LISTENER_PREFIX):
        _, _, rest = name[len(_LISTENER_PREFIX) :].partition(".")
        return rest
    return name


def _is_static(name: str) -> bool:
    known = name in BROKER_CONFIGS or name in KAFKA_STATIC_BROKER_CONFIGS
    return known and name not in DYNAMIC_BROKER_CONFIGS


def _check_number(name: str, value: str, type_: ConfigType) -> None:
    text = value.strip()
    try:
        if type_ == ConfigType.DOUBLE:
            float(text)
            return
        low, high = _INT_RANGES[type_]
        if not low <= int(text) <= high:
            raise ValueError(text)
    except ValueError:
        raise DynamicConfigError(
            f"Invalid value {value} for configuration {name}: Not a number of type {type_.name}"
        ) from None


def check_value(name: str, value: str) -> None:
    """Kafka's `ConfigDef.parse` of one setting (the listener prefix stripped)."""
    definition = BROKER_CONFIGS.get(name)
    if definition is None:
        return
    if definition.type in (*_INT_RANGES, ConfigType.DOUBLE):
        _check_number(name, value, definition.type)
    elif definition.type == ConfigType.BOOLEAN and value.strip().lower() not in ("true", "false"):
        raise DynamicConfigError(
            f"Invalid value {value} for configuration {name}: "
            "Expected value to be either true or false"
        )
    allowed = _VALID_STRINGS.get(name)
    if allowed is not None and value.strip() not in allowed:
        raise DynamicConfigError(
            f"Invalid value {value} for configuration {name}: "
            f"String must be one of: {', '.join(allowed)}"
        )


def validate(configs: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's `DynamicBrokerConfig.validateConfigs`, in its order."""
    static = [name for name in configs if _is_static(name)]
    if static:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {java_set(static)}")
    unprefixed = [name for name in configs if name in DYNAMIC_SECURITY_CONFIGS]
    if unprefixed:
        raise DynamicConfigError(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {java_set(unprefixed)}"
        )
    for name, value in configs.items():
        check_value(_base_name(name), value)
    if not per_broker:
        node_only = [
            name
            for name in configs
            if name in PER_BROKER_CONFIGS
            or (name.startswith(_LISTENER_PREFIX) and _base_name(name) in PER_BROKER_CONFIGS)
        ]
        if node_only:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {java_set(node_only)}"
            )


class ConfigHolder(Protocol):
    """A node (a `Broker`): its id and its current config."""

    node_id: int
    config: BrokerConfig


class DynamicConfigs:
    """The stored dynamic broker configs of one cluster."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.default: dict[str, str] = {}
        self.nodes: dict[int, dict[str, str]] = {}
        # Whether eligible leader replicas are enabled (the broker sets it from its features).
        self.elr_enabled: Callable[[], bool] = bool

    @classmethod
    def open(cls, data_dir: Path | None) -> DynamicConfigs:
        store = cls(None if data_dir is None else data_dir / BROKER_CONFIGS_FILE)
        if store.path is not None and store.path.exists():
            stored = json.loads(store.path.read_text())
            store.default = dict(stored.get("default", {}))
            store.nodes = {int(node): dict(c) for node, c in stored.get("nodes", {}).items()}
        return store

    def configs(self, node_id: int | None) -> dict[str, str]:
        """The stored configs of one node, or the cluster defaults (None)."""
        if node_id is None:
            return dict(self.default)
        return dict(self.nodes.get(node_id, {}))

    def replace(self, node_id: int | None, configs: Mapping[str, str]) -> None:
        if node_id is None:
            self.default = dict(configs)
        elif configs:
            self.nodes[node_id] = dict(configs)
        else:
            self.nodes.pop(node_id, None)
        self._write()

    def ensure_elr_safety(self, static_min_isr: int) -> bool:
        """Kafka's `ConfigurationControlManager.maybeGenerateElrSafetyRecords`, as ELR is
        enabled: a cluster-level min.insync.replicas (the static setting's value) unless there
        is one, and no broker-level one. True when something changed."""
        changed = MIN_ISR not in self.default
        self.default.setdefault(MIN_ISR, str(static_min_isr))
        for node_id, configs in list(self.nodes.items()):
            if configs.pop(MIN_ISR, None) is not None:
                changed = True
                if not configs:
                    del self.nodes[node_id]
        if changed:
            self._write()
        return changed

    def effective(self, config: BrokerConfig, node_id: int) -> BrokerConfig:
        return config.with_dynamic(self.default, self.nodes.get(node_id, {}))

    def apply(self, nodes: Iterable[ConfigHolder], owner: ConfigHolder, cluster: Cluster) -> None:
        """Give every node its effective config, and the shared topic state the owner's:
        every partition log's settings are derived again."""
        compression = cluster.config.topic_value({}, "compression.type")
        for node in nodes:
            node.config = self.effective(node.config, node.node_id)
        cluster.config = owner.config
        cluster.logs.default_config = Cluster.default_log_config(owner.config)
        # fetches below v10 refuse zstd topics: their fetchers must look again
        compression_moved = cluster.config.topic_value({}, "compression.type") != compression
        for topic in cluster.topics.values():
            log_config = cluster.log_config(topic)
            for partition in topic.partitions:
                partition.log.update_config(log_config)
                if compression_moved:
                    partition.notify_appended()

    def _write(self) -> None:
        if self.path is None:
            return
        content = {
            "default": self.default,
            "nodes": {str(node): configs for node, configs in sorted(self.nodes.items())},
        }
        write_atomically(self.path, json.dumps(content, indent=1, sort_keys=True))
