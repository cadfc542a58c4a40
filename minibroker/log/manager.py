"""LogManager: every partition log of one log directory (or of memory), with its checkpoints.

Layout of a data directory, as Kafka's:
    meta.properties, recovery-point-offset-checkpoint, log-start-offset-checkpoint,
    .kafka_cleanshutdown (only while stopped cleanly), <topic>-<partition>/...
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from .base import LogOfflineError, PartitionLog
from .blob import FilePool
from .checkpoints import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    CorruptCheckpointError,
    fsync_directory,
    kafka_uuid_string,
    read_offset_checkpoint,
    read_partition_metadata,
    read_properties,
    write_offset_checkpoint,
    write_properties,
)
from .cleaner import clean_log
from .config import LogConfig
from .lazy import DeferredPartitionLog, LazyPartitionLog, Opened, is_open, opened
from .memory import MemoryPartitionLog
from .offline import OfflinePartitionLog
from .partition import (
    DELETE_DIRECTORY_SUFFIX,
    FilePartitionLog,
    parse_partition_directory_name,
    partition_directory_name,
)
from .segmented import SegmentedLog
from .syncs import GroupedSyncs

logger = logging.getLogger(__name__)

_UNKNOWN_TOPIC_ID = uuid.UUID(int=0)
_WRITE_CHECK_FILE = ".minibroker-write-check"


ManagedLog = SegmentedLog | OfflinePartitionLog | DeferredPartitionLog


class LogDirError(Exception):
    """The data directory cannot be used: the broker does not start (Kafka shuts down when
    none of its log directories can be used, and minibroker has one)."""


class InconsistentLogDirError(LogDirError):
    """meta.properties names another cluster or node than this broker's."""


