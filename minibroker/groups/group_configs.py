"""GROUP config resources (`ConfigResource` type 32): per-group overrides, as Kafka 4.3's
`GroupConfig` defines, validates and applies them.

Every group has the configs below; a group without an override of one gets the broker's
setting of its synonym (`consumer.session.timeout.ms` -> `group.consumer.session.timeout.ms`,
...), or Kafka's default for the three share configs that have no broker synonym. Kafka's
`GroupConfig` names, types, defaults and ranges:

    consumer.assignment.interval.ms     INT 1000    at least 0      (bounded)
    consumer.heartbeat.interval.ms      INT 5000    at least 1      (bounded)
    consumer.session.timeout.ms         INT 45000   at least 1      (bounded)
    share.assignment.interval.ms        INT 1000    at least 0      (bounded)
    share.auto.offset.reset             STRING latest: earliest, latest, by_duration:<ISO 8601>
    share.delivery.count.limit          INT 5       at least 2      (bounded)
    share.heartbeat.interval.ms         INT 5000    at least 1      (bounded)
    share.isolation.level               STRING read_uncommitted: or read_committed
    share.partition.max.record.locks    INT 2000    at least 100    (bounded)
    share.record.lock.duration.ms       INT 30000   at least 1000   (bounded)
    share.renew.acknowledge.enable      BOOLEAN true
    share.session.timeout.ms            INT 45000   at least 1      (bounded)
    streams.assignment.interval.ms      INT 1000    at least 0      (bounded)
    streams.heartbeat.interval.ms       INT 5000    at least 1      (bounded)
    streams.initial.rebalance.delay.ms  INT 3000    at least 0
    streams.num.standby.replicas        INT 0       at least 0      (at most the broker's
                                                    group.streams.max.standby.replicas)
    streams.session.timeout.ms          INT 45000   at least 1      (bounded)

The default of each INT config is the broker's `group.<name>`; a bounded one must lie
within the broker's `group.<kind>.min.<rest>` and `group.<kind>.max.<rest>` (for
`consumer.session.timeout.ms`: `group.consumer.min.session.timeout.ms` and
`group.consumer.max.session.timeout.ms`). The three share configs without a broker synonym
default to Kafka's default.

A change is checked as Kafka's `GroupConfig.validate` checks the group's resulting overrides
merged over the broker's settings (every failure INVALID_CONFIG with Kafka's message): an
unknown name ("Unknown group config name: x"), a value of the wrong type or below the
config's own minimum ("Invalid value 0 for configuration consumer.session.timeout.ms: Value
must be at least 1"), a value outside the broker's bounds ("consumer.session.timeout.ms must
be greater than or equal to group.consumer.min.session.timeout.ms", "... must be less than
or equal to group.consumer.max.session.timeout.ms", for every bounded config), and a session
timeout not above the heartbeat interval ("consumer.session.timeout.ms must be greater than
consumer.heartbeat.interval.ms"; share and streams alike).

At use time an override outside the broker's current bounds (they may have changed since)
is capped to them, as Kafka's `GroupConfig.evaluate`.

The overrides are kept in `<data dir>/minibroker-group-configs.json` (Kafka keeps them in
its metadata log), so a restart keeps them; an in-memory broker keeps them in memory. As in
Kafka they belong to the group id, not to a group: they may name a group that does not
exist, and deleting a group keeps them.

The API for the coordinator:
- `GroupConfigs.effective(group_id, broker_config) -> EffectiveGroupConfig`: the typed
  values a group runs with (`consumer_session_timeout_ms`, `consumer_heartbeat_interval_ms`,
  `consumer_assignment_interval_ms`, the share and streams ones), capped to the bounds of
  `broker_config` (the node's current `BrokerConfig`).
- `GroupConfigs.overrides(group_id)`, `.group_ids()`, `.replace(group_id, configs)`.
- `validate_group_configs(configs, broker_config)` raises `GroupConfigError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigType
from minibroker.log.checkpoints import write_atomically

GROUP_CONFIGS_FILE = "minibroker-group-configs.json"
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_ISO_DURATION = re.compile(
    r"P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
_BY_DURATION = "by_duration:"


class GroupConfigError(ValueError):
    """A group config change Kafka refuses (INVALID_CONFIG with this message)."""


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: ConfigType
    kafka_default: str
    at_least: int | None = None
    # The broker setting that gives the default, and its bounds (names of broker settings).
    broker_synonym: str | None = None
    broker_min: str | None = None
    broker_max: str | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""


def _bounded(name: str, default: str, at_least: int, doc: str) -> GroupConfigDef:
    """An INT group config whose default and bounds are the broker's `group.<name>`,
    `group.<kind>.min.<rest>` and `group.<kind>.max.<rest>` settings."""
    kind, _, rest = name.partition(".")
    return GroupConfigDef(
        name,
        ConfigType.INT,
        default,
        at_least,
        f"group.{name}",
        f"group.{kind}.min.{rest}",
        f"group.{kind}.max.{rest}",
        doc=doc,
    )


GROUP_CONFIG_DEFS: dict[str, GroupConfigDef] = {
    d.name: d
    for d in [
        _bounded(
            "consumer.assignment.interval.ms",
            "1000",
            0,
            "The interval between assignment updates for a consumer group.",
        ),
        _bounded(
            "consumer.heartbeat.interval.ms",
            "5000",
            1,
            "The heartbeat interval given to the members of a consumer group.",
        ),
        _bounded(
            "consumer.session.timeout.ms",
            "45000",
            1,
            "The timeout to detect client failures when using the consumer group protocol.",
        ),
        _bounded(
            "share.assignment.interval.ms",
            "1000",
            0,
            "The interval between assignment updates for a share group.",
        ),
        GroupConfigDef(
            "share.auto.offset.reset",
            ConfigType.STRING,
            "latest",
            doc="The strategy to initialize the share-partition start offset.",
        ),
        _bounded(
            "share.delivery.count.limit",
            "5",
            2,
            "The maximum number of delivery attempts for a record delivered to a share group.",
        ),
        _bounded(
            "share.heartbeat.interval.ms",
            "5000",
            1,
            "The heartbeat interval given to the members of a share group.",
        ),
        GroupConfigDef(
            "share.isolation.level",
            ConfigType.STRING,
            "read_uncommitted",
            choices=("read_committed", "read_uncommitted"),
            doc="Controls how to read records written transactionally.",
        ),
        _bounded(
            "share.partition.max.record.locks",
            "2000",
            100,
            "Share-group record lock limit per share-partition.",
        ),
        _bounded(
            "share.record.lock.duration.ms",
            "30000",
            1000,
            "The record acquisition lock duration in milliseconds for share groups.",
        ),
        GroupConfigDef(
            "share.renew.acknowledge.enable",
            ConfigType.BOOLEAN,
            "true",
            doc="Whether the renew acknowledge type is enabled for the share group.",
        ),
        _bounded(
            "share.session.timeout.ms",
            "45000",
            1,
            "The timeout to detect client failures when using the share group protocol.",
        ),
        _bounded(
            "streams.assignment.interval.ms",
            "1000",
            0,
            "The interval between assignment updates for a streams group.",
        ),
        _bounded(
            "streams.heartbeat.interval.ms",
            "5000",
            1,
            "The heartbeat interval given to the members of a streams group.",
        ),
        GroupConfigDef(
            "streams.initial.rebalance.delay.ms",
            ConfigType.INT,
            "3000",
            0,
            "group.streams.initial.rebalance.delay.ms",
            doc="The amount of time the group coordinator will wait for more streams clients "
            "to join a new group before performing the first rebalance.",
        ),
        GroupConfigDef(
            "streams.num.standby.replicas",
            ConfigType.INT,
            "0",
            0,
            "group.streams.num.standby.replicas",
            None,
            "group.streams.max.standby.replicas",
            doc="The number of standby replicas for each task.",
        ),
        _bounded(
            "streams.session.timeout.ms",
            "45000",
            1,
            "The timeout to detect client failures when using the streams group protocol.",
        ),
    ]
}

# Kafka's order of the checks against the broker's bounds, then of session > heartbeat.
_BOUNDS_ORDER = (
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "consumer.assignment.interval.ms",
    "share.heartbeat.interval.ms",
    "share.session.timeout.ms",
    "share.record.lock.duration.ms",
    "share.delivery.count.limit",
    "share.partition.max.record.locks",
    "share.assignment.interval.ms",
    "streams.heartbeat.interval.ms",
    "streams.session.timeout.ms",
    "streams.num.standby.replicas",
    "streams.assignment.interval.ms",
)
_SESSION_HEARTBEAT = ("consumer", "share", "streams")


@dataclass(frozen=True, slots=True)
class EffectiveGroupConfig:
    """The values one group runs with (overrides capped to the broker's bounds)."""

    consumer_session_timeout_ms: int
    consumer_heartbeat_interval_ms: int
    consumer_assignment_interval_ms: int
    share_session_timeout_ms: int
    share_heartbeat_interval_ms: int
    share_assignment_interval_ms: int
    share_record_lock_duration_ms: int
    share_delivery_count_limit: int
    share_partition_max_record_locks: int
    share_auto_offset_reset: str
    share_isolation_level: str
    share_renew_acknowledge_enable: bool
    streams_session_timeout_ms: int
    streams_heartbeat_interval_ms: int
    streams_assignment_interval_ms: int
    streams_initial_rebalance_delay_ms: int
    streams_num_standby_replicas: int


def default_value(definition: GroupConfigDef, broker: BrokerConfig) -> str:
    """A config's value for a group without an override: its broker synonym's, else Kafka's
    default."""
    if definition.broker_synonym is None:
        return definition.kafka_default
    return broker.raw(definition.broker_synonym) or definition.kafka_default


def _invalid(name: str, value: str, reason: str) -> GroupConfigError:
    return GroupConfigError(f"Invalid value {value} for configuration {name}: {reason}")


def _parse_int(definition: GroupConfigDef, value: str) -> int:
    """Kafka's `ConfigDef` parse of an INT and its `atLeast` validator."""
    text = value.strip()
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or not _INT_MIN <= number <= _INT_MAX or not text.lstrip("+-").isdigit():
        raise _invalid(definition.name, value, "Not a number of type INT")
    if definition.at_least is not None and number < definition.at_least:
        raise _invalid(definition.name, value, f"Value must be at least {definition.at_least}")
    return number


def _check_auto_offset_reset(name: str, value: str) -> None:
    """Kafka's `ShareGroupAutoOffsetResetStrategy.Validator`."""
    text = value.strip().lower()
    if text in ("earliest", "latest"):
        return
    if text.startswith(_BY_DURATION):
        duration = value.strip()[len(_BY_DURATION) :]
        if not duration.startswith("-") and _ISO_DURATION.fullmatch(duration) and duration != "P":
            return
    raise _invalid(
        name,
        value,
        f"Invalid value `{value}` for configuration {name}. The value must be either "
        "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.",
    )


def by_duration_ms(reset: str) -> int | None:
    """The duration of a `share.auto.offset.reset` of `by_duration:<ISO 8601>`, in ms."""
    if not reset.lower().startswith(_BY_DURATION):
        return None
    match = _ISO_DURATION.fullmatch(reset[len(_BY_DURATION) :].strip())
    if match is None:
        return None
    parts = {name: float(value) for name, value in match.groupdict().items() if value}
    seconds = (
        parts.get("days", 0) * 86400
        + parts.get("hours", 0) * 3600
        + parts.get("minutes", 0) * 60
        + parts.get("seconds", 0)
    )
    return int(seconds * 1000)


def _parse(definition: GroupConfigDef, value: str) -> int | str | bool:
    name = definition.name
    if definition.type == ConfigType.INT:
        return _parse_int(definition, value)
    if definition.type == ConfigType.BOOLEAN:
        text = value.strip().lower()
        if text not in ("true", "false"):
            raise _invalid(name, value, "Expected value to be either true or false")
        return text == "true"
    text = value.strip()
    if definition.choices and text not in definition.choices:
        raise _invalid(name, value, f"String must be one of: {', '.join(definition.choices)}")
    if name == "share.auto.offset.reset":
        _check_auto_offset_reset(name, value)
    return text


def _check_bounds(definition: GroupConfigDef, value: int, broker: BrokerConfig) -> None:
    name = definition.name
    if definition.broker_min is not None and value < broker.get_int(definition.broker_min):
        raise GroupConfigError(f"{name} must be greater than or equal to {definition.broker_min}")
    if definition.broker_max is not None and value > broker.get_int(definition.broker_max):
        raise GroupConfigError(f"{name} must be less than or equal to {definition.broker_max}")


def validate_group_configs(configs: Mapping[str, str], broker: BrokerConfig) -> None:
    """Kafka's `GroupConfig.validate` of a group's resulting overrides, merged over the
    broker's settings; raises GroupConfigError."""
    for name in configs:
        if name not in GROUP_CONFIG_DEFS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    merged = {
        name: configs[name] if name in configs else default_value(definition, broker)
        for name, definition in GROUP_CONFIG_DEFS.items()
    }
    parsed = {name: _parse(GROUP_CONFIG_DEFS[name], value) for name, value in merged.items()}
    for name in _BOUNDS_ORDER:
        _check_bounds(GROUP_CONFIG_DEFS[name], int(parsed[name]), broker)
    for kind in _SESSION_HEARTBEAT:
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if int(parsed[session]) <= int(parsed[heartbeat]):
            raise GroupConfigError(f"{session} must be greater than {heartbeat}")


def _capped(definition: GroupConfigDef, value: int, broker: BrokerConfig) -> int:
    """Kafka's `GroupConfig.evaluate`: an override outside the broker's bounds is capped."""
    if definition.broker_min is not None:
        value = max(value, broker.get_int(definition.broker_min))
    if definition.broker_max is not None:
        value = min(value, broker.get_int(definition.broker_max))
    return value


def _effective_value(
    definition: GroupConfigDef, overrides: Mapping[str, str], broker: BrokerConfig
) -> int | str | bool:
    default = default_value(definition, broker)
    if definition.name not in overrides:
        return _parse_unchecked(definition, default)
    try:
        value = _parse(definition, overrides[definition.name])
    except GroupConfigError:
        return _parse_unchecked(definition, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return _capped(definition, value, broker)
    return value


def _parse_unchecked(definition: GroupConfigDef, value: str) -> int | str | bool:
    if definition.type == ConfigType.INT:
        return int(value.strip())
    if definition.type == ConfigType.BOOLEAN:
        return value.strip().lower() == "true"
    return value.strip()


class GroupConfigs:
    """The stored GROUP config overrides of one cluster, by group id."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._overrides: dict[str, dict[str, str]] = {}

    @classmethod
    def open(cls, data_dir: Path | None) -> GroupConfigs:
        store = cls(None if data_dir is None else data_dir / GROUP_CONFIGS_FILE)
        if store.path is not None and store.path.exists():
            stored = json.loads(store.path.read_text())
            store._overrides = {group: dict(configs) for group, configs in stored.items()}
        return store

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._overrides.get(group_id, {}))

    def group_ids(self) -> list[str]:
        """The groups that have overrides, sorted."""
        return sorted(self._overrides)

    def replace(self, group_id: str, configs: Mapping[str, str]) -> None:
        """The group's overrides become `configs` (none: the group has none left)."""
        if configs:
            self._overrides[group_id] = dict(configs)
        else:
            self._overrides.pop(group_id, None)
        self._write()

    def effective(self, group_id: str, broker: BrokerConfig) -> EffectiveGroupConfig:
        overrides = self._overrides.get(group_id, {})

        def number(name: str) -> int:
            return int(_effective_value(GROUP_CONFIG_DEFS[name], overrides, broker))

        def flag(name: str) -> bool:
            return _effective_value(GROUP_CONFIG_DEFS[name], overrides, broker) is True

        def text(name: str) -> str:
            return str(_effective_value(GROUP_CONFIG_DEFS[name], overrides, broker))

        return EffectiveGroupConfig(
            consumer_session_timeout_ms=number("consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms=number("consumer.heartbeat.interval.ms"),
            consumer_assignment_interval_ms=number("consumer.assignment.interval.ms"),
            share_session_timeout_ms=number("share.session.timeout.ms"),
            share_heartbeat_interval_ms=number("share.heartbeat.interval.ms"),
            share_assignment_interval_ms=number("share.assignment.interval.ms"),
            share_record_lock_duration_ms=number("share.record.lock.duration.ms"),
            share_delivery_count_limit=number("share.delivery.count.limit"),
            share_partition_max_record_locks=number("share.partition.max.record.locks"),
            share_auto_offset_reset=text("share.auto.offset.reset").lower(),
            share_isolation_level=text("share.isolation.level"),
            share_renew_acknowledge_enable=flag("share.renew.acknowledge.enable"),
            streams_session_timeout_ms=number("streams.session.timeout.ms"),
            streams_heartbeat_interval_ms=number("streams.heartbeat.interval.ms"),
            streams_assignment_interval_ms=number("streams.assignment.interval.ms"),
            streams_initial_rebalance_delay_ms=number("streams.initial.rebalance.delay.ms"),
            streams_num_standby_replicas=number("streams.num.standby.replicas"),
        )

    def _write(self) -> None:
        if self.path is None:
            return
        write_atomically(self.path, json.dumps(self._overrides, indent=1, sort_keys=True))
