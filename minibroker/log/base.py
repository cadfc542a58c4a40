"""The storage interface the broker uses, whichever backend holds the bytes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from minibroker.records.batch import WritableBuffer

from .blob import FileRegion
from .config import LogConfig
from .txnindex import AbortedTxn

# The read size of every sequential scan of a log (recovery, loading internal topics,
# rebuilding producer state, epoch caches). Small on purpose: reads of 1 MiB raise glibc's
# dynamic mmap threshold and then come from the heap, where a long scan leaves them
# fragmented, and the process kept about twice the bytes it had read (soak, issue 24). A batch
# larger than this is still read whole.
SCAN_CHUNK_BYTES = 64 << 10


class OffsetOutOfRange(Exception):
    """The offset is below the log start offset or above the log end offset."""


class RecordBatchTooLarge(Exception):
    """The batch is larger than segment.bytes (Kafka answers RECORD_LIST_TOO_LARGE)."""


class LogOfflineError(OSError):
    """The partition's storage failed (full disk, read-only or failing device): like a log
    directory Kafka marks offline, it refuses reads and writes until the broker restarts and
    recovers it. Handlers answer KAFKA_STORAGE_ERROR."""


@dataclass(frozen=True, slots=True)
class StoredBatches:
    """Whole stored batches as a read found them: their bytes (still in the file, for a file
    log) and the offset that follows the last of them."""

    records: bytes | FileRegion
    next_offset: int

    def data(self) -> bytes:
        """The bytes themselves, read now (the region is consumed and closed)."""
        if isinstance(self.records, bytes):
            return self.records
        try:
            return self.records.read()
        finally:
            self.records.close()


class PartitionLog(Protocol):
    topic: str
    partition: int
    topic_id: uuid.UUID
    config: LogConfig
    recovery_point: int  # everything below is fsynced; recovery re-checks from here
    storage_error: OSError | None  # set once an I/O error took the partition offline

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        ...

    @property
    def size_bytes(self) -> int: ...

    def append(self, batch: WritableBuffer, leader_epoch: int, now_ms: int) -> int:
        """Stamp base offset and leader epoch into one validated RecordBatch v2 (in place),
        store it, index it, roll segments when due; returns the base offset."""
        ...

    def append_plain(
        self,
        batch: WritableBuffer,
        leader_epoch: int,
        now_ms: int,
        last_offset_delta: int,
        max_timestamp: int,
    ) -> int:
        """`append`, for a caller that already read the batch's last offset delta and max
        timestamp (the native Produce path): the same result, state and errors."""
        ...

    def read(self, offset: int, max_bytes: int, upper_offset: int | None = None) -> bytes:
        """Whole stored batches from the one holding `offset` (at least one, KIP-74), from one
        segment; never a batch whose base offset is >= upper_offset (default: log end).
        b"" when `offset` >= upper_offset (e.g. at the log end or high watermark).
        Raises OffsetOutOfRange outside [log_start_offset, log_end_offset]."""
        ...

    def read_batches(
        self, offset: int, max_bytes: int, upper_offset: int | None = None
    ) -> StoredBatches | None:
        """What `read` returns, without reading it (None instead of b""): for Fetch."""
        ...

    def batch_for_timestamp(self, timestamp: int) -> bytes | None:
        """The first batch whose max timestamp is >= `timestamp`, found through `.timeindex`."""
        ...

    def batch_with_max_timestamp(self) -> bytes | None: ...

    def append_aborted_txn(
        self, producer_id: int, first_offset: int, last_offset: int, last_stable_offset: int
    ) -> None:
        """Index an aborted transaction whose ABORT marker was just appended (`.txnindex`)."""
        ...

    def collect_aborted_txns(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound_offset)."""
        ...

    def roll(self, now_ms: int) -> None:
        """Start a new segment at the log end (no-op if the active segment is empty)."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every batch holding an offset >= `offset` (whole batches: the log end may
        land below `offset` if it falls inside a batch)."""
        ...

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to `offset`, drop whole segments below it; returns the
        new log start offset. Raises OffsetOutOfRange above the log end."""
        ...

    def apply_retention(self, now_ms: int) -> int:
        """Delete closed segments past retention.ms / retention.bytes; returns how many."""
        ...

    def flush(self) -> None: ...

    def flush_if_due(self, now_ms: int) -> None:
        """flush.messages / flush.ms, and segments rolled since the last flush."""
        ...

    def update_config(self, config: LogConfig) -> None: ...

    def segments(self) -> list[tuple[int, int]]:
        """(base offset, size in bytes) of each segment, oldest first."""
        ...

    def segments_with_times(self) -> list[tuple[int, int, int]]:
        """(base offset, size in bytes, last modified ms) of each segment, oldest first: what
        ListOffsets v0 answers from."""
        ...

    def close(self) -> None: ...
