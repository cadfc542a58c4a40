"""`SegmentedLog.append_plain` (the native Produce path's append) against `append`, its
reference: the same batches appended to twin logs, one through each, with small segment,
index and flush limits and `segment.ms` so that rolls (by size, time and full indexes),
index entries, flushes, batches without timestamps and a log whose active segment was
loaded from disk all happen. After every step both logs must be identical: the offsets
returned, the bytes stored, every segment's indexes and in-memory state, the recovery
point and the unflushed count. A write that fails takes either log offline alike."""

from __future__ import annotations

import dataclasses
import errno
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.log import (
    LogConfig,
    LogManager,
    LogOfflineError,
    PartitionLog,
    RecordBatchTooLarge,
)
from minibroker.log.segmented import SegmentedLog

from .log_testing import make_batch

_BIG = 1 << 30
# Each limit small enough to be reached in a few appends, or out of reach (the common case).
CONFIGS = st.builds(
    LogConfig,
    segment_bytes=st.sampled_from([300, 1000, _BIG, _BIG]),
    segment_ms=st.sampled_from([50, 1000, _BIG, _BIG]),
    index_interval_bytes=st.sampled_from([0, 64, 4096, 4096]),
    segment_index_bytes=st.sampled_from([24, 48, _BIG, _BIG]),
    flush_messages=st.sampled_from([3, 10, 2**63 - 1]),
    fsync_on_ack=st.sampled_from([False, False, False, True]),
    retention_ms=st.just(-1),
)
APPEND = st.tuples(
    st.integers(1, 4),  # records
    st.integers(0, 120),  # value size
    st.one_of(st.none(), st.integers(-100, 100)),  # first timestamp from now (None: -1)
    st.integers(0, 40),  # milliseconds since the previous append
)
STEP = st.one_of(APPEND, st.just("roll"), st.just("restart"), st.just("flush"))


START_MS = 1_000
REAL_CLOCK_MS = 10**12


def _state(log: PartitionLog) -> list[Any]:
    assert isinstance(log, SegmentedLog)
    segments = [
        (
            segment.base_offset,
            segment.size,
            segment.next_offset,
            segment.max_timestamp,
            segment.offset_of_max_timestamp,
            segment.bytes_since_last_index_entry,
            segment.created_ms,
            # (a segment reopened from disk has its file's real mtime until its next append)
            segment.last_modified_ms if segment.last_modified_ms < REAL_CLOCK_MS else "mtime",
            segment._rolling_base_timestamp,
            segment.offset_index.all_entries(),
            segment.time_index.all_entries(),
            segment.log.read_at(segment.size, 0),
        )
        for segment in log._segments
    ]
    flushed = (log.recovery_point, log.unflushed_messages, log.oldest_unflushed_ms)
    return [segments, flushed, log.log_start_offset, log.log_end_offset]


def _outcome(log: PartitionLog, plain: bool, batch: bytearray, now_ms: int) -> object:
    """The base offset, or the error as (type, message)."""
    try:
        return _append(log, plain, batch, now_ms)
    except RecordBatchTooLarge as exc:
        return type(exc), str(exc)


def _append(log: PartitionLog, plain: bool, batch: bytearray, now_ms: int) -> int:
    if not plain:
        return log.append(batch, 3, now_ms)
    last_offset_delta = int.from_bytes(batch[23:27], "big", signed=True)
    max_timestamp = int.from_bytes(batch[35:43], "big", signed=True)
    return log.append_plain(batch, 3, now_ms, last_offset_delta, max_timestamp)


class _Twins:
    """Two managers, each with one log: `append` on the first, `append_plain` on the second."""

    def __init__(self, root: Path | None, config: LogConfig) -> None:
        self.dirs = [None, None] if root is None else [root / "reference", root / "plain"]
        self.config = config
        self.managers = [self._manager(d) for d in self.dirs]
        self.logs = [m.create("t", 0, uuid.UUID(int=1), config) for m in self.managers]

    def _manager(self, data_dir: Path | None) -> LogManager:
        return LogManager(data_dir, node_id=0, cluster_id="p", default_config=self.config)

    def restart(self) -> None:
        """Both reopened from disk after a clean shutdown (the active segment's tail state and
        rolling base timestamp then come from its files)."""
        for manager in self.managers:
            manager.close()
        self.managers = [self._manager(d) for d in self.dirs]
        self.logs = [m.load()[0] for m in self.managers]

    def close(self) -> None:
        for manager in self.managers:
            manager.close()


