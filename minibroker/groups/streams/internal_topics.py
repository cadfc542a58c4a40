"""Creation of the internal topics a streams topology needs, as Kafka 4.3's
`AutoTopicCreationManager.createStreamsInternalTopics`.

The coordinator answers the missing repartition and changelog topics with the heartbeat
(MISSING_INTERNAL_TOPICS); the broker then creates them with the partition count the
coordinator decided, the topology's topic configs and replication factor (the broker's
`default.replication.factor` when the topology leaves it at 0), placed over the live nodes.
A failed creation is cached for twice the group's heartbeat interval (Kafka's
`ExpiringErrorCache`, at most 1000 entries): meanwhile the topic is not tried again and the
MISSING_INTERNAL_TOPICS status of each heartbeat names the failure. Authorization (CREATE) is
the handler's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping

from minibroker.cluster.assignments import placed_replicas
from minibroker.cluster.state import Cluster, TopicError, check_topic_name
from minibroker.groups.streams.model import TopicInfo

log = logging.getLogger(__name__)

# Kafka's DefaultAutoTopicCreationManager.DEFAULT_TOPIC_ERROR_CACHE_CAPACITY.
ERROR_CACHE_CAPACITY = 1000
# How many failures a status names (Kafka's KafkaApis).
MAX_ERRORS_TO_INCLUDE = 3


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class InternalTopicCreator:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        # Topic name -> (error message, the instant it expires in monotonic milliseconds).
        self._errors: dict[str, tuple[str, int]] = {}

    def create(
        self,
        topics: Mapping[str, TopicInfo],
        usable_nodes: Collection[int],
        default_replication_factor: int,
        ttl_ms: int,
    ) -> str | None:
        """Create the topics not backing off after a failure; the failures still cached, as
        a status detail ("a (message), b (message)"), or None."""
        now = _now_ms()
        for name in sorted(topics):
            if name in self.cluster.topics or self._backing_off(name, now):
                continue
            error = self._create_one(topics[name], usable_nodes, default_replication_factor)
            if error is None:
                self._errors.pop(name, None)
            else:
                self._remember(name, error, _now_ms(), ttl_ms)
        return self._failures(sorted(topics), _now_ms())

    def _backing_off(self, name: str, now: int) -> bool:
        cached = self._errors.get(name)
        return cached is not None and now < cached[1]

    def _create_one(
        self, info: TopicInfo, usable_nodes: Collection[int], default_replication_factor: int
    ) -> str | None:
        replication = info.replication_factor or default_replication_factor
        try:
            check_topic_name(info.name)
            assignments = placed_replicas(usable_nodes, info.partitions, replication)
            self.cluster.create_topic(
                info.name,
                info.partitions,
                dict(info.configs),
                assignments if replication > 1 else None,
            )
        except TopicError as exc:
            log.warning("internal topic %s not created: %s", info.name, exc.message)
            return exc.message
        log.info("created internal topic %s with %d partitions", info.name, info.partitions)
        return None

    def _remember(self, name: str, error: str, now: int, ttl_ms: int) -> None:
        self._errors[name] = (error, now + ttl_ms)
        self._errors = {k: v for k, v in self._errors.items() if now < v[1]}
        while len(self._errors) > ERROR_CACHE_CAPACITY:
            earliest = min(self._errors, key=lambda key: self._errors[key][1])
            del self._errors[earliest]

    def _failures(self, names: list[str], now: int) -> str | None:
        errors = [(name, self._errors[name][0]) for name in names if self._backing_off(name, now)]
        if not errors:
            return None
        shown = ", ".join(f"{name} ({error})" for name, error in errors[:MAX_ERRORS_TO_INCLUDE])
        if len(errors) > MAX_ERRORS_TO_INCLUDE:
            shown += f" and {len(errors) - MAX_ERRORS_TO_INCLUDE} more"
        return shown
