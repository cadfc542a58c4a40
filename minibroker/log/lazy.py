"""Partition logs that cost nothing until first used: one whose directory is created then
(LazyPartitionLog), and one whose existing directory is opened then (DeferredPartitionLog).

`__consumer_offsets` has `offsets.topic.num.partitions` (50) partitions and a broker
typically uses a few of them (a test's fresh broker one): creating every directory at once
is some 300 files and 150 fsyncs, most of a fresh on-disk broker's first FindCoordinator.
Until it is used, the log holds its identity and config and is not in the LogManager's list,
so retention, cleaning, flushing and checkpoints skip it as they would an empty log; any
read or write creates the directory, exactly as an eager creation would have.

After a clean shutdown, as Kafka trusts its clean-shutdown marker and checkpoints, every
partition directory found at start is a DeferredPartitionLog: its recovery point and log start
come from the checkpoint files, and the directory is listed and its segments opened on first
use (a restart with 100,000 idle partitions then costs a directory listing, not 100,000
opens). Its owner hears of the opening (`opened`) to load what it keeps per partition
(producer state) before the caller goes on.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

from minibroker.records.batch import WritableBuffer

from .base import PartitionLog, StoredBatches
from .config import LogConfig
from .offline import OfflinePartitionLog
from .partition import LOG_SUFFIX, remove_partition_directory
from .segmented import SegmentedLog
from .syncs import GroupedSyncs
from .txnindex import AbortedTxn

Create = Callable[[str, int, uuid.UUID, LogConfig], PartitionLog]
Opened = Callable[[PartitionLog], None]


class LazyPartitionLog:
    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        create: Create,
        opened: Opened | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self._config = config
        self._create = create
        self._opened = opened
        self._log: PartitionLog | None = None

    @property
    def created(self) -> bool:
        return self._log is not None

    @property
    def directory(self) -> Path | None:
        """The created log's directory if it is file-backed (the producer state's snapshots
        go there)."""
        directory = getattr(self._target(), "directory", None)
        return directory if isinstance(directory, Path) else None

    @property
    def is_open(self) -> bool:
        return self._log is not None

    def _target(self) -> PartitionLog:
        if self._log is None:
            self._log = self._create(self.topic, self.partition, self.topic_id, self._config)
            if self._opened is not None:
                self._opened(self)
        return self._log

    def target(self) -> PartitionLog:
        """The log itself, created or opened now if it was not yet."""
        return self._target()

    @property
    def config(self) -> LogConfig:
        return self._config if self._log is None else self._log.config

    @config.setter
    def config(self, config: LogConfig) -> None:
        self.update_config(config)

    @property
    def recovery_point(self) -> int:
        return self._target().recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._target().recovery_point = offset

    @property
    def storage_error(self) -> OSError | None:
        return None if self._log is None else self._log.storage_error

    @storage_error.setter
    def storage_error(self, error: OSError | None) -> None:
        self._target().storage_error = error

    @property
    def log_start_offset(self) -> int:
        return self._target().log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._target().log_end_offset

    @property
    def size_bytes(self) -> int:
        return self._target().size_bytes

    def append(self, batch: WritableBuffer, leader_epoch: int, now_ms: int) -> int:
        return self._target().append(batch, leader_epoch, now_ms)

    def append_plain(
        self,
        batch: WritableBuffer,
        leader_epoch: int,
        now_ms: int,
        last_offset_delta: int,
        max_timestamp: int,
    ) -> int:
        return self._target().append_plain(
            batch, leader_epoch, now_ms, last_offset_delta, max_timestamp
        )

    def read(self, offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        return self._target().read(offset, max_bytes, upper_offset)

    def read_batches(
        self, offset: int, max_bytes: int, upper_offset: int | None = None
    ) -> StoredBatches | None:
        return self._target().read_batches(offset, max_bytes, upper_offset)

    def batch_for_timestamp(self, timestamp: int) -> bytes | None:
        return self._target().batch_for_timestamp(timestamp)

    def batch_with_max_timestamp(self) -> bytes | None:
        return self._target().batch_with_max_timestamp()

    def append_aborted_txn(
        self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int
    ) -> None:
        self._target().append_aborted_txn(
            producer_id, first_offset, last_offset, last_stable_offset
        )

    def collect_aborted_txns(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        return self._target().collect_aborted_txns(start_offset, upper_bound_offset)

    def roll(self, now_ms: int) -> None:
        self._target().roll(now_ms)

    def truncate_to(self, offset: int) -> None:
        self._target().truncate_to(offset)

    def delete_records_before(self, offset: int) -> int:
        return self._target().delete_records_before(offset)

    def apply_retention(self, now_ms: int) -> int:
        return self._target().apply_retention(now_ms)

    def flush(self) -> None:
        self._target().flush()

    def flush_if_due(self, now_ms: int) -> None:
        self._target().flush_if_due(now_ms)

    def update_config(self, config: LogConfig) -> None:
        if self._log is None:
            self._config = config
        else:
            self._log.update_config(config)

    def segments(self) -> list[tuple[int, int]]:
        return self._target().segments()

    def segments_with_times(self) -> list[tuple[int, int, int]]:
        return self._target().segments_with_times()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()


class DeferredPartitionLog(LazyPartitionLog):
    """An existing partition directory, opened when first used; until then its recovery point
    and log start are those of the checkpoint files, and its files are untouched."""

    def __init__(
        self,
        directory: Path,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        open_log: Create,
        opened: Opened | None,
        *,
        recovery_point: int,
        log_start_offset: int | None,
    ) -> None:
        super().__init__(topic, partition, topic_id, config, open_log, opened)
        self._directory = directory
        self._recovery_point = recovery_point
        # None: the log start is the first segment's base offset (not checkpointed).
        self.checkpointed_log_start = log_start_offset
        self._segment_files: int | None = None

    @property
    def created(self) -> bool:
        return True

    @property
    def directory(self) -> Path | None:
        return self._directory if self._log is None else super().directory

    @property
    def recovery_point(self) -> int:
        return self._recovery_point if self._log is None else self._log.recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._target().recovery_point = offset

    @property
    def storage_error(self) -> OSError | None:
        """Opens the log: whether it can be opened is what the caller asks."""
        return self._target().storage_error

    @storage_error.setter
    def storage_error(self, error: OSError | None) -> None:
        self._target().storage_error = error

    def may_need_retention_or_cleaning(self) -> bool:
        """Whether retention or the cleaner could change the log: only a log of more than one
        segment (neither ever touches the active segment). Listed once: nothing changes the
        directory until the log is opened."""
        if self._log is not None:
            return True
        if self._segment_files is None:
            self._segment_files = sum(
                1 for name in os.listdir(self._directory) if name.endswith(LOG_SUFFIX)
            )
        return self._segment_files > 1

    def delete(self, syncs: GroupedSyncs | None = None) -> None:
        if self._log is not None:
            assert isinstance(self._log, SegmentedLog | OfflinePartitionLog)
            self._log.delete(syncs)
        else:
            remove_partition_directory(self._directory, self.topic, self.partition, syncs)


def is_created(log: PartitionLog) -> bool:
    """False for a lazy log whose directory does not exist yet (it is empty)."""
    return not isinstance(log, LazyPartitionLog) or log.created


def is_open(log: PartitionLog) -> bool:
    """False for a log not yet created or opened (lazy or deferred)."""
    return not isinstance(log, LazyPartitionLog) or log.is_open


def opened(log: PartitionLog) -> PartitionLog:
    """The log itself: a lazy or deferred one is created or opened now."""
    return log.target() if isinstance(log, LazyPartitionLog) else log