class LogManager:
    def __init__(
        self,
        data_dir: Path | None,
        *,
        node_id: int,
        cluster_id: str,
        default_config: LogConfig,
        max_open_files: int | None = None,
    ) -> None:
        """`data_dir` None keeps every partition in memory."""
        self.data_dir = data_dir
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.default_config = default_config
        self.pool = FilePool(max_open_files)
        self._logs: dict[tuple[str, int], ManagedLog] = {}
        # Told when a lazy or deferred log is created or opened (the broker loads its
        # producer state then).
        self.on_open: Opened | None = None
        # Told (topic, partition) when a storage error takes one of its logs offline.
        self.on_offline: Callable[[str, int], None] | None = None
        self._syncs: GroupedSyncs | None = None
        self._removers: list[threading.Thread] = []  # removing deleted partitions' directories
        self._clean_shutdown = False
        if data_dir is not None:
            try:
                data_dir.mkdir(parents=True, exist_ok=True)
                if (data_dir / META_PROPERTIES).exists():
                    _check_writable(data_dir)  # a new directory is checked by writing this file
                self._check_or_write_meta_properties(data_dir)
                self._clean_shutdown = self._take_clean_shutdown_marker(data_dir)
            except OSError as exc:
                raise LogDirError(f"log directory {data_dir} cannot be used: {exc}") from exc

    @staticmethod
    def _take_clean_shutdown_marker(data_dir: Path) -> bool:
        """Whether the last run shut down cleanly; removes the marker, so that a crash from now
        on, even before `load`, is seen as one."""
        marker = data_dir / CLEAN_SHUTDOWN_MARKER
        if not marker.exists():
            return False
        marker.unlink()
        fsync_directory(data_dir)
        return True

    def _check_or_write_meta_properties(self, data_dir: Path) -> None:
        path = data_dir / META_PROPERTIES
        if path.exists():
            properties = read_properties(path)
            if properties.get("cluster.id", self.cluster_id) != self.cluster_id:
                raise InconsistentLogDirError(
                    f"{path}: cluster.id {properties['cluster.id']} is not {self.cluster_id}"
                )
            stored_node_id = properties.get("node.id", str(self.node_id))
            if not stored_node_id.strip().lstrip("-").isdigit():
                raise InconsistentLogDirError(f"{path}: node.id {stored_node_id!r} is not a number")
            if int(stored_node_id) != self.node_id:
                raise InconsistentLogDirError(
                    f"{path}: node.id {stored_node_id} is not {self.node_id}"
                )
            return
        write_properties(
            path,
            {
                "cluster.id": self.cluster_id,
                "directory.id": kafka_uuid_string(uuid.uuid4()),
                "node.id": str(self.node_id),
                "version": "1",
            },
        )

    # -- partitions ----------------------------------------------------------------------------

    def load(self, *, defer: bool = False) -> list[PartitionLog]:
        """Every partition directory: opened now, recovering those not cleanly shut down (one
        that cannot be opened or recovered comes up offline); with `defer`, after a clean
        shutdown, opened when first used instead (lazy.py)."""
        if self.data_dir is None:
            return list(self._logs.values())
        recovery_points = self._read_checkpoint(RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(LOG_START_CHECKPOINT)
        deferring = defer and self._clean_shutdown
        topic_ids: dict[str, uuid.UUID] = {}
        for name in _subdirectory_names(self.data_dir):
            directory = self.data_dir / name
            if name.endswith(DELETE_DIRECTORY_SUFFIX):
                _remove_deleted(directory)
                continue
            parsed = parse_partition_directory_name(name)
            if parsed is None or parsed in self._logs:
                continue
            recovery_point = recovery_points.get(parsed, 0)
            topic_id = _topic_id_of(topic_ids, directory, parsed[0]) if deferring else None
            if topic_id is None:
                log: ManagedLog = self._open_or_offline(
                    directory, *parsed, recovery_point, log_starts
                )
            else:
                log = self._deferred(directory, *parsed, topic_id, recovery_point, log_starts)
            self._logs[parsed] = log
        return list(self._logs.values())

    def _open_or_offline(
        self,
        directory: Path,
        topic: str,
        partition: int,
        recovery_point: int,
        log_starts: dict[tuple[str, int], int],
        config: LogConfig | None = None,
        *,
        closed_cleanly: bool | None = None,
    ) -> SegmentedLog | OfflinePartitionLog:
        log_start = log_starts.get((topic, partition), 0)
        try:
            opened_log = self._open(
                directory,
                topic,
                partition,
                recovery_point,
                log_start,
                closed_cleanly=closed_cleanly,
            )
        except (OSError, CorruptCheckpointError) as exc:
            logger.error("%s is offline: it could not be opened: %s", directory, exc)
            self.pool.close_all()  # the failed log's descriptors; the pool reopens others
            return OfflinePartitionLog(
                topic,
                partition,
                _readable_topic_id(directory),
                config or self.default_config,
                exc if isinstance(exc, OSError) else LogOfflineError(str(exc)),
                recovery_point=recovery_point,
                log_start_offset=log_start,
            )
        if config is not None:
            opened_log.update_config(config)
        return self._watch(opened_log)

    def _deferred(
        self,
        directory: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        recovery_point: int,
        log_starts: dict[tuple[str, int], int],
    ) -> DeferredPartitionLog:
        """A partition of a topic whose id is known (read from its first partition): the
        topic id is checked against its own `partition.metadata` when it is opened."""

        def open_now(
            topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig
        ) -> PartitionLog:
            log = self._open_or_offline(
                directory, topic, partition, recovery_point, log_starts, config, closed_cleanly=True
            )
            if log.topic_id != topic_id and isinstance(log, SegmentedLog):
                error = LogOfflineError(f"{directory}: topic id {log.topic_id}, not {topic_id}")
                logger.error("%s is offline: %s", directory, error)
                log.storage_error = error
            return log

        return DeferredPartitionLog(
            directory,
            topic,
            partition,
            topic_id,
            self.default_config,
            open_now,
            self._told_opened,
            recovery_point=recovery_point,
            log_start_offset=log_starts.get((topic, partition)),
        )

    def _told_opened(self, log: PartitionLog) -> None:
        if self.on_open is not None:
            self.on_open(log)

    def _open(
        self,
        directory: Path,
        topic: str,
        partition: int,
        recovery_point: int,
        log_start: int,
        *,
        closed_cleanly: bool | None = None,
    ) -> FilePartitionLog:
        clean = self._clean_shutdown if closed_cleanly is None else closed_cleanly
        return FilePartitionLog.open(
            directory,
            topic,
            partition,
            read_partition_metadata(directory) or _UNKNOWN_TOPIC_ID,
            self.default_config,
            self.pool,
            recovery_point=recovery_point,
            log_start_offset=log_start,
            clean_shutdown=clean,
        )

    def _read_checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        assert self.data_dir is not None
        try:
            return read_offset_checkpoint(self.data_dir / name)
        except CorruptCheckpointError as error:
            logger.warning("ignoring %s: %s", name, error)
            return {}

    @contextlib.contextmanager
    def grouped_syncs(self) -> Iterator[None]:
        """Partitions created and deleted inside are made durable together when it ends
        (syncs.py), the checkpoints written once."""
        if self._syncs is not None or self.data_dir is None:
            yield
            return
        self._syncs = syncs = GroupedSyncs(self.data_dir)
        try:
            yield
        finally:
            self._syncs = None
            remover = syncs.complete()
            if remover is not None:
                self._removers = [t for t in self._removers if t.is_alive()] + [remover]
            if syncs.checkpoint_due:
                self.checkpoint()

    def create(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig
    ) -> PartitionLog:
        """The partition's log, created empty if it does not exist yet."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            return existing
        log: SegmentedLog
        if self.data_dir is None:
            log = MemoryPartitionLog(topic, partition, topic_id, config)
        else:
            directory = self.data_dir / partition_directory_name(topic, partition)
            log = FilePartitionLog.create(
                directory, topic, partition, topic_id, config, self.pool, syncs=self._syncs
            )
        self._logs[(topic, partition)] = self._watch(log)
        return log

    def create_lazily(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig
    ) -> PartitionLog:
        """The partition's log, its directory created when the log is first used (lazy.py);
        in memory, or if it exists already, what `create` returns."""
        if self.data_dir is None or (topic, partition) in self._logs:
            return self.create(topic, partition, topic_id, config)
        return LazyPartitionLog(topic, partition, topic_id, config, self.create, self._told_opened)

    def _watch(self, log: SegmentedLog) -> SegmentedLog:
        """DeleteRecords and truncation must survive a restart: checkpoint them at once. A log
        going offline is told to `on_offline`."""
        log.on_checkpoint_needed = self.checkpoint
        log.on_offline = functools.partial(self._went_offline, log.topic, log.partition)
        return log

    def _went_offline(self, topic: str, partition: int) -> None:
        if self.on_offline is not None:
            self.on_offline(topic, partition)

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def count(self) -> int:
        return len(self._logs)

    def detach(self, topic: str, partition: int) -> ManagedLog:
        """Flush and close the partition's log and forget it, its directory left in place (a
        move to another log directory)."""
        log = self._logs.pop((topic, partition))
        log.close()
        self.checkpoint()
        return log

    def adopt(
        self, directory: Path, topic: str, partition: int, recovery_point: int, log_start: int
    ) -> PartitionLog:
        """Open a partition directory just moved into this log directory."""
        log = self._watch(
            self._open(directory, topic, partition, recovery_point, log_start, closed_cleanly=True)
        )
        self._logs[(topic, partition)] = log
        self.checkpoint()
        return log

    def all_logs(self) -> list[PartitionLog]:
        return list(self._logs.values())

    def delete(self, topic: str, partition: int) -> None:
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return
        log.delete(self._syncs)
        if self._syncs is None:
            self.checkpoint()
        else:
            self._syncs.checkpoint_due = True

    # -- periodic work -------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Write both offset checkpoint files (Kafka lists a log start only when it is above the
        first segment's base offset)."""
        if self.data_dir is None:
            return
        recovery_points = {key: log.recovery_point for key, log in self._logs.items()}
        write_offset_checkpoint(self.data_dir / RECOVERY_POINT_CHECKPOINT, recovery_points)
        self.checkpoint_log_start_offsets()

    def checkpoint_log_start_offsets(self) -> None:
        if self.data_dir is None:
            return
        log_starts = {
            key: offset
            for key, log in self._logs.items()
            if (offset := _checkpointed_log_start(log)) is not None
        }
        write_offset_checkpoint(self.data_dir / LOG_START_CHECKPOINT, log_starts)

    def _maintained(self) -> list[PartitionLog]:
        """The logs retention and the cleaner may change: all but deferred ones that have a
        single segment (lazy.py), which are opened now if they have more."""
        return [
            opened(log)
            for log in list(self._logs.values())
            if not isinstance(log, DeferredPartitionLog) or log.may_need_retention_or_cleaning()
        ]

    def run_retention(self, now_ms: int) -> list[tuple[str, int]]:
        """The partitions whose log start moved."""
        moved = [
            (log.topic, log.partition)
            for log in self._maintained()
            if log.apply_retention(now_ms) > 0
        ]
        if moved:
            self.checkpoint_log_start_offsets()
        return moved

    def run_cleaner(self, now_ms: int) -> None:
        """One log cleaner pass over every compacted log (cleaner.py)."""
        for log in self._maintained():
            if isinstance(log, SegmentedLog):
                with contextlib.suppress(LogOfflineError):  # logged when it went offline
                    clean_log(log, now_ms)

    def flush_due(self, now_ms: int) -> None:
        """Flush what flush.ms / flush.messages ask for; checkpoint recovery points that moved."""
        moved = False
        for log in self._logs.values():
            if not is_open(log):
                continue
            before = log.recovery_point
            with contextlib.suppress(LogOfflineError):  # logged when it went offline
                log.flush_if_due(now_ms)
            moved = moved or log.recovery_point != before
        if moved:
            self.checkpoint()

    def abandon(self) -> None:
        """A power cut: every descriptor closed and every log dropped, nothing flushed or
        written (what survives is what the disk kept)."""
        for remover in self._removers:
            remover.join()
        self.pool.close_all()
        self._logs.clear()

    def close(self) -> None:
        """Flush every log, write the checkpoints, then the clean-shutdown marker."""
        for remover in self._removers:
            remover.join()
        offline = [key for key, log in self._logs.items() if not _closed_cleanly(log)]
        if self.data_dir is not None:
            self.checkpoint()
        if offline:  # no clean-shutdown marker: the next start recovers them
            logger.error("%d partitions are offline after storage errors", len(offline))
        elif self.data_dir is not None:
            marker = self.data_dir / CLEAN_SHUTDOWN_MARKER
            marker.write_text('{"version":0,"brokerEpoch":-1}', encoding="utf-8")
            fsync_directory(self.data_dir)
        self.pool.close_all()
        self._logs.clear()


