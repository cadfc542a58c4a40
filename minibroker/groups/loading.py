"""The coordinator's groups, loaded from `__consumer_offsets` one partition at a time.

Kafka's group coordinator loads a `__consumer_offsets` partition (its groups, offsets and
pending transactional offsets, replayed from its records) when its broker becomes that
partition's leader, in the background, and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile.
minibroker loads a partition the first time something needs a group of it, before answering,
and every partition the first time all groups are needed (ListGroups, offset retention, a
topic's deletion, the console). A restart with thousands of groups reads none until they are
used. The timers the load arms count from when the partition was taken over (timers.py
`armed_late`), so a group first used late is in the state it would be in had it been loaded
then. A partition whose leadership moves is unloaded (`unload`) and loaded again, from its
new leader's replica, when next used.

A group is in the table only once its partition is loaded (replayed, or created by a request
after the load), so a group found in the table needs no check; one not found is looked for in
its partition first.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, ValuesView
from typing import Protocol

from minibroker.groups.group import Group


class PartitionLoader(Protocol):
    def partition_index(self, group_id: str) -> int | None:
        """The `__consumer_offsets` partition of the group; None while the topic does not
        exist (nothing is stored)."""
        ...

    def partition_indexes(self) -> list[int]:
        """Every `__consumer_offsets` partition ([] while the topic does not exist)."""
        ...

    def load_partition(self, index: int) -> None:
        """Replay the partition's records into the table."""
        ...


class GroupTable(MutableMapping[str, Group]):
    """Groups by id, each one's `__consumer_offsets` partition loaded before it is looked up."""

    def __init__(self, loader: PartitionLoader) -> None:
        self._groups: dict[str, Group] = {}
        self._loader = loader
        self.loaded_partitions: set[int] = set()
        # The topic did not exist when a group was first needed: nothing was stored, and
        # what is written from then on is in memory too, so no partition is to be loaded.
        self._nothing_stored = False

    def load_partition(self, index: int) -> None:
        if self._nothing_stored or index in self.loaded_partitions:
            return
        self.loaded_partitions.add(index)  # first: the replay looks groups up too
        self._loader.load_partition(index)

    def load_all(self) -> None:
        if self._nothing_stored:
            return
        for index in self._loader.partition_indexes():
            self.load_partition(index)

    def unload(self, index: int) -> None:
        """The partition is to be loaded again when next used (its groups were dropped)."""
        if self._nothing_stored:
            self._nothing_stored = False
            self.loaded_partitions = set(self._loader.partition_indexes())
        self.loaded_partitions.discard(index)

    def loaded(self) -> ValuesView[Group]:
        """The groups in memory, without loading any partition."""
        return self._groups.values()

    def _load_for(self, group_id: str) -> None:
        if self._nothing_stored:
            return
        index = self._loader.partition_index(group_id)
        if index is None:
            self._nothing_stored = True
        else:
            self.load_partition(index)

    def get(self, group_id: str, default: Group | None = None) -> Group | None:  # type: ignore[override]
        group = self._groups.get(group_id)
        if group is not None:
            return group
        self._load_for(group_id)
        return self._groups.get(group_id, default)

    def __getitem__(self, group_id: str) -> Group:
        group = self.get(group_id)
        if group is None:
            raise KeyError(group_id)
        return group

    def __contains__(self, group_id: object) -> bool:
        return isinstance(group_id, str) and self.get(group_id) is not None

    def __setitem__(self, group_id: str, group: Group) -> None:
        if group_id not in self._groups:
            self._load_for(group_id)
        self._groups[group_id] = group

    def __delitem__(self, group_id: str) -> None:
        self._load_for(group_id)
        del self._groups[group_id]

    def discard_loaded(self, group_id: str) -> None:
        """Drop a group held in memory, without loading its partition."""
        self._groups.pop(group_id, None)

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(self._groups)

    def __len__(self) -> int:
        self.load_all()
        return len(self._groups)
