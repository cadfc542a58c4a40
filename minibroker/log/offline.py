"""OfflinePartitionLog: a partition whose directory could not be opened or recovered at startup.

Kafka marks such a log directory offline and keeps serving the others; here the unit is the
partition. It refuses every read and write with LogOfflineError (handlers answer
KAFKA_STORAGE_ERROR) until the broker restarts with the directory usable again. Its offsets are
the checkpointed log start (start and end alike, so that loaders replaying a log read nothing),
and its checkpoint entries are written back unchanged for that next start.
"""

from __future__ import annotations

import uuid
from typing import NoReturn

from minibroker.records.batch import WritableBuffer

from .base import LogOfflineError, StoredBatches
from .config import LogConfig
from .syncs import GroupedSyncs
from .txnindex import AbortedTxn


class OfflinePartitionLog:
    def __init__(
        self,
        topic: str,
        partition: int,
        topic_id: uuid.UUID,
        config: LogConfig,
        error: OSError,
        *,
        recovery_point: int,
        log_start_offset: int,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.config = config
        self.recovery_point = recovery_point
        self.storage_error: OSError | None = error
        self._log_start_offset = log_start_offset

    def _refuse(self) -> NoReturn:
        raise LogOfflineError(
            f"{self.topic}-{self.partition} is offline: it could not be opened at startup: "
            f"{self.storage_error}"
        )

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_start_offset

    @property
    def size_bytes(self) -> int:
        return 0

    def append(self, batch: WritableBuffer, leader_epoch: int, now_ms: int) -> int:
        self._refuse()

    def append_plain(
        self,
        batch: WritableBuffer,
        leader_epoch: int,
        now_ms: int,
        last_offset_delta: int,
        max_timestamp: int,
    ) -> int:
        self._refuse()

    def read(self, offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        self._refuse()

    def read_batches(
        self, offset: int, max_bytes: int, upper_offset: int | None = None
    ) -> StoredBatches | None:
        self._refuse()

    def batch_for_timestamp(self, timestamp: int) -> bytes | None:
        self._refuse()

    def batch_with_max_timestamp(self) -> bytes | None:
        self._refuse()

    def append_aborted_txn(
        self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int
    ) -> None:
        self._refuse()

    def collect_aborted_txns(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        self._refuse()

    def roll(self, now_ms: int) -> None:
        self._refuse()

    def truncate_to(self, offset: int) -> None:
        self._refuse()

    def delete_records_before(self, offset: int) -> int:
        self._refuse()

    def apply_retention(self, now_ms: int) -> int:
        return 0

    def flush(self) -> None:
        self._refuse()

    def flush_if_due(self, now_ms: int) -> None:
        pass

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def segments(self) -> list[tuple[int, int]]:
        return []

    def segments_with_times(self) -> list[tuple[int, int, int]]:
        return []

    def close(self) -> None:
        pass

    def delete(self, syncs: GroupedSyncs | None = None) -> None:
        self._refuse()
