"""The Kafka connector's options, parsed and checked as Spark's `KafkaSourceProvider` does.

Pure Python (no pyspark): the data source classes turn Spark's case-insensitive option map
into a `SourceOptions` or `SinkOptions` here, so a bad option fails when the query is built.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]

EARLIEST = -2
LATEST = -1

_SOURCE_REJECTED = {
    "kafka.auto.offset.reset": "Set startingOffsets instead.",
    "kafka.key.deserializer": "Keys are always read as bytes; cast them in the query.",
    "kafka.value.deserializer": "Values are always read as bytes; cast them in the query.",
    "kafka.enable.auto.commit": "The source commits no offsets to Kafka.",
    "kafka.interceptor.classes": "Interceptors are not supported.",
}
_SINK_REJECTED = {
    "kafka.key.serializer": "Keys are written as bytes; cast the key column to binary or string.",
    "kafka.value.serializer": "Values are written as bytes; cast the value column instead.",
}
_STRATEGIES = ("error", "latest")
_ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
PYTHON_CLIENTS = ("auto", "confluent-kafka", "kafka-python")
# Spark's defaults: `KafkaSourceProvider` (groupIdPrefix) and `KafkaMicroBatchStream`.
STREAM_GROUP_PREFIX = "spark-kafka-source"
BATCH_GROUP_PREFIX = "spark-kafka-relation"
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
_DURATION_UNITS_MS = {
    "ms": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip


class KafkaOptionError(ValueError):
    """An option is missing, malformed, or not allowed in this kind of query."""


@dataclass(frozen=True)
class Earliest:
    pass


@dataclass(frozen=True)
class Latest:
    pass


@dataclass(frozen=True)
class SpecificOffsets:
    """Per-partition offsets; -2 means earliest, -1 latest (Kafka's JSON convention)."""

    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestamps:
    """Per-partition timestamps (ms): the first offset whose timestamp is at or after it."""

    timestamps: dict[TopicPartition, int]


@dataclass(frozen=True)
class GlobalTimestamp:
    """One timestamp (ms) for every partition."""

    timestamp: int


OffsetSpec = Earliest | Latest | SpecificOffsets | SpecificTimestamps | GlobalTimestamp


@dataclass(frozen=True)
class Subscription:
    """Exactly one of `assign`, `subscribe`, `subscribePattern`."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.topics


@dataclass(frozen=True)
class SourceOptions:
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec
    fail_on_no_matching_start: bool
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    max_records_per_partition: int | None
    fail_on_data_loss: bool
    include_headers: bool
    poll_timeout_ms: int
    client: dict[str, str] = field(default_factory=dict)
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    group_id_prefix: str = STREAM_GROUP_PREFIX
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    python_client: str = "auto"

    def executor_group_id(self, unique: str) -> str:
        """Spark's executor consumers: `kafka.group.id` if given, else `<prefix>-<unique>-executor`
        (they only assign partitions: the group never gets members or offsets)."""
        return self.client.get("group.id") or f"{self.group_id_prefix}-{unique}-executor"


@dataclass(frozen=True)
class SinkOptions:
    topic: str | None
    include_headers: bool
    client: dict[str, str] = field(default_factory=dict)
    python_client: str = "auto"
    exactly_once: bool = False
    transactional_id_prefix: str | None = None


def idempotent_by_default(properties: Mapping[str, str]) -> bool:
    """As Kafka's Java producer: idempotence is on unless `acks` other than all is given."""
    return properties.get("acks", "all").strip().lower() in ("all", "-1")


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in options.items()}


