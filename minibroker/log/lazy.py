"""A partition log whose directory is created when the log is first used.

`__consumer_offsets` has `offsets.topic.num.partitions` (50) partitions and a broker
typically uses a few of them (a test's fresh broker one): creating every directory at once
is some 300 files and 150 fsyncs, most of a fresh on-disk broker's first FindCoordinator.
Until it is used, the log holds its identity and config and is not in the LogManager's list,
so retention, cleaning, flushing and checkpoints skip it as they would an empty log; any
read or write creates the directory, exactly as an eager creation would have.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from minibroker.records.batch import WritableBuffer

from .base import PartitionLog, StoredBatches
from .config import LogConfig
from .txnindex import AbortedTxn

Create = Callable[[str, int, uuid.UUID, LogConfig], PartitionLog]


class LazyPartitionLog:
    def __init__(
        self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig, create: Create
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self._config = config
        self._create = create
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

    def _target(self) -> PartitionLog:
        if self._log is None:
            self._log = self._create(self.topic, self.partition, self.topic_id, self._config)
        return self._log

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


def is_created(log: PartitionLog) -> bool:
    """False for a lazy log whose directory does not exist yet (it is empty)."""
    return not isinstance(log, LazyPartitionLog) or log.created
