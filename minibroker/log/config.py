"""Per-partition log settings, by Kafka's topic-level names."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_LONG_MAX = 9223372036854775807


@dataclass(frozen=True)
class LogConfig:
    """Kafka's defaults; the topic-level property name is in each comment."""

    segment_bytes: int = 1073741824  # segment.bytes
    segment_ms: int = 604800000  # segment.ms
    segment_index_bytes: int = 10485760  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_ms: int = 604800000  # retention.ms (-1 unlimited)
    retention_bytes: int = -1  # retention.bytes
    flush_messages: int = _LONG_MAX  # flush.messages
    flush_ms: int = _LONG_MAX  # flush.ms
    fsync_on_ack: bool = False  # minibroker option: fsync before acknowledging
    cleanup_policy: str = "delete"  # cleanup.policy: delete, compact or compact,delete
    delete_retention_ms: int = 86400000  # delete.retention.ms (tombstones, once cleaned)
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio

    @property
    def deletes(self) -> bool:
        """cleanup.policy includes delete: retention.ms / retention.bytes apply."""
        return "delete" in self.cleanup_policy.split(",")

    def with_topic_overrides(self, overrides: Mapping[str, str]) -> LogConfig:
        """This config with the topic-level properties in `overrides` applied (others ignored)."""
        changes: dict[str, object] = {}
        for name, value in overrides.items():
            field = TOPIC_CONFIG_FIELDS.get(name)
            if field is None:
                continue
            changes[field] = _FIELD_PARSERS.get(field, int)(value)
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


TOPIC_CONFIG_FIELDS: dict[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "minibroker.fsync.on.ack": "fsync_on_ack",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
}

_FIELD_PARSERS: dict[str, Callable[[str], object]] = {
    "fsync_on_ack": lambda value: value.strip().lower() == "true",
    "cleanup_policy": lambda value: value.replace(" ", "").lower(),
    "min_cleanable_dirty_ratio": float,
}
