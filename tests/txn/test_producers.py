"""Producer state: Kafka's sequence and epoch rules, duplicates, snapshots and rebuilds."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    ATTR_TRANSACTIONAL,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    BatchHeader,
    write_crc,
)
from minibroker.records.records import build_control_batch
from minibroker.txn.ongoing import OngoingTxns
from minibroker.txn.producer_ids import BLOCK_FILE, PRODUCER_ID_BLOCK_SIZE
from minibroker.txn.producers import (
    INT32_MAX,
    NUM_BATCHES_TO_RETAIN,
    ProducerStateManager,
    decrement_sequence,
    increment_sequence,
)
from minibroker.txn.snapshot import (
    CorruptSnapshotError,
    SnapshotEntry,
    decode_snapshot,
    encode_snapshot,
    list_snapshots,
    snapshot_file_name,
)

PID = 7
HOUR_MS = 3_600_000
NOW_MS = 1_700_000_000_000


# -- test doubles: a validated batch, an in-memory log of real batch headers, a partition ------


@dataclass(frozen=True)
class Batch:
    producer_id: int = PID
    producer_epoch: int = 0
    base_sequence: int = 0
    record_count: int = 1
    is_transactional: bool = False


def stored_batch(base_offset: int, batch: Batch, timestamp: int = NOW_MS) -> bytes:
    """Stored bytes of a batch: a real v2 header; the records are filler (only headers are
    read when producer state is rebuilt)."""
    records = b"\x00" * 8 * batch.record_count
    header = HEADER_STRUCT.pack(
        base_offset,
        HEADER_STRUCT.size - LOG_OVERHEAD + len(records),
        0,
        2,
        0,
        ATTR_TRANSACTIONAL if batch.is_transactional else 0,
        batch.record_count - 1,
        timestamp,
        timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.record_count,
    )
    data = bytearray(header + records)
    write_crc(data)
    return bytes(data)


@dataclass
class MemoryLog:
    batches: list[bytes] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    directory: Path | None = None
    reads: int = 0

    def append(self, data: bytes) -> None:
        self.batches.append(data)
        self.log_end_offset = BatchHeader.parse(data).last_offset + 1

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`, at least one even past max_bytes."""
        self.reads += 1
        out = b""
        for data in self.batches:
            if BatchHeader.parse(data).last_offset < offset:
                continue
            if out and len(out) + len(data) > max_bytes:
                break
            out += data
        return out


@dataclass(eq=False)
class Partition:
    topic: str = "events"
    index: int = 0
    log: MemoryLog = field(default_factory=MemoryLog)
    ongoing_txns: OngoingTxns = field(default_factory=OngoingTxns)


class Producer:
    """Drives check_append / record_append as the Produce handler does."""

    def __init__(self, manager: ProducerStateManager, partition: Partition) -> None:
        self.manager = manager
        self.partition = partition

    def send(self, batch: Batch, timestamp: int = NOW_MS) -> ErrorCode | tuple[str, int]:
        check = self.manager.check_append(self.partition, batch)
        if check.duplicate is not None:
            return ("duplicate", check.duplicate.first_offset)
        if check.error != ErrorCode.NO_ERROR:
            return check.error
        assert check.should_append
        base = self.partition.log.log_end_offset
        self.partition.log.append(stored_batch(base, batch, timestamp))
        last = base + batch.record_count - 1
        self.manager.record_append(self.partition, batch, base, last, timestamp)
        return ("appended", base)


class Clock:
    def __init__(self) -> None:
        self.now_ms = NOW_MS

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def partition() -> Partition:
    return Partition()


@pytest.fixture
def manager(clock: Clock) -> ProducerStateManager:
    return ProducerStateManager(clock=clock)


@pytest.fixture
def producer(manager: ProducerStateManager, partition: Partition) -> Producer:
    return Producer(manager, partition)


def appended(offset: int) -> tuple[str, int]:
    return ("appended", offset)


def duplicate_of(offset: int) -> tuple[str, int]:
    return ("duplicate", offset)


# -- sequence numbers ----------------------------------------------------------------------------


def test_consecutive_batches_are_appended(producer: Producer) -> None:
    assert producer.send(Batch(base_sequence=0, record_count=3)) == appended(0)
    assert producer.send(Batch(base_sequence=3, record_count=2)) == appended(3)
    assert producer.send(Batch(base_sequence=5)) == appended(5)


