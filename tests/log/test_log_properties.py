"""Property tests: random appends, reads, rolls, truncations, deletions, retention and restarts
against a plain list of batches, run the same way on the file log and the memory log.

Invariant: the log always serves exactly the model's batches, whole, from the batch holding the
requested offset to at most the end of its segment, within max_bytes unless one batch exceeds it.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from minibroker.log import LogConfig, LogManager, OffsetOutOfRange, PartitionLog

from .log_testing import batch_base_offset, batch_last_offset, make_batch, split_batches, stamped

CONFIG = LogConfig(
    segment_bytes=1000,
    index_interval_bytes=64,
    segment_index_bytes=48,  # 6 offset entries / 4 time entries: index-full rolls happen too
    retention_ms=-1,
)
TOPIC = "prop"


def max_timestamp(batch: bytes) -> int:
    return int.from_bytes(batch[35:43], "big", signed=True)


class LogMachine(RuleBasedStateMachine):
    data_dir: Path | None = None  # None: the memory-backed log

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[bytes] = []  # every batch still stored, oldest first
        self.log_start = 0
        self.log_end = 0
        self.now_ms = 1_000_000
        self.epoch = 0

    # -- backend -------------------------------------------------------------------------------

    def open_manager(self) -> LogManager:
        return LogManager(self.data_dir, node_id=0, cluster_id="p", default_config=CONFIG)

    @initialize()
    def create_log(self) -> None:
        self.manager = self.open_manager()
        self.log: PartitionLog = self.manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)

    def teardown(self) -> None:
        if hasattr(self, "manager"):
            self.manager.close()

    # -- rules ---------------------------------------------------------------------------------

    @rule(
        records=st.integers(1, 4),
        value_size=st.integers(0, 200),
        timestamp=st.integers(0, 10_000),
    )
    def append(self, records: int, value_size: int, timestamp: int) -> None:
        batch = make_batch([b"v" * value_size] * records, timestamp=timestamp, timestamp_step=3)
        self.now_ms += 10
        base = self.log.append(bytearray(batch), self.epoch, self.now_ms)
        assert base == self.log_end
        self.batches.append(stamped(batch, base, self.epoch))
        self.log_end = base + records

    @rule(
        sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 200)), min_size=1, max_size=8),
        timestamp=st.integers(0, 10_000),
    )
    def append_several(self, sizes: list[tuple[int, int]], timestamp: int) -> None:
        for step, (records, value_size) in enumerate(sizes):
            self.append(records, value_size, timestamp + 7 * step)

    @rule(data=st.data(), max_bytes=st.integers(1, 2000), bounded=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, bounded: bool) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end))
        upper = data.draw(st.integers(offset, self.log_end)) if bounded else None
        expected = self.expected_read(offset, max_bytes, upper)
        assert self.log.read(offset, max_bytes, upper) == expected
        found = self.log.read_batches(offset, max_bytes, upper)
        if expected:
            assert found is not None
            assert found.next_offset == self.expected_next_offset(expected)

    @rule(data=st.data())
    def read_out_of_range(self, data: st.DataObject) -> None:
        below = st.integers(max(0, self.log_start - 50), self.log_start - 1)
        above = st.integers(self.log_end + 1, self.log_end + 50)
        offset = data.draw(above if self.log_start == 0 else st.one_of(below, above))
        with pytest.raises(OffsetOutOfRange):
            self.log.read(offset, 100)

    @rule(timestamp=st.integers(0, 11_000))
    def find_by_timestamp(self, timestamp: int) -> None:
        expected = next(
            (
                batch
                for batch in self.batches
                if batch_last_offset(batch) >= self.log_start and max_timestamp(batch) >= timestamp
            ),
            None,
        )
        assert self.log.batch_for_timestamp(timestamp) == expected

    @rule()
    def find_max_timestamp(self) -> None:
        found = self.log.batch_with_max_timestamp()
        if not self.batches:
            assert found is None
            return
        assert found is not None
        assert max_timestamp(found) == max(max_timestamp(batch) for batch in self.batches)

    @rule()
    def roll(self) -> None:
        self.log.roll(self.now_ms)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        first_base = self.log.segments()[0][0]
        offset = data.draw(st.integers(max(0, first_base - 3), self.log_end))
        self.log.truncate_to(offset)
        if offset >= self.log_end:
            return
        if offset < first_base:
            self.batches, self.log_start, self.log_end = [], offset, offset
            return
        kept = [batch for batch in self.batches if batch_last_offset(batch) < offset]
        self.log_end = batch_base_offset(self.batches[len(kept)])
        self.batches = kept
        self.log_start = min(self.log_start, self.log_end)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.log_end))
        assert self.log.delete_records_before(offset) == max(self.log_start, offset)
        self.log_start = max(self.log_start, offset)
        self.drop_deleted_segments()

    @rule(retention_bytes=st.integers(0, 3000))
    def retention_by_size(self, retention_bytes: int) -> None:
        before = self.log.segments()
        self.log.update_config(dataclasses.replace(CONFIG, retention_bytes=retention_bytes))
        deleted = self.log.apply_retention(self.now_ms)
        self.log.update_config(CONFIG)
        after = self.log.segments()
        assert after == before[deleted:]
        remaining = sum(size for _base, size in after)
        assert len(after) == 1 or remaining - after[0][1] < retention_bytes
        self.log_start = max(self.log_start, after[0][0])
        self.drop_deleted_segments()

    @precondition(lambda self: self.data_dir is not None)
    @rule(clean=st.booleans())
    def restart(self, clean: bool) -> None:
        if clean:
            self.manager.close()
        else:
            self.manager.pool.close_all()  # as if killed: no flush, checkpoints or marker
        self.manager = self.open_manager()
        [self.log] = self.manager.load()
        self.epoch += 1

    # -- model ---------------------------------------------------------------------------------

    def drop_deleted_segments(self) -> None:
        first_base = self.log.segments()[0][0]
        self.batches = [b for b in self.batches if batch_base_offset(b) >= first_base]

    def expected_read(self, offset: int, max_bytes: int, upper: int | None) -> bytes:
        upper = self.log_end if upper is None else upper
        if offset >= upper:
            return b""
        bases = [base for base, _size in self.log.segments()]
        start = next(i for i, b in enumerate(self.batches) if batch_last_offset(b) >= offset)
        segment_end = next(
            (base for base in bases if base > batch_base_offset(self.batches[start])), None
        )
        out: list[bytes] = []
        total = 0
        for batch in self.batches[start:]:
            base = batch_base_offset(batch)
            if base >= upper or (segment_end is not None and base >= segment_end):
                break
            if out and total + len(batch) > max_bytes:
                break
            out.append(batch)
            total += len(batch)
        return b"".join(out)

    def expected_next_offset(self, served: bytes) -> int:
        """The offset after a read that served `served`: the base offset of the next batch
        of the same segment, else the one after the last batch served."""
        last = split_batches(served)[-1]
        position = self.batches.index(last)
        bases = [base for base, _size in self.log.segments()]
        segment_end = next((base for base in bases if base > batch_base_offset(last)), None)
        if position + 1 < len(self.batches):
            following = batch_base_offset(self.batches[position + 1])
            if segment_end is None or following < segment_end:
                return following
        return batch_last_offset(last) + 1

    @invariant()
    def offsets_and_sizes_match(self) -> None:
        if not hasattr(self, "log"):
            return
        assert self.log.log_start_offset == self.log_start
        assert self.log.log_end_offset == self.log_end
        segments = self.log.segments()
        assert segments[0][0] <= self.log_start
        assert [base for base, _ in segments] == sorted({base for base, _ in segments})
        assert self.log.size_bytes == sum(len(batch) for batch in self.batches)

    @invariant()
    def contents_match(self) -> None:
        if not hasattr(self, "log"):
            return
        served: list[bytes] = []
        offset = self.log_start
        while offset < self.log_end:
            served += split_batches(self.log.read(offset, 1 << 20))
            offset = batch_last_offset(served[-1]) + 1
        first = next(
            (i for i, b in enumerate(self.batches) if batch_last_offset(b) >= self.log_start),
            len(self.batches),
        )
        assert served == self.batches[first:]


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class MemoryLogMachine(LogMachine):
    pass


class FileLogMachine(LogMachine):
    def __init__(self) -> None:
        super().__init__()
        self.data_dir = Path(tempfile.mkdtemp(prefix="minibroker-log-prop-"))

    def teardown(self) -> None:
        super().teardown()
        assert self.data_dir is not None
        shutil.rmtree(self.data_dir)


@pytest.mark.parametrize("machine", [MemoryLogMachine, FileLogMachine], ids=["memory", "file"])
def test_log_behaves_like_a_list_of_batches(machine: type[LogMachine]) -> None:
    machine.TestCase.settings = SETTINGS
    machine.TestCase().runTest()
