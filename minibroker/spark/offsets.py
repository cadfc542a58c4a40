"""Driver side: which partitions to read, and from which offset to which.

Mirrors Spark's `KafkaOffsetReaderAdmin` and `KafkaOffsetRangeCalculator`: topic-partitions
come from Metadata, offsets from ListOffsets (earliest, latest, by timestamp) with the
query's isolation level, and a batch's ranges are split to honour `minPartitions` and
`maxRecordsPerPartition`. Offsets travel as Spark's Kafka connector writes them in the
checkpoint: `{"topic": {"partition": nextOffset}}`.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kafka import TopicPartition as KafkaTopicPartition

from minibroker.spark import client
from minibroker.spark.options import (
    EARLIEST,
    LATEST,
    Earliest,
    GlobalTimestamp,
    Latest,
    OffsetSpec,
    SourceOptions,
    SpecificOffsets,
    SpecificTimestamps,
    TopicPartition,
)

log = logging.getLogger(__name__)

Offsets = dict[TopicPartition, int]
T = TypeVar("T")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class KafkaDataLossError(RuntimeError):
    """Records the query should have read are gone (failOnDataLoss=true)."""


def report_data_loss(fail_on_data_loss: bool, message: str) -> None:
    if fail_on_data_loss:
        raise KafkaDataLossError(
            f"{message}. Some data may have been lost because they are not available in "
            "Kafka any more; either the data was aged out by Kafka or the topic may have been "
            "deleted before all the data in the topic was processed. If you don't want your "
            'streaming query to fail on such cases, set the source option "failOnDataLoss" '
            'to "false".'
        )
    log.warning("%s. Some data may have been lost (failOnDataLoss=false: going on).", message)


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The checkpoint shape, `{"topic": {"partition": offset}}`."""
    shaped: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        shaped.setdefault(topic, {})[str(partition)] = offset
    return shaped


def from_json(shaped: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in shaped.items()
        for partition, offset in partitions.items()
    }


