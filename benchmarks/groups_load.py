"""SC groups, in process: what `__consumer_offsets` costs a restart with many groups, past the
host's load (the spawn-to-ready time of `benchmarks.scale --groups` is mostly the process's
start). An in-process `Broker` on disk commits one offset for each of N groups and stops;
then, three times, a new one starts on that data directory: the CPU and wall time of
`Broker.start()`, the CPU of the first lookup of one group's offsets, and of listing every
group (which loads every partition not loaded yet).

python -m benchmarks.groups_load [--groups 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from minibroker.config import BrokerConfig
from minibroker.groups.coordinator import OffsetCommit
from minibroker.server.broker import Broker


def _config(data_dir: Path) -> BrokerConfig:
    return BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir)})


def _group(index: int) -> str:
    return f"group-{index:05d}"


async def _fill(data_dir: Path, groups: int) -> None:
    broker = Broker(_config(data_dir))
    await broker.start()
    broker.cluster.create_topic("offsets-source", 1, {})
    for index in range(groups):
        commit = OffsetCommit("offsets-source", 0, index, -1, "")
        broker.groups.commit_offsets(_group(index), "", None, -1, [commit])
    await broker.stop()


async def _restart(data_dir: Path, groups: int) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    broker = Broker(_config(data_dir))
    await broker.start()
    figures = {
        "start_cpu_ms": (time.process_time() - cpu) * 1000,
        "start_wall_ms": (time.perf_counter() - wall) * 1000,
    }
    cpu = time.process_time()
    [fetched] = broker.groups.fetch_offsets(_group(groups - 1), [("offsets-source", [0])])
    figures["first_group_cpu_ms"] = (time.process_time() - cpu) * 1000
    cpu = time.process_time()
    listed = len(broker.groups.listed_groups())
    figures["list_all_cpu_ms"] = (time.process_time() - cpu) * 1000
    await broker.stop()
    if fetched.offset != groups - 1 or listed != groups:
        raise RuntimeError(f"after the restart: offset {fetched.offset}, {listed} groups")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_fill(Path(tmp), args.groups))
        for _ in range(3):
            figures = asyncio.run(_restart(Path(tmp), args.groups))
            print("SC groups in process:", {key: round(v, 1) for key, v in figures.items()})


if __name__ == "__main__":
    main()
