"""Transactional offset commits waiting for their transaction's marker (Kafka's
`GroupMetadata.pendingTransactionalOffsetCommits`).

TxnOffsetCommit stores the offsets in `__consumer_offsets` in a transactional batch of the
producer; they become the group's committed offsets only when the COMMIT marker of that
producer is written to the group's `__consumer_offsets` partition, and are dropped on ABORT.
"""

from __future__ import annotations

from collections.abc import Callable

from minibroker.groups.records import OffsetValue

OffsetsByPartition = dict[tuple[str, int], OffsetValue]


class PendingTxnOffsets:
    def __init__(self) -> None:
        self._by_producer: dict[int, dict[str, OffsetsByPartition]] = {}

    def add(self, producer_id: int, group_id: str, offsets: OffsetsByPartition) -> None:
        self._by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def complete(
        self, producer_id: int, in_partition: Callable[[str], bool]
    ) -> dict[str, OffsetsByPartition]:
        """Remove and return the producer's pending offsets of the groups `in_partition`."""
        groups = self._by_producer.get(producer_id, {})
        completed = {group: groups.pop(group) for group in list(groups) if in_partition(group)}
        if not groups:
            self._by_producer.pop(producer_id, None)
        return completed

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any(
            (topic, partition) in groups.get(group_id, {}) for groups in self._by_producer.values()
        )

    def has_group(self, group_id: str) -> bool:
        return any(group_id in groups for groups in self._by_producer.values())

    def discard(self, in_partition: Callable[[str], bool]) -> None:
        """Forget the pending offsets of the groups `in_partition` (their partition reloads)."""
        for producer_id, groups in list(self._by_producer.items()):
            for group_id in [group for group in groups if in_partition(group)]:
                del groups[group_id]
            if not groups:
                del self._by_producer[producer_id]
