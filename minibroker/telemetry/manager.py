"""Client telemetry (KIP-714) as Kafka's `ClientMetricsManager` runs it.

Subscriptions (Kafka's CLIENT_METRICS config resources, `subscriptions.py`) name metric
prefixes, a push interval and optional match criteria; none exist by default, so a client is
told to push nothing (empty RequestedMetrics), as by a Kafka broker without client-metrics
configs.
Each client instance (id assigned here when the client sends the zero uuid) gets the union
of the metrics of the subscriptions it matches, the lowest of their intervals (Kafka's
default 300000 ms without one) and a subscription id (CRC-32C of the metrics and interval,
XORed with the instance id's hash, as Kafka computes it). A change of subscriptions makes
every instance's next request re-evaluate them.

Checks, with Kafka's errors and order:
- GetTelemetrySubscriptions again before the push interval has passed since the instance's
  last request: THROTTLING_QUOTA_EXCEEDED (unless its last push failed with
  UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE).
- PushTelemetry: a zero or reserved instance id INVALID_REQUEST; a push after a terminating
  one INVALID_REQUEST; a push before the interval has passed since the last push (the first
  push after a GetTelemetrySubscriptions is always accepted; a terminating push too)
  THROTTLING_QUOTA_EXCEEDED; a stale subscription id UNKNOWN_SUBSCRIPTION_ID; a compression
  type outside 0-4 UNSUPPORTED_COMPRESSION_TYPE; metrics larger than `telemetry.max.bytes`
  TELEMETRY_TOO_LARGE. The accepted payload is decompressed (gzip, snappy, lz4, zstd; at most
  `telemetry.max.bytes`, else TELEMETRY_TOO_LARGE) and decoded from OTLP; bytes that do not
  decode are INVALID_RECORD, as a failing Kafka exporter plugin.

Subscriptions are kept in `<data dir>/minibroker-client-metrics.json`. Decoded metrics are
kept in memory (the latest `MAX_KEPT_METRICS`) for tests to read back.
Differences from Kafka: instances are kept (the latest `MAX_INSTANCES`) instead of expiring
with a timer, and the client software name/version are not known to the match criteria.
"""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crc32c._crc32c import crc32c  # the C function: the package __init__ reads metadata

from minibroker.log.checkpoints import write_atomically
from minibroker.protocol.errors import ErrorCode
from minibroker.records.compression import CompressionError, decompress
from minibroker.telemetry.otlp import Metric, OtlpError, decode_metrics_data
from minibroker.telemetry.subscriptions import (
    DEFAULT_INTERVAL_MS,
    Subscription,
    parse_subscription,
)

# zstd, lz4, gzip, snappy: Kafka's order of preference.
ACCEPTED_COMPRESSION_TYPES = (4, 3, 1, 2)
MAX_COMPRESSION_TYPE = 4
ALL_METRICS = "*"
MAX_INSTANCES = 16384
MAX_KEPT_METRICS = 100_000
SUBSCRIPTIONS_FILE = "minibroker-client-metrics.json"
ZERO_UUID = uuid.UUID(int=0)
_RESERVED_UUIDS = frozenset({ZERO_UUID, uuid.UUID(int=1)})


class TelemetryError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _java_uuid_hash(value: uuid.UUID) -> int:
    high, low = value.int >> 64, value.int & (2**64 - 1)
    mixed = high ^ low
    return ((mixed >> 32) ^ mixed) & 0xFFFFFFFF


def subscription_id(metrics: Sequence[str], interval_ms: int, instance: uuid.UUID) -> int:
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    unsigned = crc32c(text.encode()) ^ _java_uuid_hash(instance)
    return unsigned - 2**32 if unsigned >= 2**31 else unsigned


@dataclass
class ClientInstance:
    instance_id: uuid.UUID
    client: Mapping[str, str]
    subscription_id: int
    metrics: tuple[str, ...]
    interval_ms: int
    version: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NO_ERROR

    def may_get(self, now_ms: int) -> bool:
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        accept = self.last_get_ms > self.last_push_ms
        if not accept:
            accept = now_ms - max(self.last_get_ms, self.last_push_ms) >= self.interval_ms
        if accept:
            self.last_push_ms = now_ms
        return accept


@dataclass(frozen=True)
class SubscriptionAnswer:
    instance_id: uuid.UUID
    subscription_id: int
    metrics: tuple[str, ...]
    interval_ms: int
    max_bytes: int


@dataclass(frozen=True)
class PushedMetric:
    """A metric a client pushed, decoded."""

    client_instance_id: uuid.UUID
    client_id: str
    metric: Metric

    @property
    def name(self) -> str:
        return self.metric.name

    @property
    def value(self) -> int | float | None:
        return self.metric.value


