"""Internal topics of a streams topology, as Kafka 4.3's `InternalTopicManager` (with its
`RepartitionTopics`, `CopartitionedTopicsEnforcer` and `ChangelogTopics`) configures them.

`configure_topics(topology, partition_count)` checks the topology against the topics that
exist (`partition_count(name)`: their partition count, None when missing) and answers a
`ConfiguredTopology`:

1. Every external source topic must exist, else MISSING_SOURCE_TOPICS ("Source topics a, b
   are missing.").
2. The partition count of each repartition topic: the one the topology fixes, else the widest
   source (external or repartition) of the subtopology writing it, computed in rounds until
   every count is known (a loop that never resolves, or a repartition source topic no
   subtopology writes, is STREAMS_INVALID_TOPOLOGY, raised as `InvalidTopology`).
3. Copartition groups: their external topics must have equal partition counts and their
   repartition topics are given that count; a mismatch is INCORRECTLY_PARTITIONED_TOPICS.
4. Each changelog topic gets the partition count of its subtopology's widest source topic
   (a changelog that is also a source topic is not an internal topic).
5. An internal topic that exists with another partition count is INCORRECTLY_PARTITIONED_TOPICS
   ("Existing topic t has different number of partitions: expected 4, found 2"); the ones that
   do not exist are MISSING_INTERNAL_TOPICS ("Internal topics are missing: ...") and are
   returned to be created.

Only when all of that holds is the topology ready: each subtopology then has as many tasks
as its widest source topic has partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from minibroker.groups.streams.model import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    ConfiguredTopology,
    StreamsTopology,
    Subtopology,
    TopicInfo,
    TopologyStatus,
)

PartitionCount = Callable[[str], int | None]


class InvalidTopology(Exception):
    """Kafka's StreamsInvalidTopologyException: the heartbeat answers STREAMS_INVALID_TOPOLOGY."""


class _TopicConfigurationError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.status = TopologyStatus(code, detail)


def summarize_topics(topics: Iterable[str]) -> str:
    """Kafka's summarizeTopics: up to three names, then how many more."""
    names = list(topics)
    if not names:
        return "<none>"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} additional topics" if len(names) > 3 else "")


def configure_topics(
    topology: StreamsTopology, partition_count: PartitionCount
) -> ConfiguredTopology:
    try:
        _check_source_topics(topology, partition_count)
        decided = _decide_partition_counts(topology, partition_count)
        to_create = _missing_internal_topics(topology, partition_count, decided)
    except _TopicConfigurationError as exc:
        return ConfiguredTopology(topology.epoch, None, exc.status)
    if to_create:
        status = TopologyStatus(
            MISSING_INTERNAL_TOPICS,
            "Internal topics are missing: " + summarize_topics(sorted(to_create)),
        )
        return ConfiguredTopology(topology.epoch, None, status, to_create, decided)
    tasks = {
        sub.subtopology_id: _number_of_tasks(sub, partition_count, decided)
        for sub in topology.subtopologies.values()
    }
    return ConfiguredTopology(topology.epoch, tasks, None, {}, decided)


def _check_source_topics(topology: StreamsTopology, partition_count: PartitionCount) -> None:
    missing = sorted(
        {
            name
            for sub in topology.subtopologies.values()
            for name in sub.source_topics
            if partition_count(name) is None
        }
    )
    if missing:
        raise _TopicConfigurationError(
            MISSING_SOURCE_TOPICS, f"Source topics {summarize_topics(missing)} are missing."
        )


def _count(name: str, partition_count: PartitionCount, decided: dict[str, int]) -> int | None:
    """Kafka's getPartitionCount: an existing topic's count, else the count decided for it."""
    existing = partition_count(name)
    return existing if existing is not None else decided.get(name)


def _decide_partition_counts(
    topology: StreamsTopology, partition_count: PartitionCount
) -> dict[str, int]:
    subtopologies = sorted(topology.subtopologies.values(), key=lambda sub: sub.subtopology_id)
    decided = _repartition_counts(subtopologies, partition_count)
    _enforce_copartitioning(subtopologies, partition_count, decided)
    decided.update(_changelog_counts(subtopologies, partition_count, decided))
    return decided


def _repartition_counts(
    subtopologies: list[Subtopology], partition_count: PartitionCount
) -> dict[str, int]:
    counts = {
        topic.name: topic.partitions
        for sub in subtopologies
        for topic in sub.repartition_source_topics
        if topic.partitions != 0
    }
    while True:
        needed = progress = False
        for sub in subtopologies:
            for sink in sub.repartition_sink_topics:
                if sink in counts:
                    continue
                widest = _widest_source(sub, partition_count, counts)
                if widest is None:
                    needed = True
                else:
                    counts[sink] = widest
                    progress = True
        if not needed:
            break
        if not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may "
                "be loops in the topology that cannot be resolved."
            )
    for sub in subtopologies:
        if any(topic.name not in counts for topic in sub.repartition_source_topics):
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, because "
                "a repartition source topic is never used as a sink topic."
            )
    return counts


