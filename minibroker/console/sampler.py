"""Rates and lag over time, sampled by the console (bounded rings, in memory only).

Every second: the bytes and records appended to the user topics (from log sizes and high
watermarks; a drop from retention or deletion counts as zero) and the records consumed,
measured as the advance of the groups' committed offsets (the broker keeps no count of
fetched bytes). Every LAG_INTERVAL_S seconds: each group's total lag, the last
LAG_HISTORY_POINTS kept for at most MAX_LAG_GROUPS groups.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from minibroker.console.views import partition_end, partition_size, total_lag
from minibroker.server.broker import Broker

RATE_INTERVAL_S = 1.0
RATE_HISTORY_POINTS = 300
LAG_INTERVAL_S = 3.0
LAG_HISTORY_POINTS = 200
MAX_LAG_GROUPS = 500


@dataclass(frozen=True)
class Totals:
    produced_bytes: int
    produced_records: int
    committed_records: int
    per_topic_records: dict[str, int]


@dataclass(frozen=True)
class Rates:
    time: float  # wall clock, seconds
    produce_bytes_per_s: float
    produce_records_per_s: float
    consume_records_per_s: float


def totals(broker: Broker) -> Totals:
    produced_bytes = 0
    per_topic: dict[str, int] = {}
    for topic in broker.cluster.topics.values():
        if topic.internal:
            continue
        per_topic[topic.name] = sum(partition_end(p) for p in topic.partitions)
        produced_bytes += sum(partition_size(p) for p in topic.partitions)
    committed = sum(
        value.offset for group in broker.groups.groups.values() for value in group.offsets.values()
    )
    return Totals(produced_bytes, sum(per_topic.values()), committed, per_topic)


def _rate(now: int, before: int, seconds: float) -> float:
    return max(0, now - before) / seconds


class Sampler:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.rates: deque[Rates] = deque(maxlen=RATE_HISTORY_POINTS)
        self.topic_rates: dict[str, float] = {}
        self.lag_history: dict[str, deque[tuple[float, int]]] = {}
        self._last: Totals | None = None
        self._last_at = 0.0
        self._next_lag_at = 0.0

    def sample(self) -> None:
        now_mono = time.monotonic()
        current = totals(self._broker)
        last, seconds = self._last, now_mono - self._last_at
        if last is not None and seconds > 0:
            self.rates.append(
                Rates(
                    round(time.time(), 3),
                    _rate(current.produced_bytes, last.produced_bytes, seconds),
                    _rate(current.produced_records, last.produced_records, seconds),
                    _rate(current.committed_records, last.committed_records, seconds),
                )
            )
            self.topic_rates = {
                name: _rate(records, last.per_topic_records.get(name, records), seconds)
                for name, records in current.per_topic_records.items()
            }
        self._last, self._last_at = current, now_mono
        if now_mono >= self._next_lag_at:
            self._next_lag_at = now_mono + LAG_INTERVAL_S
            self.sample_lag()

    def sample_lag(self) -> None:
        now = round(time.time(), 3)
        groups = self._broker.groups.listed_groups()
        present = {group.group_id for group in groups}
        for gone in [group_id for group_id in self.lag_history if group_id not in present]:
            del self.lag_history[gone]
        for group in groups:
            history = self.lag_history.get(group.group_id)
            if history is None:
                if len(self.lag_history) >= MAX_LAG_GROUPS:
                    continue
                history = self.lag_history[group.group_id] = deque(maxlen=LAG_HISTORY_POINTS)
            history.append((now, total_lag(self._broker, group)))

    def group_history(self, group_id: str) -> list[tuple[float, int]]:
        return list(self.lag_history.get(group_id, ()))