def _closed_cleanly(log: PartitionLog) -> bool:
    if not is_open(log):
        return True  # untouched since the clean shutdown that made it deferred
    try:
        log.close()
    except OSError as exc:
        log.storage_error = log.storage_error or exc
    return log.storage_error is None


def _remove_deleted(directory: Path) -> None:
    """A partition deleted before a crash or power cut: what is left of it goes now."""
    try:
        shutil.rmtree(directory)
    except OSError as exc:
        logger.error("cannot remove %s, a deleted partition: %s", directory, exc)
    else:
        logger.info("removed %s, a partition deleted before the last shutdown", directory)


def _check_writable(data_dir: Path) -> None:
    """Create, sync and remove a file: a read-only or full data directory fails here, with its
    name, rather than somewhere in recovery (root passes `os.access` whatever the modes)."""
    probe = data_dir / _WRITE_CHECK_FILE
    with probe.open("wb") as file:
        file.write(b"minibroker")
        file.flush()
        os.fsync(file.fileno())
    probe.unlink()


def _subdirectory_names(data_dir: Path) -> list[str]:
    """The data directory's subdirectories, sorted (one listing: no stat per entry where
    the file system gives each entry's type)."""
    try:
        with os.scandir(data_dir) as entries:
            return sorted(entry.name for entry in entries if _is_directory(entry))
    except OSError as exc:
        raise LogDirError(f"log directory {data_dir} cannot be read: {exc}") from exc