@dataclass(frozen=True)
class OffsetRange:
    """One Spark task: offsets `[start, end)` of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class OffsetReader:
    """Metadata and ListOffsets through one lazily created consumer (driver only)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._consumer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_consumer": None}

    @property
    def consumer(self) -> Any:
        if self._consumer is None:
            self._consumer = client.consumer(self.options.client)
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _retried(self, fetch: Callable[[], T]) -> T:
        """Spark's `fetchOffset.numRetries` attempts, `fetchOffset.retryIntervalMs` apart,
        each after a failure on a new consumer."""
        attempts = max(self.options.fetch_offset_num_retries, 1)
        for attempt in range(1, attempts + 1):
            try:
                return fetch()
            except Exception as exc:
                if attempt == attempts:
                    raise
                log.warning("Error in attempt %d getting Kafka offsets: %r", attempt, exc)
                self.close()
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    def topic_partitions(self) -> list[TopicPartition]:
        return self._retried(self._topic_partitions)

    def _topic_partitions(self) -> list[TopicPartition]:
        subscription = self.options.subscription
        if subscription.assigned:
            return list(subscription.assigned)
        topics = self.consumer.topics()
        found: list[TopicPartition] = []
        for topic in sorted(topics - INTERNAL_TOPICS):
            if subscription.matches(topic):
                found.extend((topic, p) for p in self.consumer.partitions_for_topic(topic))
        return sorted(found)

    def _list(self, method: str, partitions: Iterable[TopicPartition]) -> Offsets:
        wanted = [KafkaTopicPartition(topic, partition) for topic, partition in partitions]
        if not wanted:
            return {}
        answered = self._retried(lambda: getattr(self.consumer, method)(wanted))
        return {(tp.topic, tp.partition): offset for tp, offset in answered.items()}

    def earliest(self, partitions: Iterable[TopicPartition]) -> Offsets:
        return self._list("beginning_offsets", partitions)

    def latest(self, partitions: Iterable[TopicPartition]) -> Offsets:
        """End offsets: the high watermark, or the last stable offset for read_committed."""
        return self._list("end_offsets", partitions)

    def by_timestamp(self, timestamps: Mapping[TopicPartition, int], starting: bool) -> Offsets:
        """Offsets of the first records at or after each timestamp; none found means latest,
        or an error when starting with startingOffsetsByTimestampStrategy=error."""
        wanted = {KafkaTopicPartition(t, p): ts for (t, p), ts in timestamps.items()}
        answered = self._retried(lambda: self.consumer.offsets_for_times(wanted)) if wanted else {}
        resolved: Offsets = {}
        missing: list[TopicPartition] = []
        for tp, found in answered.items():
            if found is not None:
                resolved[(tp.topic, tp.partition)] = found.offset
                continue
            if starting and self.options.fail_on_no_matching_start:
                raise ValueError(
                    f"No offset matched from request of topic-partition {tp.topic}-"
                    f"{tp.partition} and timestamp {wanted[tp]}."
                )
            missing.append((tp.topic, tp.partition))
        return {**resolved, **self.latest(missing)}

    def resolve(
        self, spec: OffsetSpec, partitions: list[TopicPartition], starting: bool
    ) -> Offsets:
        if isinstance(spec, Earliest):
            return self.earliest(partitions)
        if isinstance(spec, Latest):
            return self.latest(partitions)
        if isinstance(spec, GlobalTimestamp):
            return self.by_timestamp({tp: spec.timestamp for tp in partitions}, starting)
        given = spec.offsets if isinstance(spec, SpecificOffsets) else spec.timestamps
        if set(given) != set(partitions):
            raise ValueError(
                f"If {'starting' if starting else 'ending'} offsets or timestamps are given per "
                f"partition, you must specify all TopicPartitions: the query reads "
                f"{sorted(partitions)}, the option names {sorted(given)}. Use -1 for latest, "
                "-2 for earliest."
            )
        if isinstance(spec, SpecificTimestamps):
            return self.by_timestamp(spec.timestamps, starting)
        earliest = self.earliest(tp for tp, off in given.items() if off == EARLIEST)
        latest = self.latest(tp for tp, off in given.items() if off == LATEST)
        return {**given, **earliest, **latest}


def rate_limit(start: Offsets, end: Offsets, limit: int) -> Offsets:
    """Spread `limit` offsets over the partitions in proportion to their lag (Spark's
    `KafkaMicroBatchStream.rateLimit`); a small partition gets at least one."""
    sizes = {tp: until - start[tp] for tp, until in end.items() if until - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(end)
    limited = dict(end)
    for tp, size in sizes.items():
        share = limit * (size / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        limited[tp] = min(end[tp], start[tp] + step)
    return limited


def plan_ranges(
    start: Offsets,
    end: Offsets,
    min_partitions: int | None,
    max_records_per_partition: int | None,
) -> list[OffsetRange]:
    """One range per partition with data, split like Spark's `KafkaOffsetRangeCalculator`."""
    ranges = [
        OffsetRange(topic, partition, start[(topic, partition)], until)
        for (topic, partition), until in sorted(end.items())
        if until > start[(topic, partition)]
    ]
    if max_records_per_partition is not None:
        ranges = [
            piece
            for whole in ranges
            for piece in _split(whole, math.ceil(whole.size / max_records_per_partition))
        ]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    ideal = sum(whole.size for whole in ranges) / min_partitions
    return [
        piece for whole in ranges for piece in _split(whole, max(math.ceil(whole.size / ideal), 1))
    ]


def _split(whole: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1:
        return [whole]
    bounds = [whole.start + whole.size * i // parts for i in range(parts + 1)]
    return [
        OffsetRange(whole.topic, whole.partition, low, high)
        for low, high in itertools.pairwise(bounds)
        if high > low
    ]
