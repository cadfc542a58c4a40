"""The coordinator's groups, loaded from `__consumer_offsets` one partition at a time.

Kafka's group coordinator loads a `__consumer_offsets` partition (its groups, offsets and
pending transactional offsets, replayed from the records) when its broker becomes that
partition's leader, and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile. minibroker loads a
partition the first time a group of it is asked for, before answering, and every partition the
first time all groups are listed (ListGroups, offset retention, a topic's deletion, the
console). A restart with thousands of groups reads none of them until they are used.

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
        exist (nothing was ever stored)."""
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
        self._all_loaded = False

    def load_partition(self, index: int) -> None:
        if self._all_loaded or index in self.loaded_partitions:
            return
        self.loaded_partitions.add(index)  # first: the replay looks groups up too
        self._loader.load_partition(index)

    def load_all(self) -> None:
        if self._all_loaded:
            return
        for index in self._loader.partition_indexes():
            self.load_partition(index)
        self._all_loaded = True

    def loaded(self) -> ValuesView[Group]:
        """The groups in memory, without loading any partition."""
        return self._groups.values()

    def _load_for(self, group_id: str) -> None:
        if self._all_loaded:
            return
        index = self._loader.partition_index(group_id)
        if index is None:  # no __consumer_offsets: nothing was stored, nothing to load
            self._all_loaded = True
            return
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
        self._load_for(group_id)
        self._groups[group_id] = group

    def __delitem__(self, group_id: str) -> None:
        self._load_for(group_id)
        del self._groups[group_id]

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return iter(self._groups)

    def __len__(self) -> int:
        self.load_all()
        return len(self._groups)
