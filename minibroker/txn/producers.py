"""Producer state: producer ids for idempotent producers and per-partition sequence checks.

Kafka's ProducerStateManager, ProducerAppendInfo and ProducerStateEntry, behaviour not code.
Per (partition, producer id) it keeps the current epoch and the metadata of the last 5 batches
(last sequence, last offset, offset delta, max timestamp).

`check_append` runs before the log append and applies Kafka's rules in Kafka's order:

1. Batches without a producer id (-1) are not checked.
2. Same epoch and exactly the sequence range of one of the last 5 batches: a duplicate. The
   Produce handler answers its original base offset and `log_append_time_ms` = its timestamp
   (as UnifiedLog does, whatever the timestamp type) and writes nothing.
3. An epoch below the current one: INVALID_PRODUCER_EPOCH.
4. A new epoch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise), unless the
   producer has no epoch yet.
5. Within the epoch the first sequence must follow the last one, Int32 max wrapping to 0
   (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise).
6. A producer id without state (new, expired, or whose batches were deleted before a crash) is
   accepted at any sequence: Kafka dropped UNKNOWN_PRODUCER_ID with KIP-360.
7. A non-transactional batch while the producer has an open transaction: INVALID_TXN_STATE.

The native Produce path checks the common batch — a known producer's next in sequence, same
epoch, no open transaction, not a duplicate — with `next_in_sequence` and records it with
`record_next_in_sequence` (the verdict and state `check_append` and `record_append` give it,
tests/txn/test_next_in_sequence.py); every other batch goes through those two.

`record_append` runs after the append; a producer's first transactional batch on a partition
opens its transaction there (the partition's `ongoing_txns`, which give the last stable offset).
COMMIT/ABORT markers (`txn/markers.py`) are checked by `check_end_txn_marker` (an older producer
epoch: INVALID_PRODUCER_EPOCH; an older coordinator epoch: TRANSACTION_COORDINATOR_FENCED, as
`ProducerAppendInfo.appendEndTxnMarker`) and recorded by `record_end_txn_marker`, which closes
the transaction and answers what Kafka's transaction index needs of it.

State survives restarts: `close()` writes Kafka's `<offset>.snapshot` file into each partition
directory at the log end offset; `rebuild()` loads the newest snapshot whose offset lies in
[log start, log end] and replays the batch headers after it, or replays the whole log when there
is none (after a crash); open transactions, and so the last stable offset, come back with it.
Retention and DeleteRecords keep producer state, as Kafka does; producers whose last batch
timestamp is older than `producer.id.expiration.ms` (and that have no open transaction) are
forgotten, checked every 10 minutes (Kafka's `producer.id.expiration.check.interval.ms`
default; not a setting here). After a log truncation
call `reload(partition)`; after deleting a topic call `forget(partition)` for each of its
partitions.

Batches the group coordinator writes to `__consumer_offsets` for TxnOffsetCommit (Kafka's
origin COORDINATOR, `CoordinatorBatch`) are checked by `check_coordinator_append` (the producer
epoch, never sequences) and recorded by `record_append`: such a batch opens the producer's
transaction on that partition like any transactional batch, so the partition's last stable
offset and `.txnindex` cover transactional offset commits as they do after a log replay.

`new_producer_id` is the broker's producer id allocator (ids reserved in blocks in the data
directory, never reused): InitProducerId without a transactional id gets one with epoch 0, the
transaction coordinator one per new transactional id (and when an epoch is exhausted).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from minibroker.log.base import SCAN_CHUNK_BYTES
from minibroker.log.lazy import LazyPartitionLog
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, Buffer, split_batches
from minibroker.records.control import read_end_txn_marker
from minibroker.txn.ongoing import OngoingTxns
from minibroker.txn.producer_ids import ProducerIdGenerator
from minibroker.txn.snapshot import (
    CorruptSnapshotError,
    SnapshotEntry,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from minibroker.config import BrokerConfig

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
# Read from the module by every append's check: from its class, an enum member is a metaclass
# lookup (~0.3 µs).
_NO_ERROR = ErrorCode.NO_ERROR
TV2_MARKER_VERSION = 2  # a marker of transaction version 2+ must bump the epoch (KIP-1228)
INT32_MAX = 2**31 - 1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms
DEFAULT_EXPIRATION_CHECK_INTERVAL_MS = 600_000  # producer.id.expiration.check.interval.ms


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from Int32 max to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerBatch(Protocol):
    """What the checks read from a validated batch (records' ValidatedBatch)."""

    @property
    def producer_id(self) -> int: ...

    @property
    def producer_epoch(self) -> int: ...

    @property
    def base_sequence(self) -> int: ...

    @property
    def record_count(self) -> int: ...

    @property
    def is_transactional(self) -> bool: ...


class PartitionLogView(Protocol):
    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read(self, offset: int, max_bytes: int) -> Buffer: ...


class PartitionView(Protocol):
    """A cluster Partition, as far as producer state needs it (hashed by identity)."""

    @property
    def topic(self) -> str: ...

    @property
    def index(self) -> int: ...

    @property
    def log(self) -> PartitionLogView: ...

    @property
    def ongoing_txns(self) -> OngoingTxns: ...


# (not frozen: a frozen dataclass's fields are set through `object.__setattr__`, which made
# one of these cost about 0.5 µs more, one per idempotent batch appended; never changed)
@dataclass(slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


def _batch_window() -> deque[BatchMetadata]:
    return deque(maxlen=NUM_BATCHES_TO_RETAIN)


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=_batch_window)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def update_epoch(self, producer_epoch: int) -> None:
        """A new epoch starts a new sequence window."""
        if producer_epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = producer_epoch

    def add_batch(self, producer_epoch: int, metadata: BatchMetadata) -> None:
        self.update_epoch(producer_epoch)
        self.batches.append(metadata)
        self.last_timestamp = metadata.timestamp

    def end_transaction(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        self.update_epoch(producer_epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def find_duplicate(
        self, producer_epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for metadata in self.batches:
            if metadata.first_seq == first_seq and metadata.last_seq == last_seq:
                return metadata
        return None

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        return (
            self.current_txn_first_offset is None and now_ms - self.last_timestamp >= expiration_ms
        )

    def to_snapshot(self) -> SnapshotEntry:
        last = self.batches[-1] if self.batches else None
        return SnapshotEntry(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            last_sequence=NO_SEQUENCE if last is None else last.last_seq,
            last_offset=-1 if last is None else last.last_offset,
            offset_delta=0 if last is None else last.offset_delta,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(
                -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
            ),
        )

    @classmethod
    def from_snapshot(cls, stored: SnapshotEntry) -> ProducerStateEntry:
        entry = cls(
            stored.producer_id,
            stored.producer_epoch,
            stored.coordinator_epoch,
            stored.timestamp,
            stored.current_txn_first_offset if stored.current_txn_first_offset >= 0 else None,
        )
        if stored.last_offset >= 0:
            entry.batches.append(
                BatchMetadata(
                    stored.last_sequence, stored.last_offset, stored.offset_delta, stored.timestamp
                )
            )
        return entry


@dataclass(frozen=True, slots=True)
class AppendCheck:
    """The verdict on one batch: append it, answer a duplicate, or answer an error."""

    error: ErrorCode = ErrorCode.NO_ERROR
    message: str | None = None
    duplicate: BatchMetadata | None = None

    @property
    def should_append(self) -> bool:
        return self.error == _NO_ERROR and self.duplicate is None

    @property
    def duplicate_base_offset(self) -> int | None:
        return None if self.duplicate is None else self.duplicate.first_offset

    @property
    def duplicate_log_append_time_ms(self) -> int:
        """What Kafka answers as `log_append_time_ms` for a duplicate: the original batch's
        max timestamp, whatever the topic's timestamp type (UnifiedLog.append)."""
        return NO_TIMESTAMP if self.duplicate is None else self.duplicate.timestamp


APPEND = AppendCheck()


@dataclass(frozen=True, slots=True)
class CoordinatorBatch:
    """A transactional batch the group coordinator writes for TxnOffsetCommit, as a
    ProducerBatch (Kafka writes them with base sequence 0)."""

    producer_id: int
    producer_epoch: int
    record_count: int
    base_sequence: int = 0
    is_transactional: bool = True


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction that a marker ended on one partition (Kafka's CompletedTxn), with the last
    stable offset right after it, as its aborted-transaction index entry records."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool
    last_stable_offset: int


def check_sequence(
    entry: ProducerStateEntry | None,
    producer_id: int,
    producer_epoch: int,
    first_seq: int,
    last_seq: int,
    is_transactional: bool,
) -> AppendCheck:
    """Rules 2-7 of the module docstring for one producer's batch."""
    if entry is None:
        entry = ProducerStateEntry(producer_id)
    duplicate = entry.find_duplicate(producer_epoch, first_seq, last_seq)
    if duplicate is not None:
        return AppendCheck(duplicate=duplicate)
    current_epoch = entry.producer_epoch
    if producer_epoch < current_epoch:
        return AppendCheck(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            f"Epoch of producer {producer_id} is {producer_epoch}, which is < the last seen "
            f"epoch {current_epoch}",
        )
    if producer_epoch != current_epoch:
        if first_seq != 0 and current_epoch != NO_PRODUCER_EPOCH:
            return AppendCheck(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Invalid sequence number for new epoch of producer {producer_id}: "
                f"{producer_epoch} (request epoch), {first_seq} (seq. number), "
                f"{current_epoch} (current producer epoch)",
            )
    elif current_epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, first_seq):
        return AppendCheck(
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
            f"Out of order sequence number for producer {producer_id}: {first_seq} "
            f"(incoming seq. number), {entry.last_seq} (current end sequence number)",
        )
    if entry.current_txn_first_offset is not None and not is_transactional:
        return AppendCheck(
            ErrorCode.INVALID_TXN_STATE,
            f"Expected transactional write from producer {producer_id}",
        )
    return APPEND


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


ProducerTable = dict[int, ProducerStateEntry]


class ProducerStateManager:
    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        node_id: int = 0,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        expiration_check_interval_ms: int = DEFAULT_EXPIRATION_CHECK_INTERVAL_MS,
        clock: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self.data_dir = data_dir
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.expiration_check_interval_ms = expiration_check_interval_ms
        self._clock = clock
        self._ids = ProducerIdGenerator(data_dir, node_id)
        self._tables: dict[PartitionView, ProducerTable] = {}
        # The partition object holding each (topic, index)'s table: one created again after
        # its topic was deleted replaces the old one's state.
        self._holders: dict[tuple[str, int], PartitionView] = {}
        self._next_expiration_check_ms = clock() + expiration_check_interval_ms

    @classmethod
    def from_config(cls, config: BrokerConfig, data_dir: Path | None) -> ProducerStateManager:
        return cls(
            data_dir,
            node_id=config.node_id,
            producer_id_expiration_ms=config.get_int("producer.id.expiration.ms"),
        )

    # -- producer ids --------------------------------------------------------------------------

    def new_producer_id(self) -> int:
        """A producer id never handed out before, also across restarts."""
        return self._ids.generate()

    # -- the produce path ----------------------------------------------------------------------

    def check_append(self, partition: PartitionView, batch: ProducerBatch) -> AppendCheck:
        if batch.producer_id <= NO_PRODUCER_ID:
            return APPEND
        entry = self._table(partition).get(batch.producer_id)
        first_seq = batch.base_sequence
        last_seq = increment_sequence(first_seq, batch.record_count - 1)
        return check_sequence(
            entry,
            batch.producer_id,
            batch.producer_epoch,
            first_seq,
            last_seq,
            batch.is_transactional,
        )

    def next_in_sequence(
        self,
        partition: PartitionView,
        producer_id: int,
        producer_epoch: int,
        first_seq: int,
        last_seq: int,
    ) -> ProducerStateEntry | None:
        """The common idempotent batch, checked with a few reads (the native Produce path):
        the producer's entry when its non-transactional batch `first_seq`-`last_seq` (no
        Int32 wrap) is the next in sequence of a known producer in the same epoch, with no
        open transaction and no batch of the last 5 ending at `last_seq` (so no duplicate):
        then `check_append` lets it through too. None for any other batch: ask
        `check_append`."""
        table = self._tables.get(partition)
        if table is None:
            return None
        entry = table.get(producer_id)
        if (
            entry is None
            or entry.producer_epoch != producer_epoch
            or entry.current_txn_first_offset is not None
            or last_seq > INT32_MAX
        ):
            return None
        batches = entry.batches
        if not batches or batches[-1].last_seq + 1 != first_seq:
            return None
        for metadata in batches:
            if metadata.last_seq == last_seq:
                return None
        return entry

    def record_next_in_sequence(
        self,
        entry: ProducerStateEntry,
        last_seq: int,
        last_offset: int,
        offset_delta: int,
        timestamp: int,
        wall_clock_ms: int,
    ) -> None:
        """`record_append` for a batch `next_in_sequence` let through, now stored up to
        `last_offset`: its metadata into the entry's window of the last 5 batches."""
        entry.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        entry.last_timestamp = timestamp
        # (`expire_if_due`'s test with the wall clock inline: called only when it has work)
        if self._clock is not _wall_clock_ms or wall_clock_ms >= self._next_expiration_check_ms:
            self.expire_if_due(wall_clock_ms)

    def check_coordinator_append(
        self, partition: PartitionView, batch: CoordinatorBatch
    ) -> AppendCheck:
        """Kafka's checks on a batch of origin COORDINATOR: the producer epoch, not sequences."""
        entry = self._table(partition).get(batch.producer_id)
        if entry is not None and batch.producer_epoch < entry.producer_epoch:
            return AppendCheck(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {batch.producer_id} is {batch.producer_epoch}, which is < the "
                f"last seen epoch {entry.producer_epoch}",
            )
        return APPEND

    def record_append(
        self,
        partition: PartitionView,
        batch: ProducerBatch,
        base_offset: int,
        last_offset: int,
        timestamp: int,
    ) -> None:
        """Remember a batch that `check_append` (or `check_coordinator_append`) let through, now
        stored at these offsets; `timestamp` is the stored batch's max timestamp (the append
        time for LogAppendTime)."""
        if batch.producer_id > NO_PRODUCER_ID:  # (a plain producer's batch needs no table)
            entry = self._apply_data_batch(
                self._table(partition),
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                base_offset,
                last_offset,
                timestamp,
                batch.is_transactional,
            )
            if entry.current_txn_first_offset is not None:
                partition.ongoing_txns.begin(batch.producer_id, entry.current_txn_first_offset)
        self.expire_if_due()

    def check_end_txn_marker(
        self,
        partition: PartitionView,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> AppendCheck:
        """Kafka's checks on a COMMIT/ABORT marker written by the transaction coordinator.

        A transactions V2 marker (KIP-1228: the marker names its transaction version) carries
        the epoch the coordinator bumped at the transaction's end, so it must be newer than the
        last seen epoch; an older marker's may be equal to it."""
        entry = self._table(partition).get(producer_id)
        if entry is None:
            return APPEND
        bumped = transaction_version >= TV2_MARKER_VERSION
        if producer_epoch < entry.producer_epoch or (
            bumped and producer_epoch == entry.producer_epoch
        ):
            comparison = "<=" if bumped else "<"
            return AppendCheck(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {producer_id} is {producer_epoch}, which is {comparison} the "
                f"last seen epoch {entry.producer_epoch} (TV{transaction_version})",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            return AppendCheck(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"Invalid coordinator epoch for producerId {producer_id}: {coordinator_epoch} "
                f"(zombie), {entry.coordinator_epoch} (current)",
            )
        return APPEND

    def record_end_txn_marker(
        self,
        partition: PartitionView,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        timestamp: int,
        *,
        marker_offset: int,
        commit: bool,
    ) -> CompletedTxn | None:
        """A COMMIT/ABORT marker was written at `marker_offset`: the producer's transaction on
        the partition is over. None if it had written nothing there (Kafka indexes no such
        transaction)."""
        table = self._table(partition)
        entry = table.setdefault(producer_id, ProducerStateEntry(producer_id))
        first_offset = entry.current_txn_first_offset
        entry.end_transaction(producer_epoch, coordinator_epoch, timestamp)
        ongoing = partition.ongoing_txns
        next_open = ongoing.first_offset_excluding(producer_id)
        ongoing.complete(producer_id)
        if first_offset is None:
            return None
        return CompletedTxn(
            producer_id,
            first_offset,
            marker_offset,
            not commit,
            marker_offset + 1 if next_open is None else next_open,
        )

    def active_producers(self, partition: PartitionView) -> Mapping[int, ProducerStateEntry]:
        return self._table(partition)

    @staticmethod
    def _apply_data_batch(
        table: ProducerTable,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        base_offset: int,
        last_offset: int,
        timestamp: int,
        is_transactional: bool,
    ) -> ProducerStateEntry:
        entry = table.setdefault(producer_id, ProducerStateEntry(producer_id))
        offset_delta = last_offset - base_offset
        last_seq = increment_sequence(base_sequence, offset_delta)
        entry.add_batch(
            producer_epoch, BatchMetadata(last_seq, last_offset, offset_delta, timestamp)
        )
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base_offset
        return entry

    def _table(self, partition: PartitionView) -> ProducerTable:
        table = self._tables.get(partition)
        if table is None and isinstance(partition.log, LazyPartitionLog):
            partition.log.target()  # opening it loads its state (Cluster.load's on_open)
            table = self._tables.get(partition)
        if table is None:
            self._forget_namesake(partition)
            table = self._tables[partition] = {}
        return table

    def _forget_namesake(self, partition: PartitionView) -> None:
        """A topic deleted and created again: the old partition's state must not survive it."""
        previous = self._holders.get((partition.topic, partition.index))
        if previous is not None and previous is not partition:
            self._tables.pop(previous, None)
        self._holders[(partition.topic, partition.index)] = partition

    # -- expiration ----------------------------------------------------------------------------

    def expire_if_due(self, wall_clock_ms: int | None = None) -> None:
        """What `record_append` does for a plain producer's batch (producer id -1): expire
        producers when their check interval has passed. `wall_clock_ms` is the caller's
        reading of the wall clock, which spares reading it again (unused with another clock,
        as tests give)."""
        if wall_clock_ms is not None and self._clock is _wall_clock_ms:
            now_ms = wall_clock_ms
        else:
            now_ms = self._clock()
        if now_ms >= self._next_expiration_check_ms:
            self.remove_expired_producers(now_ms)
            self._next_expiration_check_ms = now_ms + self.expiration_check_interval_ms

    def remove_expired_producers(self, now_ms: int) -> None:
        for table in self._tables.values():
            expired = [
                producer_id
                for producer_id, entry in table.items()
                if entry.is_expired(now_ms, self.producer_id_expiration_ms)
            ]
            for producer_id in expired:
                del table[producer_id]

    # -- partitions: load, reload, forget, snapshot ---------------------------------------------

    def rebuild(self, partitions: Iterable[PartitionView]) -> None:
        """Load every partition's state from its snapshot and log (at broker start)."""
        for partition in partitions:
            self.reload(partition)
        for table in self._tables.values():
            if table:
                self._ids.ensure_above(max(table))
        self.remove_expired_producers(self._clock())

    def reload(self, partition: PartitionView) -> None:
        """Rebuild one partition's state, e.g. after its log was truncated."""
        self._tables.pop(partition, None)
        table = self._table(partition)
        replay_from = partition.log.log_start_offset
        directory = self._directory(partition)
        if directory is not None:
            loaded = self._load_snapshot(directory, partition.log, table)
            if loaded is not None:
                replay_from = loaded
        self._replay(partition.log, table, replay_from)
        partition.ongoing_txns.reset(
            {
                producer_id: entry.current_txn_first_offset
                for producer_id, entry in table.items()
                if entry.current_txn_first_offset is not None
            }
        )

    def forget(self, partition: PartitionView) -> None:
        """Drop a deleted partition's state (its directory is gone; nothing is written)."""
        self._tables.pop(partition, None)
        if self._holders.get((partition.topic, partition.index)) is partition:
            del self._holders[(partition.topic, partition.index)]

    def close(self) -> None:
        """Write a snapshot at the log end offset of every partition (clean shutdown)."""
        for partition, table in self._tables.items():
            directory = self._directory(partition)
            if directory is None or not directory.is_dir():
                continue
            if getattr(partition.log, "storage_error", None) is not None:
                continue  # offline: its log end is not to be trusted; recovery rebuilds it
            offset = partition.log.log_end_offset
            existing = list_snapshots(directory)
            if (existing and existing[-1][0] == offset) or (not existing and not offset):
                continue  # as Kafka's takeSnapshot: nothing since the last snapshot
            try:
                written = write_snapshot(
                    directory, offset, (e.to_snapshot() for e in table.values())
                )
            except OSError as exc:
                log.error("no producer snapshot for %s: %s", directory.name, exc)
                continue
            for _, stale in existing:
                if stale != written:
                    stale.unlink(missing_ok=True)

    @staticmethod
    def _directory(partition: PartitionView) -> Path | None:
        """The partition's directory if its log is file-backed (FilePartitionLog.directory)."""
        directory = getattr(partition.log, "directory", None)
        return directory if isinstance(directory, Path) else None

    def _load_snapshot(
        self, directory: Path, partition_log: PartitionLogView, table: ProducerTable
    ) -> int | None:
        """Load the newest usable snapshot into `table` and return its offset.

        Snapshots beyond the log end (the log was truncated) or before the log start (the log
        they continue from is gone) are deleted, as are corrupt ones.
        """
        log_start = partition_log.log_start_offset
        log_end = partition_log.log_end_offset
        for offset, path in reversed(list_snapshots(directory)):
            if not log_start <= offset <= log_end:
                path.unlink(missing_ok=True)
                continue
            try:
                entries = read_snapshot(path)
            except CorruptSnapshotError as exc:
                log.warning("Failed to load producer snapshot from '%s': %s", path, exc)
                path.unlink(missing_ok=True)
                continue
            for stored in entries:
                table[stored.producer_id] = ProducerStateEntry.from_snapshot(stored)
            return offset
        return None

    def _replay(self, partition_log: PartitionLogView, table: ProducerTable, start: int) -> None:
        """Apply the stored batches from `start` to the log end, unchecked (Kafka's
        REPLICATION origin): only their headers and transaction markers are read."""
        offset = max(start, partition_log.log_start_offset)
        while offset < partition_log.log_end_offset:
            # the log returns at least one whole batch, however large (KIP-74)
            batches = split_batches(partition_log.read(offset, SCAN_CHUNK_BYTES))
            next_offset = offset
            for batch in batches:
                header = BatchHeader.parse(batch)
                if header.last_offset >= next_offset:
                    self._replay_batch(table, header, batch)
                    next_offset = header.last_offset + 1
            if next_offset == offset:
                return
            offset = next_offset

    def _replay_batch(self, table: ProducerTable, header: BatchHeader, batch: Buffer) -> None:
        if header.producer_id <= NO_PRODUCER_ID:
            return
        if header.is_control:
            marker = read_end_txn_marker(header, batch)
            if marker is not None:
                entry = table.setdefault(header.producer_id, ProducerStateEntry(header.producer_id))
                entry.end_transaction(
                    header.producer_epoch, marker.coordinator_epoch, header.max_timestamp
                )
            return
        self._apply_data_batch(
            table,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            header.base_offset,
            header.last_offset,
            header.max_timestamp,
            header.is_transactional,
        )