def client_settings(options: Mapping[str, str]) -> dict[str, str]:
    """The `kafka.*` options without their prefix: Kafka client properties."""
    return {
        key[len("kafka.") :]: value for key, value in options.items() if key.startswith("kafka.")
    }


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() not in ("true", "false"):
        raise KafkaOptionError(f"Option '{name}' must be true or false, not {raw!r}")
    return raw.strip().lower() == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise KafkaOptionError(f"Option '{name}' must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise KafkaOptionError(f"Option '{name}' must be a positive integer, not {raw!r}")
    return value


def _non_negative_int(options: Mapping[str, str], name: str, default: int) -> int:
    raw = options.get(name.lower())
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise KafkaOptionError(f"Option '{name}' must be a non-negative integer, not {raw!r}")
    return value


def _duration_ms(options: Mapping[str, str], name: str, default: int) -> int:
    """Spark's `JavaUtils.timeStringAsMs`: `15m`, `30s`, `100ms`, or a bare number of ms."""
    raw = options.get(name.lower())
    if raw is None:
        return default
    found = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", raw.lower())
    if found is None or (found.group(2) and found.group(2) not in _DURATION_UNITS_MS):
        raise KafkaOptionError(f"Option '{name}' must be a duration such as 15m or 30s: {raw!r}")
    return int(found.group(1)) * _DURATION_UNITS_MS.get(found.group(2) or "ms", 1)


def _python_client(options: Mapping[str, str]) -> str:
    chosen = options.get("pythonclient", "auto").strip().lower()
    if chosen not in PYTHON_CLIENTS:
        raise KafkaOptionError(f"Option 'pythonClient' must be one of {PYTHON_CLIENTS}")
    return chosen


def _json_object(name: str, raw: str) -> dict[str, Any]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise KafkaOptionError(
            f'Option \'{name}\' must be a JSON object like {{"topicA":{{"0":23,"1":-1}}}}, '
            f"got {raw!r}"
        )
    return parsed


def _per_partition(name: str, raw: str) -> dict[TopicPartition, int]:
    values: dict[TopicPartition, int] = {}
    for topic, partitions in _json_object(name, raw).items():
        if not isinstance(partitions, dict):
            raise KafkaOptionError(f"Option '{name}': topic {topic!r} needs a partition object")
        for partition, value in partitions.items():
            if not isinstance(value, int) or not str(partition).lstrip("-").isdigit():
                raise KafkaOptionError(f"Option '{name}': bad entry {topic}/{partition}: {value!r}")
            values[(topic, int(partition))] = value
    return values


def parse_subscription(options: Mapping[str, str]) -> Subscription:
    given = [name for name in ("assign", "subscribe", "subscribepattern") if name in options]
    if len(given) != 1:
        raise KafkaOptionError(
            "Exactly one of the options 'assign', 'subscribe' or 'subscribePattern' must be "
            f"specified (got {len(given)})"
        )
    raw = options[given[0]].strip()
    if given[0] == "subscribe":
        topics = tuple(topic.strip() for topic in raw.split(",") if topic.strip())
        if not topics:
            raise KafkaOptionError(f"No topics to subscribe to in 'subscribe': {raw!r}")
        return Subscription(topics=topics)
    if given[0] == "subscribepattern":
        if not raw:
            raise KafkaOptionError("Pattern to subscribe is empty")
        try:
            re.compile(raw)
        except re.error as exc:
            raise KafkaOptionError(f"Bad 'subscribePattern' {raw!r}: {exc}") from None
        return Subscription(pattern=raw)
    assigned: list[TopicPartition] = []
    for topic, partitions in _json_object("assign", raw).items():
        if not isinstance(partitions, list) or not all(isinstance(p, int) for p in partitions):
            raise KafkaOptionError(f"Option 'assign' needs a list of partitions for {topic!r}")
        assigned.extend((topic, partition) for partition in partitions)
    if not assigned:
        raise KafkaOptionError(f"No partitions to assign in 'assign': {raw!r}")
    return Subscription(assigned=tuple(sorted(set(assigned))))


def _offset_spec(options: Mapping[str, str], prefix: str, default: OffsetSpec) -> OffsetSpec:
    """Timestamps win over per-partition timestamps, which win over offsets (as in Spark)."""
    timestamp = options.get(f"{prefix}timestamp")
    if timestamp is not None:
        try:
            return GlobalTimestamp(int(timestamp))
        except ValueError:
            raise KafkaOptionError(f"Bad '{prefix}Timestamp': {timestamp!r}") from None
    by_timestamp = options.get(f"{prefix}offsetsbytimestamp")
    if by_timestamp is not None:
        return SpecificTimestamps(_per_partition(f"{prefix}OffsetsByTimestamp", by_timestamp))
    offsets = options.get(f"{prefix}offsets")
    if offsets is None:
        return default
    if offsets.strip().lower() == "earliest":
        return Earliest()
    if offsets.strip().lower() == "latest":
        return Latest()
    return SpecificOffsets(_per_partition(f"{prefix}Offsets", offsets))


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if isinstance(starting, Latest):
        raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsets) and LATEST in starting.offsets.values():
        raise KafkaOptionError(
            "starting offset for a partition can't be latest (-1) for batch queries on Kafka"
        )
    if isinstance(ending, Earliest):
        raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, SpecificOffsets) and EARLIEST in ending.offsets.values():
        raise KafkaOptionError(
            "ending offset for a partition can't be earliest (-2) for batch queries on Kafka"
        )


