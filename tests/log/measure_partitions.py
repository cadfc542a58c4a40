"""Memory of 1,000 open partitions:
python -m tests.log.measure_partitions DATA_DIR [--memory] [--nofile N]

Creates 1,000 partitions, appends BATCHES_PER_PARTITION batches of about 8 KiB to each, reads
everything back once, closes, reopens (load) and reads again, printing the process RSS at each
step. The last line is machine-readable: "RESULT data_bytes rss_growth_bytes max_open_fds".
With --memory the same runs on the memory-backed log (for comparison: it holds the data);
--nofile N lowers the descriptor limit first (1024 is a common default on users' machines).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import uuid
from pathlib import Path

from minibroker.log import LogConfig, LogManager, PartitionLog

from .log_testing import make_batch

PARTITIONS = 1000
BATCHES_PER_PARTITION = 32
VALUE = b"m" * 8000
CONFIG = LogConfig(segment_bytes=128 * 1024)


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def report(step: str, baseline: int) -> int:
    rss = rss_bytes()
    print(f"{step:<42} RSS {rss / 2**20:8.1f} MiB  (+{(rss - baseline) / 2**20:.1f} MiB)")
    return rss


def read_everything(logs: list[PartitionLog]) -> int:
    total = 0
    for log in logs:
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20)
            total += len(data)
            offset += BATCHES_PER_PARTITION if not data else count_records(data)
    return total


def count_records(data: bytes) -> int:
    records, position = 0, 0
    while position < len(data):
        records += int.from_bytes(data[position + 23 : position + 27], "big") + 1
        position += 12 + int.from_bytes(data[position + 8 : position + 12], "big")
    return records


def main(data_dir: Path | None) -> None:
    batch = make_batch([VALUE])
    baseline = rss_bytes()
    print(f"backend: {'memory' if data_dir is None else 'files'}; {PARTITIONS} partitions")
    manager = LogManager(data_dir, node_id=0, cluster_id="m", default_config=CONFIG)
    logs = [manager.create("mem", p, uuid.uuid4(), CONFIG) for p in range(PARTITIONS)]
    report("created", baseline)
    max_fds = open_fds()
    for _ in range(BATCHES_PER_PARTITION):
        for log in logs:
            log.append(bytearray(batch), 0, now_ms=0)
        max_fds = max(max_fds, open_fds())
    data_bytes = sum(log.size_bytes for log in logs)
    print(
        f"appended {data_bytes / 2**20:.1f} MiB in {sum(len(g.segments()) for g in logs)} segments"
    )
    after_append = report("after appends", baseline)
    assert read_everything(logs) == data_bytes
    after_read = report("after reading everything", baseline)
    peak = max(after_append, after_read)
    if data_dir is not None:
        manager.close()
        manager = LogManager(data_dir, node_id=0, cluster_id="m", default_config=CONFIG)
        logs = manager.load()
        report("after close + load (clean)", baseline)
        assert read_everything(logs) == data_bytes
        peak = max(peak, report("after reading everything again", baseline))
        max_fds = max(max_fds, open_fds())
    print(f"open descriptors at most {max_fds} (pool limit {manager.pool.max_open})")
    print(f"RESULT {data_bytes} {peak - baseline} {max_fds}")
    manager.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?", type=Path)
    parser.add_argument("--memory", action="store_true")
    parser.add_argument("--nofile", type=int)
    arguments = parser.parse_args(sys.argv[1:])
    if arguments.nofile:
        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (arguments.nofile, hard))
    print(f"descriptor limit {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}")
    main(None if arguments.memory else arguments.data_dir)
