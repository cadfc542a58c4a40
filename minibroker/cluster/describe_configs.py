"""Config entries as Kafka's `ConfigHelper` describes them: values, sources and synonyms.

A topic config's synonyms are its own override (TOPIC_CONFIG), then the broker setting it
falls back to, expanded to that setting's own synonyms (`log.retention.ms` →
`log.retention.minutes` → `log.retention.hours`), level by level as Kafka's ConfigHelper
lists them: this node's dynamic configs (DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic
defaults (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties (STATIC_BROKER_CONFIG), Kafka's
defaults (DEFAULT_CONFIG). As in Kafka, synonyms listed before the described name itself
are dropped, so `retention.ms` has no synonyms unless `log.retention.ms` is set. The source
is that of the first synonym.

A broker setting is read-only unless Kafka lets it change dynamically. The cluster-default
broker resource ("") lists only the dynamic defaults, without per-node synonyms.

A group config's synonyms are the group's own override (GROUP_CONFIG), then its broker
synonym's levels (`consumer.session.timeout.ms` -> `group.consumer.session.timeout.ms`);
one without a broker synonym shows Kafka's default (DEFAULT_CONFIG).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from minibroker.cluster.broker_loggers import loggers
from minibroker.config import (
    BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigSource,
    ConfigType,
    broker_synonyms,
)
from minibroker.groups.group_configs import GROUP_CONFIG_DEFS, GroupConfigDef, default_value
from minibroker.telemetry.subscriptions import DEFAULTS as CLIENT_METRICS_DEFAULTS
from minibroker.telemetry.subscriptions import INTERVAL_MS, MATCH, METRICS

UNKNOWN_CONFIG_TYPE = 0


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    config_type: int
    synonyms: tuple[Synonym, ...]
    documentation: str | None


def _config_synonyms(
    config: BrokerConfig, name: str, sensitive: bool, per_broker: bool = True
) -> list[Synonym]:
    names = broker_synonyms(name)
    levels = [
        (config.dynamic_node if per_broker else {}, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (config.static_values, ConfigSource.STATIC_BROKER_CONFIG),
    ]
    found = [
        Synonym(synonym, None if sensitive else values[synonym], source)
        for values, source in levels
        for synonym in names
        if synonym in values
    ]
    for synonym in names:
        definition = BROKER_CONFIGS.get(synonym)
        if definition is not None and definition.default is not None:
            value = None if sensitive else definition.default
            found.append(Synonym(synonym, value, ConfigSource.DEFAULT_CONFIG))
    while found and found[0].name != name:
        found.pop(0)
    return found


def _source(synonyms: list[Synonym]) -> ConfigSource:
    return synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG


def topic_config_entry(
    config: BrokerConfig, overrides: Mapping[str, str], name: str
) -> ConfigEntry:
    definition = TOPIC_CONFIGS[name]
    value = config.topic_value(overrides, name)
    synonyms = _config_synonyms(config, definition.broker_synonyms[0], sensitive=False)
    if name in overrides:
        synonyms.insert(0, Synonym(name, value, ConfigSource.TOPIC_CONFIG))
    return ConfigEntry(
        name=name,
        value=value,
        source=_source(synonyms),
        read_only=False,
        sensitive=False,
        config_type=definition.type,
        synonyms=tuple(synonyms),
        documentation=None,
    )


def topic_config_entries(config: BrokerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every topic config, sorted by name, with the value this topic gets."""
    return [topic_config_entry(config, overrides, name) for name in sorted(TOPIC_CONFIGS)]


def broker_config_entry(
    config: BrokerConfig, name: str, value: str | None = None, per_broker: bool = True
) -> ConfigEntry:
    """One broker setting with this node's value (or `value`, for the cluster default)."""
    definition = BROKER_CONFIGS.get(name)
    # Kafka treats a name it has no definition for as possibly sensitive.
    sensitive = definition is None or definition.sensitive or definition.type == ConfigType.PASSWORD
    synonyms = _config_synonyms(config, name, sensitive, per_broker)
    shown = config.raw(name) if value is None else value
    return ConfigEntry(
        name=name,
        value=None if sensitive else shown,
        source=_source(synonyms),
        read_only=name not in DYNAMIC_BROKER_CONFIGS,
        sensitive=sensitive,
        config_type=UNKNOWN_CONFIG_TYPE if definition is None else definition.type,
        synonyms=tuple(synonyms),
        documentation=(definition.doc or None) if definition is not None else None,
    )


def broker_config_entries(config: BrokerConfig) -> list[ConfigEntry]:
    """Every broker config Kafka's definition knows, plus any other name that was set."""
    names = sorted(set(BROKER_CONFIGS) | set(config.values))
    return [broker_config_entry(config, name) for name in names]


def cluster_default_entries(config: BrokerConfig) -> list[ConfigEntry]:
    """The cluster-wide dynamic defaults (the broker resource named "")."""
    return [
        broker_config_entry(config, name, value, per_broker=False)
        for name, value in sorted(config.dynamic_default.items())
    ]


_CLIENT_METRICS_TYPES = {
    METRICS: ConfigType.LIST,
    INTERVAL_MS: ConfigType.INT,
    MATCH: ConfigType.LIST,
}


def client_metrics_entries(configs: Mapping[str, str]) -> list[ConfigEntry]:
    """A client telemetry subscription's three configs (defaults for those not set), as
    Kafka describes a CLIENT_METRICS resource."""
    return [
        ConfigEntry(
            name=name,
            value=configs.get(name, default),
            source=(
                ConfigSource.CLIENT_METRICS_CONFIG
                if name in configs
                else ConfigSource.DEFAULT_CONFIG
            ),
            read_only=False,
            sensitive=False,
            config_type=_CLIENT_METRICS_TYPES[name],
            synonyms=(),
            documentation=None,
        )
        for name, default in sorted(CLIENT_METRICS_DEFAULTS.items())
    ]


def logger_entries() -> list[ConfigEntry]:
    """Every logger and its level, as Kafka describes a BROKER_LOGGER resource."""
    return [
        ConfigEntry(
            name=name,
            value=level,
            source=ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
            read_only=False,
            sensitive=False,
            config_type=UNKNOWN_CONFIG_TYPE,
            synonyms=(),
            documentation=None,
        )
        for name, level in loggers().items()
    ]


def _group_config_entry(
    config: BrokerConfig, overrides: Mapping[str, str], definition: GroupConfigDef
) -> ConfigEntry:
    name = definition.name
    value = overrides.get(name, default_value(definition, config))
    synonyms = []
    if name in overrides:
        synonyms.append(Synonym(name, value, ConfigSource.GROUP_CONFIG))
    if definition.broker_synonym is not None:
        synonyms += _config_synonyms(config, definition.broker_synonym, sensitive=False)
    return ConfigEntry(
        name=name,
        value=value,
        source=_source(synonyms),
        read_only=False,
        sensitive=False,
        config_type=definition.type,
        synonyms=tuple(synonyms),
        documentation=definition.doc or None,
    )


def group_config_entries(config: BrokerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """Every group config, sorted by name, with the value this group gets (a GROUP
    resource)."""
    return [
        _group_config_entry(config, overrides, GROUP_CONFIG_DEFS[name])
        for name in sorted(GROUP_CONFIG_DEFS)
    ]
