"""The group coordinator's broker settings, as Kafka 4.3's `GroupCoordinatorConfig` checks
them: `check_group_settings(config)` raises ConfigError for a bad one.

Kept apart from the coordinator (and importing nothing of it) because the broker builds the
coordinator on first use but refuses bad settings when it starts (server/broker.py); the
coordinator reads the same settings through these classes when it is built. They are named
tuples, not frozen dataclasses: this module is on every broker's start path, and a slotted
dataclass costs about 1 ms to define there.
"""

from __future__ import annotations

from typing import NamedTuple

from minibroker.config import BrokerConfig, ConfigError

# The server-side assignors of consumer groups (consumer/assignors.py), first the default.
CONSUMER_ASSIGNORS = ("uniform", "range")
# Kafka's class names for them, accepted in `group.consumer.assignors`.
CONSUMER_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
# The one share-group assignor (share/assignor.py), by name or by Kafka's class name.
SHARE_ASSIGNOR = "simple"
SHARE_ASSIGNOR_NAMES = {
    SHARE_ASSIGNOR,
    "org.apache.kafka.coordinator.group.assignor.SimpleAssignor",
}
# Kafka's upper bound of group.share.max.size.
MAX_SHARE_GROUP_SIZE = 1000
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class ConsumerSettings(NamedTuple):
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int
    assignors: list[str]

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConsumerSettings:
        names = [
            CONSUMER_ASSIGNOR_CLASSES.get(name.strip(), name.strip())
            for name in config.get_str("group.consumer.assignors").split(",")
            if name.strip()
        ]
        unknown = [name for name in names if name not in CONSUMER_ASSIGNORS]
        if unknown or not names:
            raise ConfigError(f"group.consumer.assignors: unknown assignors {unknown}")
        settings = cls(
            session_timeout_ms=config.get_int("group.consumer.session.timeout.ms"),
            heartbeat_interval_ms=config.get_int("group.consumer.heartbeat.interval.ms"),
            max_size=config.get_int("group.consumer.max.size"),
            assignors=names,
        )
        settings.check_bounds(config)
        return settings

    def check_bounds(self, config: BrokerConfig) -> None:
        """As Kafka's GroupCoordinatorConfig: each timeout within its min/max, and the
        heartbeat interval below the session timeout."""
        _check_timeouts(
            config, "group.consumer", self.session_timeout_ms, self.heartbeat_interval_ms
        )
        if self.max_size < 1:
            raise ConfigError("group.consumer.max.size must be at least 1")


class ShareSettings(NamedTuple):
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ShareSettings:
        settings = cls(
            session_timeout_ms=config.get_int("group.share.session.timeout.ms"),
            heartbeat_interval_ms=config.get_int("group.share.heartbeat.interval.ms"),
            max_size=config.get_int("group.share.max.size"),
        )
        settings.check_bounds(config)
        _check_share_assignors(config.get_str("group.share.assignors"))
        return settings

    def check_bounds(self, config: BrokerConfig) -> None:
        """As Kafka's GroupCoordinatorConfig: each timeout within its min/max, the heartbeat
        interval below the session timeout, and a group size of 1 to 1000."""
        _check_timeouts(config, "group.share", self.session_timeout_ms, self.heartbeat_interval_ms)
        if not 1 <= self.max_size <= MAX_SHARE_GROUP_SIZE:
            raise ConfigError(f"group.share.max.size must be between 1 and {MAX_SHARE_GROUP_SIZE}")


class StreamsSettings(NamedTuple):
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_size: int

    @classmethod
    def from_config(cls, config: BrokerConfig) -> StreamsSettings:
        settings = cls(
            session_timeout_ms=config.get_int("group.streams.session.timeout.ms"),
            heartbeat_interval_ms=config.get_int("group.streams.heartbeat.interval.ms"),
            max_size=config.get_int("group.streams.max.size"),
        )
        _check_timeouts(
            config, "group.streams", settings.session_timeout_ms, settings.heartbeat_interval_ms
        )
        if settings.max_size < 1:
            raise ConfigError("group.streams.max.size must be at least 1")
        return settings


def _check_share_assignors(value: str) -> None:
    """`group.share.assignors`: a single entry (Kafka's rule), the simple assignor."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if len(names) != 1 or names[0] not in SHARE_ASSIGNOR_NAMES:
        raise ConfigError(
            f"group.share.assignors must name one assignor, {SHARE_ASSIGNOR}; it is {value!r}"
        )


def migration_policy(value: str) -> tuple[bool, bool]:
    """(upgrade enabled, downgrade enabled) for `group.consumer.migration.policy`
    (case-insensitive, as Kafka; ConfigError for another value)."""
    policy = value.strip().lower()
    if policy not in MIGRATION_POLICIES:
        raise ConfigError(
            f"Invalid value {value} for configuration group.consumer.migration.policy: "
            "String must be one of (case insensitive): "
            f"{', '.join(p.upper() for p in MIGRATION_POLICIES)}"
        )
    return policy in ("upgrade", "bidirectional"), policy in ("downgrade", "bidirectional")


def check_group_settings(config: BrokerConfig) -> None:
    """Raise ConfigError for a bad group coordinator setting, in the order the coordinator
    reads them (consumer, share and streams groups, the migration policy)."""
    ConsumerSettings.from_config(config)
    ShareSettings.from_config(config)
    StreamsSettings.from_config(config)
    migration_policy(config.get_str("group.consumer.migration.policy"))


def _check_timeouts(
    config: BrokerConfig, prefix: str, session_timeout_ms: int, heartbeat_interval_ms: int
) -> None:
    """Each of `prefix`'s timeouts within its min/max, and the heartbeat interval below the
    session timeout."""
    for name, value in (
        ("session.timeout.ms", session_timeout_ms),
        ("heartbeat.interval.ms", heartbeat_interval_ms),
    ):
        low = config.get_int(f"{prefix}.min.{name}")
        high = config.get_int(f"{prefix}.max.{name}")
        if not low <= value <= high:
            raise ConfigError(
                f"{prefix}.{name} must be between {prefix}.min.{name} "
                f"({low}) and {prefix}.max.{name} ({high}); it is {value}"
            )
    if heartbeat_interval_ms >= session_timeout_ms:
        raise ConfigError(
            f"{prefix}.heartbeat.interval.ms must be less than {prefix}.session.timeout.ms"
        )