def _widest_source(
    sub: Subtopology, partition_count: PartitionCount, repartition_counts: dict[str, int]
) -> int | None:
    candidates = [
        repartition_counts[topic.name]
        for topic in sub.repartition_source_topics
        if topic.name in repartition_counts
    ]
    candidates += [
        count for name in sub.source_topics if (count := partition_count(name)) is not None
    ]
    return max(candidates) if candidates else None


def _format_counts(counts: dict[str, int]) -> str:
    """A Java TreeMap's toString: {a=1, b=2}."""
    return "{" + ", ".join(f"{name}={counts[name]}" for name in sorted(counts)) + "}"


def _incorrectly_partitioned(detail: str) -> _TopicConfigurationError:
    return _TopicConfigurationError(INCORRECTLY_PARTITIONED_TOPICS, detail)


def _enforce_copartitioning(
    subtopologies: list[Subtopology], partition_count: PartitionCount, decided: dict[str, int]
) -> None:
    fixed = {
        topic.name
        for sub in subtopologies
        for topic in sub.repartition_source_topics
        if topic.partitions != 0
    }
    flexible = {
        topic.name
        for sub in subtopologies
        for topic in sub.repartition_source_topics
        if topic.partitions == 0
    }
    for sub in subtopologies:
        for group in sub.copartitioned_topic_sets():
            decided.update(_enforce_group(group, fixed, flexible, partition_count, decided))


def _enforce_group(
    group: set[str],
    fixed: set[str],
    flexible: set[str],
    partition_count: PartitionCount,
    decided: dict[str, int],
) -> dict[str, int]:
    if not group:
        return {}

    def count(name: str) -> int:
        found = _count(name, partition_count, decided)
        if found is None:
            raise InvalidTopology(f"Number of partitions is not set for topic: {name}")
        return found

    repartition = {name: count(name) for name in group if name in fixed or name in flexible}
    external = {name: count(name) for name in group if name not in repartition}
    if set(repartition) == group:
        if fixed:
            chosen = count(sorted(fixed)[0])
            if any(count(name) != chosen for name in fixed):
                raise _incorrectly_partitioned(
                    "Following topics do not have the same number of partitions: "
                    f"[{_format_counts(repartition)}]"
                )
        else:
            chosen = max(repartition.values())
            if chosen == 0:
                raise InvalidTopology(
                    "All topics in the copartition group had undefined partition number: "
                    f"{sorted(repartition)}"
                )
    else:
        chosen = next(iter(external.values()))
        if any(value != chosen for value in external.values()):
            raise _incorrectly_partitioned(
                "Following topics do not have the same number of partitions: "
                f"[{_format_counts(external)}]"
            )
    for name, current in repartition.items():
        if name in fixed and current != chosen:
            raise _incorrectly_partitioned(
                f"Number of partitions [{current}] of repartition topic [{name}] doesn't "
                f"match number of partitions [{chosen}] of the source topic."
            )
    return dict.fromkeys(repartition, chosen)


def _changelog_counts(
    subtopologies: list[Subtopology], partition_count: PartitionCount, decided: dict[str, int]
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sub in subtopologies:
        widest = _widest_source(sub, partition_count, decided)
        if widest is None:
            raise InvalidTopology(f"No source topics found for subtopology {sub.subtopology_id}")
        for topic in sub.state_changelog_topics:
            if topic.name not in sub.source_topics:
                counts[topic.name] = widest
    return counts


def _internal_topics(topology: StreamsTopology, decided: dict[str, int]) -> dict[str, TopicInfo]:
    """Every repartition source and changelog topic with the partition count it must have."""
    wanted: dict[str, TopicInfo] = {}
    for sub in topology.subtopologies.values():
        for topic in (*sub.repartition_source_topics, *sub.state_changelog_topics):
            if topic.name in sub.source_topics:
                continue
            partitions = topic.partitions or decided[topic.name]
            wanted[topic.name] = TopicInfo(
                topic.name, partitions, topic.replication_factor, topic.configs
            )
    return wanted


def _missing_internal_topics(
    topology: StreamsTopology, partition_count: PartitionCount, decided: dict[str, int]
) -> dict[str, TopicInfo]:
    wanted = _internal_topics(topology, decided)
    for name in sorted(topology.required_topics()):
        existing = partition_count(name)
        expected = wanted.pop(name, None)
        if existing is None:
            if expected is not None:
                wanted[name] = expected
            continue
        if expected is not None and existing != expected.partitions:
            raise _incorrectly_partitioned(
                f"Existing topic {name} has different number of partitions: expected "
                f"{expected.partitions}, found {existing}"
            )
    return wanted


def _number_of_tasks(
    sub: Subtopology, partition_count: PartitionCount, decided: dict[str, int]
) -> int:
    counts = [
        _count(name, partition_count, decided)
        for name in (*sub.source_topics, *(topic.name for topic in sub.repartition_source_topics))
    ]
    return max((count for count in counts if count is not None), default=0)
