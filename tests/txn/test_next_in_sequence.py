"""The native Produce path's check and record of an idempotent producer's next batch
(`ProducerStateManager.next_in_sequence` and `record_next_in_sequence`) against the
reference (`check_append` and `record_append`): twin managers, each with its own partition
and log, are fed the same random batches (in order, duplicates, gaps, going back, epoch
bumps and fencing, sequences about Int32 max, transactions and their markers), restarts
(clean, with snapshots, and crashes) and expiry, and must give the same verdicts and hold
the same state, snapshots and logs after every step."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_control_batch
from minibroker.txn.producers import INT32_MAX, NO_PRODUCER_ID, ProducerStateManager
from tests.txn.test_producers import (
    HOUR_MS,
    NOW_MS,
    Batch,
    Clock,
    MemoryLog,
    Partition,
    Producer,
    stored_batch,
)

PIDS = (7, 8)
Outcome = ErrorCode | tuple[str, int]


class Twin:
    """One side: a manager, its partition (with a snapshot directory) and its clock."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        (directory / "events-0").mkdir()
        self.data_dir = directory
        self.clock = Clock()
        self.partition = Partition(log=MemoryLog(directory=directory / "events-0"))
        self.fast_appends = 0
        self.restart(clean=False)

    def restart(self, clean: bool) -> None:
        if clean and hasattr(self, "manager"):
            self.manager.close()
        self.manager = ProducerStateManager(
            self.data_dir,
            clock=self.clock,
            producer_id_expiration_ms=HOUR_MS,
            expiration_check_interval_ms=1000,
        )
        self.manager.rebuild([self.partition])

    def send(self, batch: Batch, timestamp: int, fast: bool) -> Outcome:
        if fast and not batch.is_transactional and batch.producer_id > NO_PRODUCER_ID:
            outcome = self._send_next(batch, timestamp)
            if outcome is not None:
                return outcome
        return Producer(self.manager, self.partition).send(batch, timestamp)

    def _send_next(self, batch: Batch, timestamp: int) -> Outcome | None:
        """As produce_native does: the fast check, then the append and the lean record."""
        last_seq = batch.base_sequence + batch.record_count - 1
        entry = self.manager.next_in_sequence(
            self.partition, batch.producer_id, batch.producer_epoch, batch.base_sequence, last_seq
        )
        if entry is None:
            return None
        log = self.partition.log
        base = log.log_end_offset
        log.append(stored_batch(base, batch, timestamp))
        delta = batch.record_count - 1
        self.manager.record_next_in_sequence(
            entry, last_seq, base + delta, delta, timestamp, self.clock.now_ms
        )
        self.fast_appends += 1
        return ("appended", base)

    def end_txn(self, producer_id: int, epoch: int, commit: bool) -> Any:
        check = self.manager.check_end_txn_marker(self.partition, producer_id, epoch, 0)
        if check.error != ErrorCode.NO_ERROR:
            return check.error
        log = self.partition.log
        offset = log.log_end_offset
        log.append(
            build_control_batch(
                commit,
                producer_id=producer_id,
                producer_epoch=epoch,
                coordinator_epoch=0,
                timestamp=self.clock.now_ms,
                base_offset=offset,
            )
        )
        return self.manager.record_end_txn_marker(
            self.partition,
            producer_id,
            epoch,
            0,
            self.clock.now_ms,
            marker_offset=offset,
            commit=commit,
        )

    def state(self) -> Any:
        table = self.manager.active_producers(self.partition)
        directory = self.data_dir / "events-0"
        ongoing = self.partition.ongoing_txns
        return (
            sorted((pid, repr(entry)) for pid, entry in table.items()),
            {pid: ongoing.first_offset_of(pid) for pid in PIDS},
            self.partition.log.batches,
            sorted((path.name, path.read_bytes()) for path in directory.iterdir()),
        )


def _base_sequence(data: Any, reference: Twin, producer_id: int, epoch: int, count: int) -> int:
    """A base sequence, mostly the producer's next one (the fast path's case)."""
    entry = reference.manager.active_producers(reference.partition).get(producer_id)
    window = list(entry.batches) if entry is not None else []
    following = 0 if not window else (window[-1].last_seq + 1) % (INT32_MAX + 1)
    kind = data.draw(
        st.sampled_from(
            ["next"] * 6 + ["duplicate", "same start", "gap", "back", "zero", "top", "any"]
        )
    )
    if kind == "duplicate" and window:
        return data.draw(st.sampled_from(window)).first_seq
    if kind == "same start" and window:
        return window[-1].first_seq
    if kind == "gap":
        return following + data.draw(st.integers(1, 3))
    if kind == "back":
        return max(0, following - data.draw(st.integers(2, 4)))
    if kind == "zero":
        return 0
    if kind == "top":
        return INT32_MAX - data.draw(st.integers(0, 3)) * count
    if kind == "any":
        return data.draw(st.integers(0, INT32_MAX))
    return following


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_fast_and_reference_paths_agree(data: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fast, reference = Twin(Path(tmp) / "fast"), Twin(Path(tmp) / "reference")
        epochs = dict.fromkeys(PIDS, 0)
        for _ in range(data.draw(st.integers(1, 40))):
            step = data.draw(
                st.sampled_from(
                    ["send"] * 10 + ["bump", "fence", "txn", "marker", "restart", "crash", "expire"]
                )
            )
            producer_id = data.draw(st.sampled_from(PIDS))
            if step == "restart" or step == "crash":
                for twin in (fast, reference):
                    twin.restart(clean=step == "restart")
            elif step == "expire":
                advance = data.draw(st.sampled_from([1000, HOUR_MS // 2, HOUR_MS]))
                for twin in (fast, reference):
                    twin.clock.now_ms += advance
                    twin.manager.expire_if_due()
            elif step == "marker":
                commit = data.draw(st.booleans())
                answers = [
                    twin.end_txn(producer_id, epochs[producer_id], commit)
                    for twin in (fast, reference)
                ]
                assert answers[0] == answers[1]
            else:
                if step == "bump":
                    epochs[producer_id] += 1
                epoch = epochs[producer_id] - (step == "fence")
                count = data.draw(st.integers(1, 3))
                batch = Batch(
                    producer_id,
                    epoch,
                    _base_sequence(data, reference, producer_id, epoch, count),
                    count,
                    is_transactional=step == "txn",
                )
                timestamp = reference.clock.now_ms + data.draw(st.sampled_from([0, -HOUR_MS]))
                got = fast.send(batch, timestamp, fast=True)
                assert got == reference.send(batch, timestamp, fast=False), batch
            assert fast.state() == reference.state()


def test_in_order_batches_take_the_fast_path(tmp_path: Path) -> None:
    """After the first batch (an unknown producer: the reference path), the fast path takes
    each next batch; a duplicate, a gap and a new epoch are the reference's."""
    fast = Twin(tmp_path / "fast")
    for sequence in range(6):
        assert fast.send(Batch(base_sequence=sequence), NOW_MS, fast=True) == ("appended", sequence)
    assert fast.fast_appends == 5
    assert fast.send(Batch(base_sequence=5), NOW_MS, fast=True) == ("duplicate", 5)
    assert (
        fast.send(Batch(base_sequence=7), NOW_MS, fast=True)
        == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert fast.send(Batch(producer_epoch=1), NOW_MS, fast=True) == ("appended", 6)
    assert fast.fast_appends == 5
