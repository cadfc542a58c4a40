"""Client metrics subscriptions: Kafka's CLIENT_METRICS config resources (KIP-714).

A subscription is named and has three configs, as Kafka's `ClientMetricsConfigs`:
`metrics` (metric name prefixes, comma-separated; "*" for all), `interval.ms` (push
interval, 100 to 3600000, default 300000) and `match` (comma-separated `selector=regex`,
selectors `client_instance_id`, `client_id`, `client_software_name`,
`client_software_version`, `client_source_address`, `client_source_port`; none matches
every client). `parse_subscription` checks them with Kafka's errors and messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from minibroker.protocol.errors import ErrorCode

DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 3_600_000
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
LIST_CONFIGS = frozenset({METRICS, MATCH})
DEFAULTS = {METRICS: "", INTERVAL_MS: str(DEFAULT_INTERVAL_MS), MATCH: ""}
MATCH_KEYS = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


class SubscriptionError(ValueError):
    """A subscription Kafka refuses, with the error code it answers."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: tuple[str, ...]
    interval_ms: int = DEFAULT_INTERVAL_MS
    match: Mapping[str, str] = field(default_factory=dict)
    """Selector → regular expression the whole value must match."""

    def matches(self, client: Mapping[str, str]) -> bool:
        return all(
            re.fullmatch(pattern, client.get(key, "")) is not None
            for key, pattern in self.match.items()
        )

    def configs(self) -> dict[str, str]:
        """The subscription as CLIENT_METRICS configs."""
        return {
            METRICS: ",".join(self.metrics),
            INTERVAL_MS: str(self.interval_ms),
            MATCH: ",".join(f"{key}={pattern}" for key, pattern in self.match.items()),
        }


def list_items(value: str) -> list[str]:
    """Kafka's LIST parsing: comma-separated, trimmed, "" is the empty list."""
    return [item.strip() for item in value.split(",")] if value.strip() else []


def _interval(value: str) -> int:
    text = value.strip()
    if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
        raise SubscriptionError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {value} for configuration {INTERVAL_MS}: Not a number of type INT",
        )
    interval = int(text)
    if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        raise SubscriptionError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and "
            "3600000 (1 hour)",
        )
    return interval


def _match(patterns: list[str]) -> dict[str, str]:
    result: dict[str, str] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        illegal = SubscriptionError(
            ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
        )
        if len(parts) != 2 or parts[0].strip() not in MATCH_KEYS:
            raise illegal
        try:
            re.compile(parts[1].strip())
        except re.error:
            raise illegal from None
        result[parts[0].strip()] = parts[1].strip()
    return result


def parse_subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """Kafka's `ClientMetricsConfigs.validate`, then the subscription the configs describe."""
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in DEFAULTS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}"
            )
    values = {**DEFAULTS, **configs}
    return Subscription(
        name,
        tuple(list_items(values[METRICS])),
        _interval(values[INTERVAL_MS]),
        _match(list_items(values[MATCH])),
    )
