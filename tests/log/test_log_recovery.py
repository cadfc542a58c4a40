"""Recovery: torn and garbage tails, a corrupt batch mid-log, missing and corrupt indexes.

A "crash" here drops the manager without `close()` (no flush, no checkpoints, no clean-shutdown
marker), which is what a killed process leaves behind; the SIGKILL test does it for real.
"""

from __future__ import annotations

import os
import random
import struct
import uuid
from pathlib import Path

import pytest

from minibroker.log import LogConfig, LogManager, PartitionLog

from .log_testing import (
    assert_indexes_point_at_batches as assert_partition_indexes,
)
from .log_testing import batch_last_offset, make_batch, split_batches, stamped

TOPIC = "recovery"
CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=150)


def open_manager(data_dir: Path) -> LogManager:
    return LogManager(data_dir, node_id=0, cluster_id="c", default_config=CONFIG)


def crash(manager: LogManager) -> None:
    manager.pool.close_all()


def write_batches(data_dir: Path, count: int, *, clean: bool) -> list[bytes]:
    """`count` batches of 1-3 records in partition 0; returns the stored bytes of each."""
    manager = open_manager(data_dir)
    log = manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)
    stored = []
    for i in range(count):
        batch = make_batch([b"v%03d" % i * (1 + i % 5)] * (1 + i % 3), timestamp=10_000 + i * 10)
        base = log.append(bytearray(batch), 1, now_ms=0)
        stored.append(stamped(batch, base, 1))
    if clean:
        manager.close()
    else:
        crash(manager)
    return stored


def reopen(data_dir: Path) -> tuple[LogManager, PartitionLog]:
    manager = open_manager(data_dir)
    [log] = manager.load()
    return manager, log


def partition_dir(data_dir: Path) -> Path:
    return data_dir / f"{TOPIC}-0"


def segment_files(data_dir: Path, suffix: str) -> list[Path]:
    return sorted(partition_dir(data_dir).glob(f"*{suffix}"))


def snapshot(data_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(partition_dir(data_dir).iterdir())}


def read_all(log: PartitionLog) -> list[bytes]:
    batches: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        batches += split_batches(data)
        offset = batch_last_offset(batches[-1]) + 1
    return batches


def assert_log_holds(log: PartitionLog, expected: list[bytes]) -> None:
    assert read_all(log) == expected
    assert log.log_end_offset == (batch_last_offset(expected[-1]) + 1 if expected else 0)
    for batch in expected:
        assert log.read(batch_last_offset(batch), 1) == batch


def assert_indexes_point_at_batches(data_dir: Path) -> None:
    assert_partition_indexes(partition_dir(data_dir))


def test_unclean_shutdown_without_damage_loses_nothing(tmp_path: Path) -> None:
    expected = write_batches(tmp_path, 40, clean=False)
    manager, log = reopen(tmp_path)
    assert len(log.segments()) > 2
    assert_log_holds(log, expected)
    assert_indexes_point_at_batches(tmp_path)
    manager.close()


def test_clean_and_recovered_indexes_are_identical(tmp_path: Path) -> None:
    clean_dir, crashed_dir = tmp_path / "clean", tmp_path / "crashed"
    write_batches(clean_dir, 40, clean=True)
    write_batches(crashed_dir, 40, clean=False)
    manager, _log = reopen(crashed_dir)
    manager.close()
    clean, recovered = snapshot(clean_dir), snapshot(crashed_dir)
    clean.pop("partition.metadata"), recovered.pop("partition.metadata")
    assert recovered == clean


@pytest.mark.parametrize("cut", [1, 12, 61, -1])
def test_truncated_tail_is_dropped(tmp_path: Path, cut: int) -> None:
    expected = write_batches(tmp_path, 30, clean=False)
    last_log = segment_files(tmp_path, ".log")[-1]
    size = last_log.stat().st_size
    os.truncate(last_log, size - len(expected[-1]) + (cut % len(expected[-1])))
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected[:-1])
    assert last_log.stat().st_size == size - len(expected[-1])
    assert_indexes_point_at_batches(tmp_path)
    next_batch = make_batch([b"after"])
    assert log.append(bytearray(next_batch), 2, now_ms=0) == batch_last_offset(expected[-2]) + 1
    manager.close()


# Seeded, not os.urandom: every pytest-xdist worker must collect the same parameters.
@pytest.mark.parametrize(
    "garbage",
    [b"\x00" * 4096, random.Random(333).randbytes(333), b"\xff" * 70],
    ids=["zeros", "random", "ones"],
)
def test_garbage_tail_is_dropped(tmp_path: Path, garbage: bytes) -> None:
    expected = write_batches(tmp_path, 30, clean=False)
    last_log = segment_files(tmp_path, ".log")[-1]
    size = last_log.stat().st_size
    with last_log.open("ab") as file:
        file.write(garbage)
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected)
    assert last_log.stat().st_size == size
    manager.close()


