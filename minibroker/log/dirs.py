"""Several log directories of one node (`log.dirs`), as Kafka's LogManager keeps them.

Each directory is a `LogManager` of its own (its `meta.properties` with its own
`directory.id`, checkpoints and clean-shutdown marker). A new partition goes to the directory
holding the fewest partitions, as Kafka places it; `move` takes a partition to another
directory (AlterReplicaLogDirs): its log is flushed and closed, its directory copied into the
target as `<topic>-<partition>.<id>-future`, synced and renamed into place, then the source
removed. A partition found in two directories at start (a move cut short between the rename
and the removal) is taken from the target, the one that is whole, and the other copy removed.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .base import PartitionLog
from .checkpoints import fsync_directory
from .config import LogConfig
from .lazy import Opened, opened
from .manager import LogDirError, LogManager
from .partition import FilePartitionLog, remove_partition_directory

logger = logging.getLogger(__name__)
FUTURE_SUFFIX = "-future"


class LogDirs:
    def __init__(
        self,
        data_dirs: Sequence[Path] | None,
        *,
        node_id: int,
        cluster_id: str,
        default_config: LogConfig,
        max_open_files: int | None = None,
    ) -> None:
        """`data_dirs` None keeps every partition in memory (one pseudo directory)."""
        directories: Sequence[Path | None] = [None] if data_dirs is None else data_dirs
        if len(set(directories)) != len(directories):
            raise LogDirError(f"log.dirs names a directory twice: {directories}")
        self.managers = [
            LogManager(
                directory,
                node_id=node_id,
                cluster_id=cluster_id,
                default_config=default_config,
                max_open_files=max_open_files,
            )
            for directory in directories
        ]
        self.node_id = node_id
        self.cluster_id = cluster_id

    @property
    def data_dir(self) -> Path | None:
        return self.managers[0].data_dir

    @property
    def default_config(self) -> LogConfig:
        return self.managers[0].default_config

    @default_config.setter
    def default_config(self, config: LogConfig) -> None:
        for manager in self.managers:
            manager.default_config = config

    # -- partitions ----------------------------------------------------------------------------

    def load(self, on_open: Opened | None = None) -> list[PartitionLog]:
        """Every partition log; after a clean shutdown opened when first used (lazy.py), and
        `on_open` told then."""
        found: dict[tuple[str, int], PartitionLog] = {}
        for manager in self.managers:
            _remove_unfinished_moves(manager)
            manager.on_open = on_open
            for log in manager.load(defer=True):
                key = (log.topic, log.partition)
                if key in found:
                    found[key] = self._keep_one_copy(key)
                else:
                    found[key] = log
        return list(found.values())

    def _keep_one_copy(self, key: tuple[str, int]) -> PartitionLog:
        """The copy of a move cut short in the last directory holding it (the target, written
        whole before the rename); the others are removed."""
        holders = [manager for manager in self.managers if manager.get(*key) is not None]
        kept, *others = reversed(holders)
        for manager in others:
            logger.warning("%s-%d in two log dirs: keeping %s", *key, kept.data_dir)
            manager.delete(*key)
        log = kept.get(*key)
        assert log is not None
        return log

    def manager_of(self, topic: str, partition: int) -> LogManager | None:
        return next((m for m in self.managers if m.get(topic, partition) is not None), None)

    def _least_loaded(self) -> LogManager:
        return min(self.managers, key=lambda manager: manager.count())

    def create(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig
    ) -> PartitionLog:
        holder = self.manager_of(topic, partition) or self._least_loaded()
        return holder.create(topic, partition, topic_id, config)

    def create_lazily(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig
    ) -> PartitionLog:
        holder = self.manager_of(topic, partition) or self._least_loaded()
        return holder.create_lazily(topic, partition, topic_id, config)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        holder = self.manager_of(topic, partition)
        return None if holder is None else holder.get(topic, partition)

    def all_logs(self) -> list[PartitionLog]:
        return [log for manager in self.managers for log in manager.all_logs()]

    def delete(self, topic: str, partition: int) -> None:
        holder = self.manager_of(topic, partition)
        if holder is not None:
            holder.delete(topic, partition)

    def move(self, topic: str, partition: int, target: LogManager) -> PartitionLog:
        """The partition's log, in `target` (copied there if it is elsewhere)."""
        source = self.manager_of(topic, partition)
        if source is None:
            raise KeyError((topic, partition))
        found = source.get(topic, partition)
        assert found is not None
        log = opened(found)
        if source is target:
            return found
        assert target.data_dir is not None and isinstance(log, FilePartitionLog)
        recovery_point, log_start = log.log_end_offset, log.log_start_offset
        directory = log.directory
        source.detach(topic, partition)
        future = target.data_dir / f"{directory.name}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"
        shutil.copytree(directory, future)
        fsync_directory(future)
        destination = target.data_dir / directory.name
        future.rename(destination)
        fsync_directory(target.data_dir)
        remove_partition_directory(directory, topic, partition)
        return target.adopt(destination, topic, partition, recovery_point, log_start)

    @contextlib.contextmanager
    def grouped_syncs(self) -> Iterator[None]:
        """LogManager.grouped_syncs over every log directory."""
        with contextlib.ExitStack() as stack:
            for manager in self.managers:
                stack.enter_context(manager.grouped_syncs())
            yield

    # -- periodic work -------------------------------------------------------------------------

    def checkpoint(self) -> None:
        for manager in self.managers:
            manager.checkpoint()

    def tell_offline(self, listener: Callable[[str, int], None]) -> None:
        """`listener` is told (topic, partition) when a storage error takes a log offline."""
        for manager in self.managers:
            manager.on_offline = listener

    def run_retention(self, now_ms: int) -> list[tuple[str, int]]:
        """The partitions whose log start moved."""
        return [moved for manager in self.managers for moved in manager.run_retention(now_ms)]

    def run_cleaner(self, now_ms: int) -> None:
        for manager in self.managers:
            manager.run_cleaner(now_ms)

    def flush_due(self, now_ms: int) -> None:
        for manager in self.managers:
            manager.flush_due(now_ms)

    def close(self) -> None:
        for manager in self.managers:
            manager.close()

    def abandon(self) -> None:
        """LogManager.abandon over every log directory."""
        for manager in self.managers:
            manager.abandon()


def _remove_unfinished_moves(manager: LogManager) -> None:
    """Future directories of moves cut short before their rename: the source is whole."""
    if manager.data_dir is None:
        return
    for future in manager.data_dir.glob(f"*{FUTURE_SUFFIX}"):
        logger.warning("removing %s: a log dir move that did not finish", future)
        shutil.rmtree(future, ignore_errors=True)
