"""A writer process killed with SIGKILL mid-stream: after recovery every acknowledged batch is
readable, offsets are contiguous, indexes point at batch starts, nothing partial is served.

Three kill/recover cycles on the same directory, each after a random number of acknowledgements
(bounded); the writer keeps appending while the parent reads its acknowledgements, so the kill
lands at an arbitrary point of an append.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from minibroker.log import LogManager

from .log_testing import (
    assert_indexes_point_at_batches,
    batch_base_offset,
    batch_last_offset,
    split_batches,
)
from .sigkill_writer import CONFIG, PARTITIONS, TOPIC

REPO_ROOT = Path(__file__).resolve().parents[2]
CYCLES = 3


def run_writer_and_kill(data_dir: Path, seed: int, acks_before_kill: int) -> list[list[int]]:
    """Start the writer, read `acks_before_kill` acknowledgements, SIGKILL it."""
    writer = subprocess.Popen(
        [sys.executable, "-m", "tests.log.sigkill_writer", str(data_dir), str(seed)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline() == "ready\n"
        acks = []
        for _ in range(acks_before_kill):
            line = writer.stdout.readline()
            assert line, "writer stopped before it was killed"
            acks.append([int(field) for field in line.split()])
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL
    return acks


def verify(data_dir: Path, acks: list[list[int]]) -> None:
    manager = LogManager(data_dir, node_id=0, cluster_id="kill", default_config=CONFIG)
    logs = {log.partition: log for log in manager.load()}
    assert sorted(logs) == list(range(PARTITIONS))
    for partition, base, size, crc in acks:
        served = split_batches(logs[partition].read(base, 1))
        assert len(served) == 1
        assert batch_base_offset(served[0]) == base
        assert len(served[0]) == size
        assert int.from_bytes(served[0][17:21], "big") == crc
    for partition, log in logs.items():
        expected_next = 0
        while expected_next < log.log_end_offset:
            for batch in split_batches(log.read(expected_next, 64 * 1024)):
                assert batch_base_offset(batch) == expected_next
                expected_next = batch_last_offset(batch) + 1
        assert expected_next == log.log_end_offset
        assert_indexes_point_at_batches(data_dir / f"{TOPIC}-{partition}")
    manager.close()


def test_acknowledged_batches_survive_sigkill(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    acknowledged: list[list[int]] = []
    for cycle in range(CYCLES):
        acknowledged += run_writer_and_kill(tmp_path, cycle, rng.randint(300, 3000))
        verify(tmp_path, acknowledged)
    print(f"\n{len(acknowledged)} acknowledged appends survived {CYCLES} SIGKILLs")