def _is_directory(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # is_dir() is False for a missing path but raises on EIO and the like
        return True


def _readable_topic_id(directory: Path) -> uuid.UUID:
    try:
        return read_partition_metadata(directory) or _UNKNOWN_TOPIC_ID
    except (OSError, CorruptCheckpointError):
        return _UNKNOWN_TOPIC_ID


def _topic_id_of(known: dict[str, uuid.UUID], directory: Path, topic: str) -> uuid.UUID | None:
    """The topic's id, read from the first of its partitions' `partition.metadata` (None if
    that cannot be read: the partition is opened now, to come up offline or be recovered)."""
    topic_id = known.get(topic)
    if topic_id is None:
        try:
            topic_id = read_partition_metadata(directory)
        except (OSError, CorruptCheckpointError):
            return None
        if topic_id is not None:
            known[topic] = topic_id
    return topic_id


def _checkpointed_log_start(log: ManagedLog) -> int | None:
    """The log start to checkpoint: Kafka lists it only when it is above the first segment's
    base offset (a deferred log's as it was read)."""
    if isinstance(log, DeferredPartitionLog) and not log.is_open:
        return log.checkpointed_log_start
    segments = log.segments()
    first_base_offset = segments[0][0] if segments else 0
    return log.log_start_offset if log.log_start_offset > first_base_offset else None