def test_corrupt_crc_mid_log_truncates_there_and_drops_later_segments(tmp_path: Path) -> None:
    expected = write_batches(tmp_path, 40, clean=False)
    first_log = segment_files(tmp_path, ".log")[0]
    in_first = split_batches(first_log.read_bytes())
    victim = len(in_first) // 2
    position = sum(len(batch) for batch in in_first[:victim]) + 65  # inside the records
    with first_log.open("r+b") as file:
        file.seek(position)
        byte = file.read(1)
        file.seek(position)
        file.write(bytes([byte[0] ^ 0x01]))
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected[:victim])
    assert len(log.segments()) == 1
    assert len(segment_files(tmp_path, ".log")) == 1
    assert_indexes_point_at_batches(tmp_path)
    manager.close()


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_deleted_index_is_rebuilt(tmp_path: Path, suffix: str) -> None:
    expected = write_batches(tmp_path, 40, clean=True)
    before = snapshot(tmp_path)
    for path in segment_files(tmp_path, suffix):
        path.unlink()
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected)
    manager.close()
    assert snapshot(tmp_path) == before


def _swap_first_two_entries(data: bytes) -> bytes:
    return data[8:16] + data[0:8] + data[16:]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data + b"\x00" * 8 * 10,  # zero entries, as in a preallocated file
        lambda data: data[:-3],  # not a whole number of entries
        _swap_first_two_entries,  # offsets out of order
        lambda data: data[:-4] + struct.pack(">i", 3),  # last entry not at a batch start
        lambda data: data[:-8] + struct.pack(">ii", 2**30, 0),  # offset beyond the segment
    ],
    ids=["zeros", "partial", "out-of-order", "wrong-position", "wrong-offset"],
)
def test_corrupt_offset_index_is_rebuilt(tmp_path: Path, damage: object) -> None:
    expected = write_batches(tmp_path, 40, clean=True)
    before = snapshot(tmp_path)
    victim = segment_files(tmp_path, ".index")[1]
    assert len(victim.read_bytes()) >= 16
    victim.write_bytes(damage(victim.read_bytes()))  # type: ignore[operator]
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected)
    manager.close()
    assert snapshot(tmp_path) == before


def test_corrupt_time_index_is_rebuilt(tmp_path: Path) -> None:
    expected = write_batches(tmp_path, 40, clean=True)
    before = snapshot(tmp_path)
    victim = segment_files(tmp_path, ".timeindex")[0]
    victim.write_bytes(struct.pack(">qi", 2**40, 0) + victim.read_bytes())  # not rising
    manager, log = reopen(tmp_path)
    assert_log_holds(log, expected)
    manager.close()
    assert snapshot(tmp_path) == before


def test_log_start_offset_survives_a_crash(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    log = manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)
    for i in range(30):
        log.append(make_batch([b"x" * 50, b"y"], timestamp=i), 0, now_ms=0)
    assert log.delete_records_before(25) == 25
    first_base = log.segments()[0][0]
    assert 0 < first_base <= 25
    crash(manager)
    manager, log = reopen(tmp_path)
    assert log.log_start_offset == 25
    assert log.segments()[0][0] == first_base
    manager.close()


def test_flushed_prefix_is_trusted_and_the_rest_rescanned(tmp_path: Path) -> None:
    manager = open_manager(tmp_path)
    log = manager.create(TOPIC, 0, uuid.uuid4(), CONFIG)
    stored = []
    for i in range(40):
        batch = make_batch([b"%04d" % i * 10], timestamp=i)
        stored.append(stamped(batch, log.append(bytearray(batch), 0, now_ms=0), 0))
        if i == 19:
            log.flush()
            manager.checkpoint()
    crash(manager)
    recovery_point = int((tmp_path / "recovery-point-offset-checkpoint").read_text().split()[-1])
    assert recovery_point == 20
    last_log = segment_files(tmp_path, ".log")[-1]
    os.truncate(last_log, last_log.stat().st_size - 1)
    manager, log = reopen(tmp_path)
    assert_log_holds(log, stored[:-1])
    manager.close()


def test_orphan_index_files_are_removed(tmp_path: Path) -> None:
    write_batches(tmp_path, 5, clean=True)
    orphan = partition_dir(tmp_path) / "00000000000000000999.index"
    orphan.write_bytes(b"\x00" * 8)
    manager, _log = reopen(tmp_path)
    assert not orphan.exists()
    manager.close()
