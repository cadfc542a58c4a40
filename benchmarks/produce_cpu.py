"""Broker CPU per Produce request: `minibroker serve` on disk, confluent-kafka `produce_batch`
of 1 KiB values in 64 KiB batches (one partition, acks=1, uncompressed), as P1 drives it.

CPU is the broker process's user + system seconds over the measured produce (not wall time,
so a busy host matters less); requests are counted as the batches the log gained (one batch
per request with one partition). Runs the produce path this environment selects: set
MINIBROKER_PURE_PYTHON=1 for the pure-Python path.

    python -m benchmarks.produce_cpu [--messages 300000] [--runs 3]

With --callgrind the broker runs under valgrind's callgrind, instrumented only while the
measured messages are produced, and the figure is user-space instructions per request
(deterministic, whatever else the host runs; the kernel's copies are not counted):

    python -m benchmarks.produce_cpu --callgrind --messages 40000 --runs 1
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchmarks.brokers import RunningBroker, start_minibroker
from benchmarks.produce import ProduceConfig, new_topic, produce_messages, producer_settings
from minibroker.records.accel import active_path
from minibroker.records.batch import batch_size_at

CONFIG = ProduceConfig(64 << 10, "1", "none")
WARM_UP_MESSAGES = 20_000


def batches_in_log(data_dir: Path, topic: str) -> int:
    """How many batches the partition's segments hold."""
    count = 0
    for segment in sorted(data_dir.rglob(f"{topic}-0/*.log")):
        data = segment.read_bytes()
        pos = 0
        while (size := batch_size_at(data, pos)) is not None and pos + size <= len(data):
            count += 1
            pos += size
    return count


def cpu_per_request(broker: RunningBroker, data_dir: Path, messages: int) -> tuple[float, float]:
    """Broker CPU microseconds per Produce request over `messages` values to a fresh topic:
    user + system, and user alone (the broker's own code, without the kernel's copies)."""
    topic = new_topic(broker)
    settings = producer_settings(broker, CONFIG)
    produce_messages(broker, topic, settings, WARM_UP_MESSAGES)
    before = batches_in_log(data_dir, topic)
    result = produce_messages(broker, topic, settings, messages)
    requests = batches_in_log(data_dir, topic) - before
    return (
        result.broker_cpu_seconds / requests * 1e6,
        result.broker_user_cpu_seconds / requests * 1e6,
    )


def instructions_per_request(data_dir: Path, messages: int) -> float:
    """User-space instructions per Produce request of a broker run under callgrind."""
    out = data_dir / "callgrind.out"
    tool = [
        "valgrind",
        "-q",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
    ]
    broker = start_minibroker(data_dir / "data", wrapper=tool)
    try:
        topic = new_topic(broker)
        settings = producer_settings(broker, CONFIG)
        produce_messages(broker, topic, settings, WARM_UP_MESSAGES)
        before = batches_in_log(data_dir, topic)
        subprocess.run(
            ["callgrind_control", "-i", "on", str(broker.pid)], check=True, capture_output=True
        )
        produce_messages(broker, topic, settings, messages)
        subprocess.run(
            ["callgrind_control", "-i", "off", str(broker.pid)], check=True, capture_output=True
        )
        requests = batches_in_log(data_dir, topic) - before
    finally:
        broker.stop()
    totals = next(line for line in out.read_text().splitlines() if line.startswith("totals:"))
    return int(totals.split()[1]) / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--callgrind", action="store_true")
    args = parser.parse_args()
    print(f"minibroker produce path: {active_path()}", flush=True)
    if args.callgrind:
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                figure = instructions_per_request(Path(tmp), args.messages)
            print(f"  {figure:,.0f} broker instructions per 64 KiB Produce request", flush=True)
        return
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        broker = start_minibroker(data_dir)
        try:
            for _ in range(args.runs):
                total, user = cpu_per_request(broker, data_dir, args.messages)
                figures.append(total)
                print(
                    f"  {total:.0f} us broker CPU ({user:.0f} us user) per 64 KiB Produce request",
                    flush=True,
                )
        finally:
            broker.stop()
    print(f"median {statistics.median(figures):.0f} us ({min(figures):.0f}-{max(figures):.0f})")


if __name__ == "__main__":
    main()
