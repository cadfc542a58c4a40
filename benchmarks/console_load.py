"""CO: what the web console costs a loaded broker.

`minibroker serve` on disk, once without and once with `--console`, takes a confluent-kafka
producer paced at 10k msg/s (1 KiB values, linger 0, acks=1, one partition, as L1 at 10k/s)
for a fixed time; with the console, a client fetches its pages and JSON API once a second
meanwhile (overview, topics, the topic's messages, groups, a lagging group, transactions),
as an open browser tab would. Reported per run: the broker's CPU per message (user + system
over the produce), the acknowledged throughput and produce→ack latency; and the medians'
ratios console ÷ no console. Runs alternate between the two brokers so that a change in
what else the host runs falls on both. Last, the broker's CPU per fetch of each page, without
produce load, says which page costs what.

    python -m benchmarks.console_load [--runs 3] [--seconds 10] [--rate 10000]
"""

from __future__ import annotations

import argparse
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from benchmarks.brokers import MINIBROKER, RunningBroker
from benchmarks.produce import delete_topic, new_topic
from benchmarks.stats import Spread, percentile, ratio

RATE = 10_000
SECONDS = 10.0
POLL_INTERVAL_S = 1.0
HTTP_TIMEOUT_S = 10.0
STAMP = struct.Struct(">q")
PADDING = b"x" * 1016
LAGGING_GROUP = "bench-console-lagging"
READY = "minibroker ready on "
PAGES = (
    "/",
    "/topics",
    "/topics/{topic}/messages",
    "/groups",
    "/groups/{group}",
    "/transactions",
    "/api/overview",
    "/api/topics",
    "/api/groups",
)


@dataclass
class ConsoleBroker(RunningBroker):
    console_url: str | None = None


@dataclass(frozen=True)
class LoadRun:
    acked: int
    seconds: float
    broker_cpu_seconds: float
    ack_ms: list[float]
    page_ms: list[float] = field(default_factory=list)

    @property
    def msg_per_s(self) -> float:
        return self.acked / self.seconds

    @property
    def cpu_us_per_message(self) -> float:
        return self.broker_cpu_seconds / self.acked * 1e6

    def ack_percentile(self, fraction: float) -> float:
        return percentile(sorted(self.ack_ms), fraction)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_broker(data_dir: Path, console: bool) -> ConsoleBroker:
    """`minibroker serve` on `data_dir`, with `--console` on a free port when asked."""
    argv = [sys.executable, "-m", "minibroker", "serve", "--listen", "127.0.0.1:0"]
    argv += ["--data-dir", str(data_dir), "--log-level", "WARNING"]
    console_url = None
    if console:
        address = f"127.0.0.1:{free_port()}"
        argv += ["--console", address]
        console_url = f"http://{address}"
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(READY):
            bootstrap = line.strip().rsplit(" ", 1)[-1]
            return ConsoleBroker(MINIBROKER, bootstrap, process, data_dir, console_url=console_url)
    process.wait()
    raise RuntimeError(f"broker exited with {process.returncode} before it was ready")


class ConsolePoller(threading.Thread):
    """Fetches every page of `PAGES` once a second until stopped; each must answer 200."""

    def __init__(self, base_url: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.urls = [base_url + page.format(topic=topic, group=LAGGING_GROUP) for page in PAGES]
        self.page_ms: list[float] = []
        self.errors: list[str] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            round_started = time.monotonic()
            for url in self.urls:
                self.fetch(url)
            self.stopped.wait(max(0.0, POLL_INTERVAL_S - (time.monotonic() - round_started)))

    def fetch(self, url: str) -> None:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_S) as answer:
                answer.read()
        except (urllib.error.URLError, OSError) as exc:
            self.errors.append(f"{url}: {exc}")
            return
        self.page_ms.append((time.perf_counter() - started) * 1000)