class ClientTelemetry:
    def __init__(self, max_bytes: int, path: Path | None = None) -> None:
        self.max_bytes = max_bytes
        self.path = path
        self.subscriptions: dict[str, Subscription] = {}
        self.configs: dict[str, dict[str, str]] = {}
        """Each subscription's configs as they were set."""
        self._version = 0
        self._instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self.pushed: deque[PushedMetric] = deque(maxlen=MAX_KEPT_METRICS)

    # ---- subscriptions -------------------------------------------------------------------

    @classmethod
    def open(cls, max_bytes: int, data_dir: Path | None) -> ClientTelemetry:
        """With the subscriptions kept in the data directory (Kafka keeps them in its
        metadata log)."""
        telemetry = cls(max_bytes, None if data_dir is None else data_dir / SUBSCRIPTIONS_FILE)
        if telemetry.path is not None and telemetry.path.exists():
            for name, configs in json.loads(telemetry.path.read_text()).items():
                telemetry.subscriptions[name] = parse_subscription(name, configs)
                telemetry.configs[name] = dict(configs)
        return telemetry

    def _write(self) -> None:
        if self.path is None:
            return
        write_atomically(self.path, json.dumps(self.configs, indent=1, sort_keys=True))

    def set_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Set (or with no configs, remove) a subscription from its CLIENT_METRICS configs;
        raises SubscriptionError."""
        subscription = parse_subscription(name, configs)
        if not configs:
            self.remove_subscription(name)
            return
        self.subscriptions[name] = subscription
        self.configs[name] = dict(configs)
        self._version += 1
        self._write()

    def remove_subscription(self, name: str) -> None:
        self.configs.pop(name, None)
        if self.subscriptions.pop(name, None) is not None:
            self._version += 1
            self._write()

    # ---- instances -----------------------------------------------------------------------

    def _instance(self, instance_id: uuid.UUID, client: Mapping[str, str]) -> ClientInstance:
        found = self._instances.get(instance_id)
        if found is None or found.version < self._version:
            found = self._new_instance(instance_id, client if found is None else found.client)
            self._instances[instance_id] = found
            while len(self._instances) > MAX_INSTANCES:
                self._instances.popitem(last=False)
        self._instances.move_to_end(instance_id)
        return found

    def _new_instance(self, instance_id: uuid.UUID, client: Mapping[str, str]) -> ClientInstance:
        identity = {**client, "client_instance_id": str(instance_id)}
        matching = [s for s in self.subscriptions.values() if s.matches(identity)]
        metrics = sorted({m for s in matching for m in s.metrics})
        if ALL_METRICS in metrics:
            metrics = [ALL_METRICS]
        interval = min([DEFAULT_INTERVAL_MS, *(s.interval_ms for s in matching)])
        return ClientInstance(
            instance_id,
            identity,
            subscription_id(metrics, interval, instance_id),
            tuple(metrics),
            interval,
            self._version,
        )

    def _new_instance_id(self) -> uuid.UUID:
        while True:
            candidate = uuid.uuid4()
            if candidate not in self._instances and candidate not in _RESERVED_UUIDS:
                return candidate

    # ---- requests ------------------------------------------------------------------------

    def get_subscription(
        self, instance_id: uuid.UUID, client: Mapping[str, str], now_ms: int
    ) -> SubscriptionAnswer:
        """GetTelemetrySubscriptions; raises TelemetryError."""
        if instance_id == ZERO_UUID:
            instance_id = self._new_instance_id()
        instance = self._instance(instance_id, client)
        exempt = instance.last_error in (
            ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        )
        if not instance.may_get(now_ms) and not exempt:
            raise TelemetryError(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{instance_id}] arrived before the next push "
                "interval time",
            )
        instance.last_error = ErrorCode.NO_ERROR
        return SubscriptionAnswer(
            instance_id,
            instance.subscription_id,
            instance.metrics,
            instance.interval_ms,
            self.max_bytes,
        )

    def push(
        self,
        instance_id: uuid.UUID,
        client: Mapping[str, str],
        subscription: int,
        terminating: bool,
        compression: int,
        payload: bytes,
        now_ms: int,
    ) -> None:
        """PushTelemetry; raises TelemetryError."""
        if instance_id in _RESERVED_UUIDS:
            raise TelemetryError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid request from the client [{instance_id}], invalid client instance id",
            )
        instance = self._instance(instance_id, client)
        try:
            self._check_push(instance, subscription, terminating, compression, payload, now_ms)
        except TelemetryError as exc:
            instance.last_error = exc.error_code
            raise
        finally:
            instance.terminating = terminating
        if payload:
            self._export(instance, compression, payload)
        instance.last_error = ErrorCode.NO_ERROR

    def _check_push(
        self,
        instance: ClientInstance,
        subscription: int,
        terminating: bool,
        compression: int,
        payload: bytes,
        now_ms: int,
    ) -> None:
        name = instance.instance_id
        if instance.terminating:
            raise TelemetryError(
                ErrorCode.INVALID_REQUEST,
                f"Client [{name}] sent the previous request with state terminating to TRUE, "
                "can not acceptany requests after that",
            )
        if not instance.may_push(now_ms) and not terminating:
            raise TelemetryError(
                ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                f"Request from the client [{name}] arrived before the next push interval time",
            )
        if subscription != instance.subscription_id:
            raise TelemetryError(
                ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
                f"Unknown client subscription id for the client [{name}]",
            )
        if not 0 <= compression <= MAX_COMPRESSION_TYPE:
            raise TelemetryError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"Unknown compression type [{compression}] is received in telemetry request "
                f"from [{name}]",
            )
        if len(payload) > self.max_bytes:
            raise TelemetryError(
                ErrorCode.TELEMETRY_TOO_LARGE,
                f"Telemetry request from [{name}] is larger than the maximum allowed size "
                f"[{self.max_bytes}]",
            )

    def _export(self, instance: ClientInstance, compression: int, payload: bytes) -> None:
        try:
            data = decompress(compression, payload, self.max_bytes)
            metrics = decode_metrics_data(data)
        except CompressionError as exc:
            too_large = "exceeds the limit" in str(exc)
            code = ErrorCode.TELEMETRY_TOO_LARGE if too_large else ErrorCode.INVALID_RECORD
            instance.last_error = code
            raise TelemetryError(code, str(exc)) from exc
        except OtlpError as exc:
            instance.last_error = ErrorCode.INVALID_RECORD
            raise TelemetryError(ErrorCode.INVALID_RECORD, str(exc)) from exc
        client_id = instance.client.get("client_id", "")
        self.pushed.extend(PushedMetric(instance.instance_id, client_id, m) for m in metrics)