def test_unknown_producer_is_accepted_at_any_sequence(producer: Producer) -> None:
    assert producer.send(Batch(base_sequence=42)) == appended(0)
    assert producer.send(Batch(base_sequence=43)) == appended(1)


def test_gap_is_out_of_order(producer: Producer) -> None:
    producer.send(Batch(base_sequence=0, record_count=2))
    assert producer.send(Batch(base_sequence=3)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producer.send(Batch(base_sequence=2)) == appended(2)


def test_each_of_the_last_five_batches_is_a_duplicate(producer: Producer) -> None:
    for seq in range(7):
        producer.send(Batch(base_sequence=seq * 2, record_count=2))
    for seq in range(7 - NUM_BATCHES_TO_RETAIN, 7):
        assert producer.send(Batch(base_sequence=seq * 2, record_count=2)) == duplicate_of(seq * 2)
    # older than the window: no longer recognised, so it is out of order
    assert producer.send(Batch(base_sequence=2, record_count=2)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert producer.partition.log.log_end_offset == 14


def test_duplicate_needs_the_exact_sequence_range(producer: Producer) -> None:
    producer.send(Batch(base_sequence=0, record_count=3))
    assert producer.send(Batch(base_sequence=0, record_count=2)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )


def test_duplicate_answers_offsets_and_timestamp_of_the_original(
    manager: ProducerStateManager, producer: Producer
) -> None:
    producer.send(Batch(base_sequence=0, record_count=4), timestamp=NOW_MS - 5)
    check = manager.check_append(producer.partition, Batch(base_sequence=0, record_count=4))
    assert check.duplicate is not None
    assert (check.duplicate.first_offset, check.duplicate.last_offset) == (0, 3)
    assert check.duplicate.timestamp == NOW_MS - 5
    assert not check.should_append


def test_sequence_wraps_at_int32_max(producer: Producer) -> None:
    assert producer.send(Batch(base_sequence=INT32_MAX - 1, record_count=3)) == appended(0)
    assert producer.send(Batch(base_sequence=1)) == appended(3)
    assert producer.send(Batch(base_sequence=INT32_MAX - 1, record_count=3)) == duplicate_of(0)


def test_batch_ending_at_int32_max_continues_at_zero(producer: Producer) -> None:
    producer.send(Batch(base_sequence=INT32_MAX - 1, record_count=2))
    assert producer.send(Batch(base_sequence=INT32_MAX + 1 - 2**31)) == appended(2)


@given(st.integers(0, INT32_MAX), st.integers(0, 100_000))
def test_decrement_undoes_increment(sequence: int, delta: int) -> None:
    incremented = increment_sequence(sequence, delta)
    assert 0 <= incremented <= INT32_MAX
    assert decrement_sequence(incremented, delta) == sequence


def test_non_idempotent_batches_are_never_checked(producer: Producer) -> None:
    plain = Batch(producer_id=-1, producer_epoch=-1, base_sequence=-1)
    assert producer.send(plain) == appended(0)
    assert producer.send(plain) == appended(1)
    assert producer.manager.active_producers(producer.partition) == {}


def test_producers_are_independent_per_partition(manager: ProducerStateManager) -> None:
    first = Producer(manager, Partition(index=0))
    second = Producer(manager, Partition(index=1))
    first.send(Batch(base_sequence=0))
    assert first.send(Batch(base_sequence=5)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert second.send(Batch(base_sequence=5)) == appended(0)


# -- epochs --------------------------------------------------------------------------------------


def test_older_epoch_is_fenced(producer: Producer) -> None:
    producer.send(Batch(producer_epoch=3))
    assert producer.send(Batch(producer_epoch=2, base_sequence=1)) == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )


def test_new_epoch_must_start_at_sequence_zero(producer: Producer) -> None:
    producer.send(Batch(producer_epoch=0, base_sequence=0, record_count=5))
    assert producer.send(Batch(producer_epoch=1, base_sequence=5)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert producer.send(Batch(producer_epoch=1, base_sequence=0)) == appended(5)
    assert producer.send(Batch(producer_epoch=1, base_sequence=1)) == appended(6)
    # the old epoch's batches are no longer duplicates: the old epoch is fenced
    assert producer.send(Batch(producer_epoch=0, base_sequence=0, record_count=5)) == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )


def test_non_transactional_write_during_a_transaction(producer: Producer) -> None:
    producer.send(Batch(is_transactional=True))
    assert producer.send(Batch(base_sequence=1)) == ErrorCode.INVALID_TXN_STATE
    producer.manager.record_end_txn_marker(
        producer.partition, PID, 0, 0, NOW_MS, marker_offset=1, commit=True
    )
    assert producer.send(Batch(base_sequence=1)) == appended(1)


# -- expiration ----------------------------------------------------------------------------------


def test_idle_producers_expire(clock: Clock, partition: Partition) -> None:
    manager = ProducerStateManager(
        clock=clock, producer_id_expiration_ms=HOUR_MS, expiration_check_interval_ms=1000
    )
    producer = Producer(manager, partition)
    producer.send(Batch(base_sequence=0), timestamp=NOW_MS)
    producer.send(Batch(producer_id=PID + 1), timestamp=NOW_MS + HOUR_MS)
    clock.now_ms = NOW_MS + HOUR_MS
    producer.send(Batch(producer_id=PID + 2), timestamp=NOW_MS + HOUR_MS)
    assert set(manager.active_producers(partition)) == {PID + 1, PID + 2}
    # expired: Kafka accepts its next batch at any sequence
    assert producer.send(Batch(base_sequence=9)) == appended(3)


# -- producer ids --------------------------------------------------------------------------------


def test_new_producer_ids_are_distinct(manager: ProducerStateManager) -> None:
    issued = [manager.new_producer_id() for _ in range(3)]
    assert len(set(issued)) == 3
    assert min(issued) >= 0


def test_producer_ids_are_not_reused_after_a_restart(tmp_path: Path) -> None:
    before = ProducerStateManager(tmp_path)
    issued = {before.new_producer_id() for _ in range(3)}
    assert (tmp_path / BLOCK_FILE).exists()
    after = ProducerStateManager(tmp_path)
    new_id = after.new_producer_id()
    assert new_id > max(issued)
    assert new_id == PRODUCER_ID_BLOCK_SIZE


def test_memory_broker_ids_stay_above_ids_found_in_the_log(partition: Partition) -> None:
    partition.log.append(stored_batch(0, Batch(producer_id=4321)))
    manager = ProducerStateManager()
    manager.rebuild([partition])
    assert manager.new_producer_id() > 4321


# -- snapshot files ------------------------------------------------------------------------------


def test_snapshot_layout_is_kafkas() -> None:
    entry = SnapshotEntry(1, 2, 3, 4, 5, 6, 7, -1)
    data = encode_snapshot([entry])
    assert data[:2] == b"\x00\x01"
    assert data[6:10] == b"\x00\x00\x00\x01"
    assert data[10:] == struct.pack(">qhiqiqiq", 1, 2, 3, 4, 5, 6, 7, -1)
    assert len(data) == 2 + 4 + 4 + 46
    assert snapshot_file_name(42) == "00000000000000000042.snapshot"


snapshot_entries = st.lists(
    st.builds(
        SnapshotEntry,
        st.integers(0, 2**63 - 1),
        st.integers(-1, 2**15 - 1),
        st.integers(-1, INT32_MAX),
        st.integers(-1, 2**63 - 1),
        st.integers(0, INT32_MAX),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-1, INT32_MAX),
        st.integers(-1, 2**63 - 1),
    ),
    max_size=20,
)


@given(snapshot_entries)
def test_snapshot_round_trip(entries: list[SnapshotEntry]) -> None:
    assert decode_snapshot(encode_snapshot(entries)) == entries


@given(snapshot_entries.filter(bool), st.data())
def test_snapshot_with_any_flipped_byte_is_corrupt(
    entries: list[SnapshotEntry], data: st.DataObject
) -> None:
    encoded = bytearray(encode_snapshot(entries))
    position = data.draw(st.integers(0, len(encoded) - 1))
    encoded[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(encoded))


def test_truncated_snapshot_is_corrupt() -> None:
    encoded = encode_snapshot([SnapshotEntry(1, 2, 3, 4, 5, 6, 7, -1)])
    for end in range(len(encoded)):
        with pytest.raises(CorruptSnapshotError):
            decode_snapshot(encoded[:end])


# -- restarts ------------------------------------------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, partition: Partition) -> Path:
    directory = tmp_path / f"{partition.topic}-{partition.index}"
    directory.mkdir()
    partition.log.directory = directory
    return tmp_path


def partition_dir(data_dir: Path, partition: Partition) -> Path:
    return data_dir / f"{partition.topic}-{partition.index}"


def restarted(data_dir: Path | None, partition: Partition, clock: Clock) -> Producer:
    manager = ProducerStateManager(data_dir, clock=clock)
    manager.rebuild([partition])
    return Producer(manager, partition)


def send_six(producer: Producer) -> None:
    for seq in range(6):
        assert producer.send(Batch(base_sequence=seq * 2, record_count=2)) == appended(seq * 2)


def test_clean_shutdown_writes_a_snapshot_at_the_log_end(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    snapshots = list_snapshots(partition_dir(data_dir, partition))
    assert [offset for offset, _ in snapshots] == [12]
    (entry,) = decode_snapshot(snapshots[0][1].read_bytes())
    assert entry == SnapshotEntry(PID, 0, 11, 11, 1, NOW_MS, -1, -1)


def test_sequences_continue_after_a_clean_restart(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    partition.log.reads = 0
    producer = restarted(data_dir, partition, clock)
    assert partition.log.reads == 0  # the snapshot sits at the log end: nothing to replay
    assert producer.send(Batch(base_sequence=10, record_count=2)) == duplicate_of(10)
    assert producer.send(Batch(base_sequence=13)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producer.send(Batch(base_sequence=12)) == appended(12)


def test_state_is_rebuilt_from_the_log_after_a_crash(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    send_six(restarted(data_dir, partition, clock))  # no close(): no snapshot
    assert list_snapshots(partition_dir(data_dir, partition)) == []
    producer = restarted(data_dir, partition, clock)
    for seq in range(1, 6):  # the whole window of 5 batches came back from the log
        assert producer.send(Batch(base_sequence=seq * 2, record_count=2)) == duplicate_of(seq * 2)
    assert producer.send(Batch(base_sequence=13)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert producer.send(Batch(base_sequence=12)) == appended(12)


def test_memory_log_rebuilds_from_the_log(partition: Partition, clock: Clock) -> None:
    send_six(restarted(None, partition, clock))
    producer = restarted(None, partition, clock)
    assert producer.send(Batch(base_sequence=10, record_count=2)) == duplicate_of(10)
    assert producer.send(Batch(base_sequence=12)) == appended(12)


def test_log_after_the_snapshot_is_replayed(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    producer = restarted(data_dir, partition, clock)
    producer.send(Batch(base_sequence=12, record_count=3))  # then a crash: no close()
    producer.send(Batch(producer_id=PID + 1, base_sequence=0))
    producer = restarted(data_dir, partition, clock)
    assert producer.send(Batch(base_sequence=12, record_count=3)) == duplicate_of(12)
    assert producer.send(Batch(base_sequence=15)) == appended(16)
    assert producer.send(Batch(producer_id=PID + 1, base_sequence=2)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )


def test_snapshot_before_the_log_start_is_not_used(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    producer = restarted(data_dir, partition, clock)
    producer.send(Batch(producer_id=PID + 1, record_count=2))
    partition.log.log_start_offset = 13  # DeleteRecords, then a crash
    producer = restarted(data_dir, partition, clock)
    assert list_snapshots(partition_dir(data_dir, partition)) == []
    assert set(producer.manager.active_producers(partition)) == {PID + 1}


def test_snapshot_beyond_the_log_end_is_not_used(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    del partition.log.batches[3:]  # recovery truncated the log tail
    partition.log.log_end_offset = 6
    producer = restarted(data_dir, partition, clock)
    assert producer.send(Batch(base_sequence=6, record_count=2)) == appended(6)


def test_corrupt_snapshot_falls_back_to_the_log(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.close()
    ((_, path),) = list_snapshots(partition_dir(data_dir, partition))
    corrupt = bytearray(path.read_bytes())
    corrupt[-1] ^= 0x01
    path.write_bytes(bytes(corrupt))
    producer = restarted(data_dir, partition, clock)
    assert producer.send(Batch(base_sequence=8, record_count=2)) == duplicate_of(8)
    assert producer.send(Batch(base_sequence=12)) == appended(12)


def test_only_the_newest_snapshot_is_kept(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    for _ in range(3):
        producer = restarted(data_dir, partition, clock)
        producer.send(Batch(producer_id=-1))
        producer.manager.close()
    assert [o for o, _ in list_snapshots(partition_dir(data_dir, partition))] == [3]


def test_deleted_partition_gets_no_snapshot(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    producer.manager.forget(partition)
    producer.manager.close()
    assert list_snapshots(partition_dir(data_dir, partition)) == []


def test_open_transaction_and_marker_survive_a_crash(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    producer.send(Batch(is_transactional=True))
    producer = restarted(data_dir, partition, clock)
    assert producer.send(Batch(base_sequence=1)) == ErrorCode.INVALID_TXN_STATE
    partition.log.append(
        build_control_batch(
            True,
            producer_id=PID,
            producer_epoch=0,
            coordinator_epoch=5,
            timestamp=NOW_MS,
            base_offset=1,
        )
    )
    producer = restarted(data_dir, partition, clock)
    entry = producer.manager.active_producers(partition)[PID]
    assert (entry.current_txn_first_offset, entry.coordinator_epoch) == (None, 5)
    assert producer.send(Batch(base_sequence=1)) == appended(2)


def test_large_batches_are_replayed(partition: Partition, clock: Clock) -> None:
    producer = restarted(None, partition, clock)
    producer.send(Batch(record_count=300_000))
    producer = restarted(None, partition, clock)
    assert producer.send(Batch(base_sequence=300_000)) == appended(300_000)


def test_recreated_topic_starts_without_the_old_state(
    data_dir: Path, partition: Partition, clock: Clock
) -> None:
    producer = restarted(data_dir, partition, clock)
    send_six(producer)
    recreated = Partition(log=MemoryLog(directory=partition.log.directory))
    again = Producer(producer.manager, recreated)
    assert again.send(Batch(base_sequence=5)) == appended(0)
    producer.manager.close()
    ((offset, path),) = list_snapshots(partition_dir(data_dir, partition))
    assert offset == 1
    assert [e.producer_id for e in decode_snapshot(path.read_bytes())] == [PID]
    assert decode_snapshot(path.read_bytes())[0].last_sequence == 5


def test_reload_after_a_truncation_forgets_the_removed_batches(
    partition: Partition, clock: Clock
) -> None:
    producer = restarted(None, partition, clock)
    send_six(producer)
    del partition.log.batches[4:]
    partition.log.log_end_offset = 8
    producer.manager.reload(partition)
    assert producer.send(Batch(base_sequence=10, record_count=2)) == (
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert producer.send(Batch(base_sequence=8, record_count=2)) == appended(8)


def test_abort_marker_in_the_log_ends_the_transaction(partition: Partition, clock: Clock) -> None:
    producer = restarted(None, partition, clock)
    producer.send(Batch(is_transactional=True))
    partition.log.append(
        build_control_batch(
            False,
            producer_id=PID,
            producer_epoch=0,
            coordinator_epoch=2,
            timestamp=NOW_MS,
            base_offset=1,
        )
    )
    producer = restarted(None, partition, clock)
    assert producer.send(Batch(base_sequence=1)) == appended(2)


def test_rebuild_reads_a_real_log_across_segments(clock: Clock) -> None:
    from minibroker.cluster.state import Partition as ClusterPartition
    from minibroker.log.config import LogConfig
    from minibroker.log.memory import MemoryPartitionLog

    log = MemoryPartitionLog("events", 0, uuid.uuid4(), LogConfig(segment_bytes=200))
    partition = ClusterPartition("events", 0, log)
    manager = ProducerStateManager(clock=clock)
    for sequence in range(0, 40, 2):
        batch = Batch(base_sequence=sequence, record_count=2)
        data = stored_batch(0, batch)
        base = log.append(bytearray(data), 0, NOW_MS)
        manager.record_append(partition, batch, base, base + 1, NOW_MS)
    assert len(log.segments()) > 5
    rebuilt = ProducerStateManager(clock=clock)
    rebuilt.rebuild([partition])
    (entry,) = rebuilt.active_producers(partition).values()
    assert entry.batches == manager.active_producers(partition)[PID].batches
    assert [b.first_offset for b in entry.batches] == [30, 32, 34, 36, 38]