def commit_lagging_group(bootstrap: str, topic: str) -> None:
    """A group that committed offset 0 and then stopped: its lag grows with every message."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": LAGGING_GROUP, "log_level": 3})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()


def paced_produce(
    broker: RunningBroker, topic: str, rate: int, seconds: float
) -> tuple[int, float, float, list[float]]:
    """(acknowledged, seconds from first send to last ack, broker CPU seconds, ack ms)."""
    acks: list[float] = []
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(error)
            return
        sent = STAMP.unpack_from(message.value() or b"")[0]
        acks.append((time.perf_counter_ns() - sent) / 1e6)

    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "acks": "1", "log_level": 3}
    )
    producer.list_topics(topic, timeout=30)
    count = int(rate * seconds)
    interval_ns = 1_000_000_000 // rate
    cpu_before = broker.cpu_seconds()
    started = next_send = time.perf_counter_ns()
    for _ in range(count):
        while (now := time.perf_counter_ns()) < next_send:
            producer.poll(min(0.001, (next_send - now) / 1e9))
        producer.produce(topic, STAMP.pack(now) + PADDING, partition=0, on_delivery=on_delivery)
        producer.poll(0)
        next_send += interval_ns
    remaining = producer.flush(60)
    elapsed = (time.perf_counter_ns() - started) / 1e9
    cpu = broker.cpu_seconds() - cpu_before
    if remaining or failures:
        raise RuntimeError(f"{remaining} unacknowledged, errors: {failures[:3]}")
    return len(acks), elapsed, cpu, acks


def measure(broker: ConsoleBroker, rate: int, seconds: float) -> LoadRun:
    topic = new_topic(broker)
    try:
        commit_lagging_group(broker.bootstrap, topic)
        poller = ConsolePoller(broker.console_url, topic) if broker.console_url else None
        if poller is not None:
            poller.start()
        try:
            acked, elapsed, cpu, ack_ms = paced_produce(broker, topic, rate, seconds)
        finally:
            if poller is not None:
                poller.stopped.set()
                poller.join(HTTP_TIMEOUT_S * len(PAGES))
        if poller is not None and (poller.errors or not poller.page_ms):
            raise RuntimeError(f"the console did not answer every poll: {poller.errors[:3]}")
        page_ms = poller.page_ms if poller is not None else []
        return LoadRun(acked, elapsed, cpu, ack_ms, page_ms)
    finally:
        delete_topic(broker, topic)


def cpu_ms_per_page(broker: ConsoleBroker, topic: str, fetches: int = 100) -> dict[str, float]:
    """Broker CPU milliseconds per fetch of each page (no produce load meanwhile)."""
    assert broker.console_url is not None
    poller = ConsolePoller(broker.console_url, topic)
    costs = {}
    for page, url in zip(PAGES, poller.urls, strict=True):
        poller.fetch(url)  # a first fetch may fill caches
        before = broker.cpu_seconds()
        for _ in range(fetches):
            poller.fetch(url)
        costs[page] = (broker.cpu_seconds() - before) / fetches * 1000
    if poller.errors:
        raise RuntimeError(f"the console did not answer: {poller.errors[:3]}")
    return costs


def page_costs_after_load(broker: ConsoleBroker, rate: int) -> dict[str, float]:
    """`cpu_ms_per_page` on a topic holding one second's worth of the load's messages."""
    topic = new_topic(broker)
    try:
        commit_lagging_group(broker.bootstrap, topic)
        paced_produce(broker, topic, rate, 1.0)
        return cpu_ms_per_page(broker, topic)
    finally:
        delete_topic(broker, topic)


def summary(runs: list[LoadRun]) -> dict[str, Any]:
    pages = sorted(ms for run in runs for ms in run.page_ms)
    result: dict[str, Any] = {
        "msg_per_s": Spread.of([run.msg_per_s for run in runs]).as_dict(),
        "cpu_us_per_message": Spread.of([run.cpu_us_per_message for run in runs]).as_dict(),
        "ack_p50_ms": Spread.of([run.ack_percentile(0.5) for run in runs]).as_dict(),
        "ack_p99_ms": Spread.of([run.ack_percentile(0.99) for run in runs]).as_dict(),
    }
    if pages:
        result["page_p50_ms"] = percentile(pages, 0.5)
        result["page_p99_ms"] = percentile(pages, 0.99)
        result["pages_fetched"] = len(pages)
    return result


def compare(runs: int, rate: int = RATE, seconds: float = SECONDS) -> dict[str, Any]:
    """Both brokers side by side, runs alternating; medians and console ÷ no-console ratios."""
    measured: dict[bool, list[LoadRun]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        brokers = {console: start_broker(Path(tmp) / str(console), console) for console in measured}
        try:
            for _ in range(runs):
                for console, broker in brokers.items():
                    measured[console].append(measure(broker, rate, seconds))
            page_costs = page_costs_after_load(brokers[True], rate)
        finally:
            for broker in brokers.values():
                broker.stop()
    without, with_console = summary(measured[False]), summary(measured[True])
    return {
        "rate": rate,
        "seconds": seconds,
        "no_console": without,
        "console": with_console,
        "console_cpu_ms_per_page": page_costs,
        "ratio": {
            key: ratio(with_console[key]["median"], without[key]["median"])
            for key in ("cpu_us_per_message", "msg_per_s", "ack_p50_ms", "ack_p99_ms")
        },
    }


def report_lines(result: dict[str, Any]) -> list[str]:
    lines = []
    for name in ("no_console", "console"):
        row = result[name]
        cpu = row["cpu_us_per_message"]
        line = (
            f"CO {name}: {row['msg_per_s']['median']:,.0f} msg/s acked, "
            f"{cpu['median']:.1f} broker CPU-us/msg ({cpu['min']:.1f}-{cpu['max']:.1f}), "
            f"ack p50 {row['ack_p50_ms']['median']:.2f} ms, "
            f"p99 {row['ack_p99_ms']['median']:.2f} ms"
        )
        if "page_p50_ms" in row:
            line += (
                f"; {row['pages_fetched']} console fetches, p50 {row['page_p50_ms']:.1f} ms, "
                f"p99 {row['page_p99_ms']:.1f} ms"
            )
        lines.append(line)
    costs = result["console_cpu_ms_per_page"]
    lines.append(
        "CO broker CPU-ms per console fetch: "
        + ", ".join(f"{page} {cost:.1f}" for page, cost in costs.items())
    )
    ratios = result["ratio"]
    lines.append(
        "CO console ÷ no console: "
        + ", ".join(f"{key} {value:.3f}" for key, value in ratios.items())
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--rate", type=int, default=RATE)
    args = parser.parse_args()
    result = compare(args.runs, args.rate, args.seconds)
    for line in report_lines(result):
        print(line, flush=True)


if __name__ == "__main__":
    main()