def _run(root: Path | None, config: LogConfig, steps: list[Any]) -> None:
    # (the logs' wall clock at the test's start: the first segment's creation time)
    with mock.patch("time.time_ns", return_value=START_MS * 1_000_000):
        _run_steps(root, config, steps)


def _run_steps(root: Path | None, config: LogConfig, steps: list[Any]) -> None:
    twins = _Twins(root, config)
    now_ms = START_MS
    try:
        for step in steps:
            if step == "restart":
                if root is not None:
                    twins.restart()
            elif step == "roll":
                for log in twins.logs:
                    log.roll(now_ms)
            elif step == "flush":
                for log in twins.logs:
                    log.flush_if_due(now_ms)
            else:
                records, value_size, from_now, elapsed = step
                now_ms += elapsed
                timestamp = -1 if from_now is None else now_ms + from_now
                batch = make_batch([b"v" * value_size] * records, timestamp=timestamp)
                outcomes = [
                    _outcome(log, plain, bytearray(batch), now_ms)
                    for log, plain in zip(twins.logs, (False, True), strict=True)
                ]
                assert outcomes[0] == outcomes[1]
            assert _state(_target(twins.logs[0])) == _state(_target(twins.logs[1]))
    finally:
        twins.close()


def _target(log: PartitionLog) -> PartitionLog:
    target = getattr(log, "target", None)
    return log if target is None else _target(target())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONFIGS, st.lists(STEP, min_size=1, max_size=40))
def test_memory_logs_alike(config: LogConfig, steps: list[Any]) -> None:
    _run(None, config, steps)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONFIGS, st.lists(STEP, min_size=1, max_size=30))
def test_file_logs_alike(config: LogConfig, steps: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp), config, steps)


@pytest.mark.parametrize("segment_index_bytes", [24, 36, _BIG])
@pytest.mark.parametrize("index_interval_bytes", [0, 200, 4096])
@pytest.mark.parametrize("short_of_five_batches", [0, 1, None])  # segment.bytes (None: big)
@pytest.mark.parametrize("segment_ms", [7, _BIG])
@pytest.mark.parametrize("from_now", [0, None])
def test_each_limit_reached_exactly(
    segment_index_bytes: int,
    index_interval_bytes: int,
    short_of_five_batches: int | None,
    segment_ms: int,
    from_now: int | None,
) -> None:
    """Equal batches one millisecond apart: segment.bytes (five batches' size, or a byte
    less), segment.ms, flush.messages and full indexes are each reached exactly, then
    passed."""
    five_batches = 5 * len(make_batch([b"v" * 10] * 2))
    short = short_of_five_batches
    config = LogConfig(
        segment_bytes=_BIG if short is None else five_batches - short,
        segment_ms=segment_ms,
        index_interval_bytes=index_interval_bytes,
        segment_index_bytes=segment_index_bytes,
        flush_messages=9,
        retention_ms=-1,
    )
    _run(None, config, [(2, 10, from_now, 1)] * 60)


def test_the_common_append_takes_the_fast_lane(tmp_path: Path) -> None:
    """The case the lane exists for does not fall back to `append` (which would still pass
    the tests above)."""
    twins = _Twins(tmp_path, LogConfig())
    log = _target(twins.logs[1])
    try:
        _append(log, True, make_batch([b"first"], timestamp=5), 10)
        with mock.patch.object(SegmentedLog, "append", side_effect=AssertionError):
            for step in range(3):
                batch = make_batch([b"v"] * 2, timestamp=6 + step)
                assert _append(log, True, batch, 11 + step) == 1 + 2 * step
    finally:
        twins.close()


@pytest.mark.parametrize("plain", [False, True])
def test_a_failed_write_takes_the_log_offline_alike(tmp_path: Path, plain: bool) -> None:
    twins = _Twins(tmp_path, dataclasses.replace(LogConfig(), segment_bytes=1 << 20))
    log = _target(twins.logs[1])
    offline: list[str] = []
    log.on_offline = lambda: offline.append("offline")
    try:
        _append(log, plain, make_batch([b"first"], timestamp=5), 10)
        full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        with (
            mock.patch("os.pwrite", side_effect=full),
            pytest.raises(LogOfflineError, match="No space left") as raised,
        ):
            _append(log, plain, make_batch([b"second"], timestamp=6), 11)
        assert raised.value.__cause__ is full
        assert log.storage_error is full and offline == ["offline"]
        assert log.log_end_offset == 1
        with pytest.raises(LogOfflineError, match="offline after a storage error"):
            _append(log, plain, make_batch([b"third"], timestamp=7), 12)
    finally:
        twins.close()
