"""kafka-python clients built from the connector's `kafka.*` options.

Kafka client properties (`bootstrap.servers`, `security.protocol`, `isolation.level`, ...)
become kafka-python settings by replacing dots with underscores, with the type of
kafka-python's default. Properties kafka-python does not have (Java-only ones such as
`ssl.truststore.location`) are logged and ignored, as Kafka's clients do with unknown
properties.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.serializer import Serializer

from minibroker.spark.options import idempotent_by_default

log = logging.getLogger(__name__)


class NullValue:
    """Stands for a null value; kafka-python refuses `send()` with both key and value None."""


NULL_VALUE = NullValue()


class _ValueSerializer(Serializer):
    def serialize(self, topic: str, headers: Any, data: bytes | NullValue) -> bytes | None:
        return None if data is NULL_VALUE else data  # type: ignore[return-value]


def _typed(name: str, raw: str, default: object) -> object:
    if name == "acks" and raw.strip().lower() == "all":
        return -1
    if isinstance(default, bool):
        return raw.strip().lower() == "true"
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return raw


def kafka_python_settings(
    properties: Mapping[str, str], defaults: Mapping[str, object]
) -> dict[str, object]:
    settings: dict[str, object] = {}
    for name, raw in properties.items():
        key = name.replace(".", "_")
        if key not in defaults:
            log.warning("Kafka property %r has no kafka-python equivalent: ignored", name)
            continue
        settings[key] = _typed(name, raw, defaults[key])
    return settings


def consumer(properties: Mapping[str, str], **overrides: object) -> Any:
    """A consumer without a group: it only assigns, seeks, polls and lists offsets."""
    settings: dict[str, object] = {
        "max_poll_records": 10_000,
        "max_partition_fetch_bytes": 8 * 1024 * 1024,
        "allow_auto_create_topics": False,
        **kafka_python_settings(properties, KafkaConsumer.DEFAULT_CONFIG),
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": "none",
        **overrides,
    }
    return KafkaConsumer(**settings)


def producer(properties: Mapping[str, str]) -> Any:
    """Kafka's producer defaults (acks=all, idempotence); `kafka.*` options override them."""
    settings: dict[str, object] = {
        "linger_ms": 5,
        "batch_size": 256 * 1024,
        "acks": "all",
        "enable_idempotence": idempotent_by_default(properties),
        **kafka_python_settings(properties, KafkaProducer.DEFAULT_CONFIG),
        "value_serializer": _ValueSerializer(),
    }
    return KafkaProducer(**settings)