def _check_client_options(options: Mapping[str, str], rejected: Mapping[str, str]) -> None:
    if not options.get("kafka.bootstrap.servers"):
        raise KafkaOptionError("Option 'kafka.bootstrap.servers' must be specified")
    for name, why in rejected.items():
        if name in options:
            raise KafkaOptionError(
                f"Kafka option '{name[len('kafka.') :]}' is not supported. {why}"
            )
    level = options.get("kafka.isolation.level", "read_uncommitted")
    if level not in _ISOLATION_LEVELS:
        raise KafkaOptionError(f"kafka.isolation.level must be one of {_ISOLATION_LEVELS}")


def parse_source_options(raw: Mapping[str, str], streaming: bool) -> SourceOptions:
    options = _lower(raw)
    _check_client_options(options, _SOURCE_REJECTED)
    subscription = parse_subscription(options)
    starting = _offset_spec(options, "starting", Latest() if streaming else Earliest())
    ending = _offset_spec(options, "ending", Latest())
    if streaming:
        for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if name in options:
                raise KafkaOptionError(f"Option '{name}' is for batch queries only")
    else:
        _check_batch_bounds(starting, ending)
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in _STRATEGIES:
        raise KafkaOptionError(f"startingOffsetsByTimestampStrategy must be one of {_STRATEGIES}")
    return SourceOptions(
        subscription=subscription,
        starting=starting,
        ending=ending,
        fail_on_no_matching_start=strategy == "error",
        max_offsets_per_trigger=_positive_int(options, "maxOffsetsPerTrigger"),
        min_partitions=_positive_int(options, "minPartitions"),
        max_records_per_partition=_positive_int(options, "maxRecordsPerPartition"),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        include_headers=_bool(options, "includeHeaders", False),
        poll_timeout_ms=_positive_int(options, "kafkaConsumer.pollTimeoutMs") or 120_000,
        client=client_settings(options),
        min_offsets_per_trigger=_positive_int(options, "minOffsetsPerTrigger"),
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        group_id_prefix=options.get(
            "groupidprefix", STREAM_GROUP_PREFIX if streaming else BATCH_GROUP_PREFIX
        ),
        fetch_offset_num_retries=_positive_int(options, "fetchOffset.numRetries") or 3,
        fetch_offset_retry_interval_ms=_non_negative_int(
            options, "fetchOffset.retryIntervalMs", 1000
        ),
        python_client=_python_client(options),
    )


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    options = _lower(raw)
    _check_client_options(options, _SINK_REJECTED)
    exactly_once = _bool(options, "exactlyOnce", False)
    prefix = options.get("transactionalidprefix")
    if exactly_once and not prefix:
        raise KafkaOptionError(
            "Option 'exactlyOnce' needs 'transactionalIdPrefix': a name unique to the query "
            "and the same at every restart (its transactional ids are <prefix>-<task>)"
        )
    if exactly_once and "kafka.transactional.id" in options:
        raise KafkaOptionError("Set transactionalIdPrefix, not kafka.transactional.id")
    return SinkOptions(
        exactly_once=exactly_once,
        transactional_id_prefix=prefix,
        topic=options.get("topic"),
        include_headers=_bool(options, "includeHeaders", False),
        client=client_settings(options),
        python_client=_python_client(options),
    )
