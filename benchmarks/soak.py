"""`scripts/soak --minutes N`: `minibroker serve` under a mixed load, killed and restarted on
its data every few minutes, then every acknowledged record checked, and the broker's
resources sampled and plotted.

Load (confluent-kafka, each on a thread of its own):
- an idempotent acks=all producer (`soak-idempotent`, 3 partitions), at most `--rate`
  records/s, each value its sequence number: every acknowledged one must be read exactly once
  by a verifying consumer that follows the topic live (the topic has 5-minute retention, so
  the data directory levels off: records are checked before retention removes them);
- a transactional producer (`soak-transactions`, the same retention): transactions of 5
  records, one in three aborted; a live read_committed verifier must read every committed
  transaction whole and once, and no aborted record (a commit whose outcome the producer could
  not learn, e.g. when the broker was killed, may be read whole or not at all);
- group members joining and leaving: classic and consumer-protocol (KIP-848) groups reading
  `soak-idempotent` for a few seconds each, committing;
- admin churn: a topic created, written and deleted every few seconds;
- retention and compaction: a compacted topic rewritten over 50 keys and a topic with
  `retention.ms` 10 s and small segments (neither is checked record by record: the cleaner
  and retention remove records by design);
- connection churn: short connections that fetch metadata and close;
- SIGKILL of the broker every `--kill-every` seconds and a restart on the same data.
Every `--sample-every` seconds: the broker's RSS, open file descriptors, thread count and
data-dir size, written to `<out>.json` and plotted to `<out>.png` (matplotlib).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks import procstat
from benchmarks.output import add_publish_flag, output_path

IDEMPOTENT = "soak-idempotent"
TRANSACTIONS = "soak-transactions"
COMPACTED = "soak-compacted"
RETAINED = "soak-retained"
PARTITIONS = 3
TXN_SIZE = 5
QUIET = {"log_level": 3}


@dataclass
class Ledger:
    """What the load was told was written, what the verifiers read, and what went wrong.
    Values are sequence numbers: per-number flags and counters in bytearrays."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acknowledged: bytearray = field(default_factory=bytearray)  # 1: acknowledged
    read: bytearray = field(default_factory=bytearray)  # times read (saturates at 255)
    txn_outcome: bytearray = field(default_factory=bytearray)  # see OUTCOMES
    txn_read: bytearray = field(default_factory=bytearray)  # records of it read
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, name: str, by: int = 1) -> None:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + by


def mark(flags: bytearray, index: int, value: int | None = None) -> None:
    """flags[index] = value (None: add one, up to 255), growing `flags` as needed."""
    if index >= len(flags):
        flags.extend(bytes(index + 1 - len(flags) + 65536))
    flags[index] = min(255, flags[index] + 1) if value is None else value


OPEN, COMMITTED, ABORTED, UNCERTAIN = 0, 1, 2, 3
SEQUENCE = struct.Struct(">Q")
TXN_RECORD = struct.Struct(">QB")


class Broker:
    """`minibroker serve` on a fixed port and data dir, killed and restarted in place."""

    def __init__(self, data_dir: Path, port: int, overrides: list[str]) -> None:
        self.data_dir = data_dir
        self.port = port
        self.overrides = overrides
        self.process: subprocess.Popen[str] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = [sys.executable, "-m", "minibroker", "serve", "--listen", self.bootstrap]
        argv += ["--data-dir", str(self.data_dir), "--log-level", "WARNING"]
        argv += [word for setting in self.overrides for word in ("--override", setting)]
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        if not self.process.stdout.readline():
            raise RuntimeError("the broker exited before it was ready")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    retained = {"retention.ms": "300000", "segment.bytes": "1048576", "segment.ms": "30000"}
    topics = [
        NewTopic(IDEMPOTENT, PARTITIONS, 1, config=retained),
        NewTopic(TRANSACTIONS, PARTITIONS, 1, config=retained),
        NewTopic(
            COMPACTED,
            1,
            1,
            config={"cleanup.policy": "compact", "segment.bytes": "65536", "segment.ms": "5000"},
        ),
        NewTopic(RETAINED, 1, 1, config={"retention.ms": "10000", "segment.bytes": "65536"}),
    ]
    for future in admin.create_topics(topics).values():
        future.result(30)


def forever(stop: threading.Event, ledger: Ledger, name: str, step: Callable[[], None]) -> None:
    """Run `step` until `stop`; errors are counted (the broker is killed on purpose)."""
    while not stop.is_set():
        try:
            step()
        except (KafkaException, RuntimeError) as exc:
            ledger.count(f"{name} errors")
            print(f"[{name}] {exc}", file=sys.stderr, flush=True)
            stop.wait(1.0)


def idempotent_load(bootstrap: str, stop: threading.Event, ledger: Ledger, rate: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5, **QUIET}
    )
    sequence = 0

    def on_delivery(error: KafkaError | None, message: Any) -> None:
        if error is None:
            with ledger.lock:
                mark(ledger.acknowledged, SEQUENCE.unpack(message.value())[0], 1)
        else:
            ledger.count("idempotent delivery failures")

    def step() -> None:
        nonlocal sequence
        started = time.monotonic()
        for _ in range(rate // 10):
            producer.produce(IDEMPOTENT, SEQUENCE.pack(sequence), on_delivery=on_delivery)
            sequence += 1
        producer.poll(0)
        stop.wait(max(0.0, 0.1 - (time.monotonic() - started)))

    forever(stop, ledger, "idempotent", step)
    producer.flush(120)


def transactional_load(bootstrap: str, stop: threading.Event, ledger: Ledger) -> None:
    settings = {"bootstrap.servers": bootstrap, "transactional.id": "soak-tx", **QUIET}
    producer = Producer(settings)
    producer.init_transactions(60)
    number = 0

    def step() -> None:
        nonlocal number, producer
        txn, number = number, number + 1
        producer.begin_transaction()
        for index in range(TXN_SIZE):
            producer.produce(TRANSACTIONS, TXN_RECORD.pack(txn, index))
        outcome = ABORTED if txn % 3 == 2 else COMMITTED
        if outcome == ABORTED:
            producer.abort_transaction(60)
        else:
            outcome = commit(producer)
        with ledger.lock:
            mark(ledger.txn_outcome, txn, outcome)
        if outcome == UNCERTAIN:  # a new producer fences the old one and goes on
            producer = Producer(settings)
            producer.init_transactions(60)
        stop.wait(0.05)

    forever(stop, ledger, "transactions", step)


def commit(producer: Producer) -> int:
    """COMMITTED, ABORTED, or UNCERTAIN (a fatal error: all or nothing of it is stored)."""
    for _ in range(10):
        try:
            producer.commit_transaction(60)
            return COMMITTED
        except KafkaException as exc:
            error = exc.args[0]
            if error.retriable():
                continue
            if error.txn_requires_abort():
                producer.abort_transaction(60)
                return ABORTED
            return UNCERTAIN
    return UNCERTAIN


def verifier(
    bootstrap: str, topic: str, isolation: str, done: threading.Event, ledger: Ledger
) -> None:
    """Read `topic` from the start, live, until `done` is set and the ends are reached."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"soak-verify-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **QUIET,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    idle_since = time.monotonic()
    while not done.is_set() or time.monotonic() - idle_since < 10:
        message = consumer.poll(0.5)
        if message is None or message.error() is not None:
            continue
        idle_since = time.monotonic()
        with ledger.lock:
            if topic == IDEMPOTENT:
                mark(ledger.read, SEQUENCE.unpack(message.value())[0])
            else:
                mark(ledger.txn_read, TXN_RECORD.unpack(message.value())[0])
    consumer.close()


def group_members(bootstrap: str, stop: threading.Event, ledger: Ledger) -> None:
    protocols = ["classic", "consumer"]
    turn = 0

    def step() -> None:
        nonlocal turn
        protocol = protocols[turn % 2]
        turn += 1
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"soak-{protocol}",
                "group.protocol": protocol,
                "auto.offset.reset": "earliest",
                **QUIET,
            }
        )
        consumer.subscribe([IDEMPOTENT])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not stop.is_set():
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                ledger.count(f"read by {protocol} groups")
        consumer.close()
        ledger.count("group members joined and left")

    forever(stop, ledger, "groups", step)


def admin_churn(bootstrap: str, stop: threading.Event, ledger: Ledger) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    # librdkafka's producer asks for auto-creation by default: its periodic metadata refresh of
    # the topics it has produced to would bring every deleted topic back (as Kafka would).
    producer = Producer(
        {"bootstrap.servers": bootstrap, "allow.auto.create.topics": False, **QUIET}
    )

    def step() -> None:
        name = f"soak-churn-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
        for i in range(20):
            producer.produce(name, b"%d" % i)
        producer.flush(30)
        admin.delete_topics([name])[name].result(30)
        ledger.count("topics created and deleted")
        stop.wait(2.0)

    forever(stop, ledger, "admin", step)


def cleaner_load(bootstrap: str, stop: threading.Event, ledger: Ledger) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **QUIET})

    def step() -> None:
        for i in range(200):
            producer.produce(COMPACTED, os.urandom(100), key=b"key-%d" % (i % 50))
            producer.produce(RETAINED, os.urandom(100))
        producer.flush(30)
        ledger.count("compacted and retained records", 400)
        stop.wait(0.2)

    forever(stop, ledger, "cleaner", step)


def connection_churn(bootstrap: str, stop: threading.Event, ledger: Ledger) -> None:
    def step() -> None:
        admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        admin.list_topics(timeout=10)
        ledger.count("short connections")
        stop.wait(0.5)

    forever(stop, ledger, "connections", step)


def directory_size(path: Path) -> int:
    total = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(FileNotFoundError):  # deleted while walking (retention)
                total += os.stat(os.path.join(root, name)).st_size
    return total


def sample(broker: Broker, started: float) -> dict[str, float]:
    pid = broker.pid
    return {
        "minute": (time.monotonic() - started) / 60,
        "rss_mb": procstat.rss_bytes(pid) / 1e6,
        "open_fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": len(os.listdir(f"/proc/{pid}/task")),
        "data_dir_mb": directory_size(broker.data_dir) / 1e6,
        "partition_dirs": sum(1 for entry in os.scandir(broker.data_dir) if entry.is_dir()),
    }


def check(ledger: Ledger) -> list[str]:
    problems = []
    acknowledged = [i for i, flag in enumerate(ledger.acknowledged) if flag]
    missing = sum(1 for i in acknowledged if i >= len(ledger.read) or not ledger.read[i])
    twice = sum(1 for times in ledger.read if times > 1)
    if missing:
        problems.append(f"{missing} acknowledged idempotent records never read")
    if twice:
        problems.append(f"{twice} idempotent records read more than once")
    outcomes = {COMMITTED: 0, ABORTED: 0, UNCERTAIN: 0}
    for txn, outcome in enumerate(ledger.txn_outcome):
        if outcome == OPEN:
            continue
        outcomes[outcome] += 1
        seen = ledger.txn_read[txn] if txn < len(ledger.txn_read) else 0
        allowed = {COMMITTED: {TXN_SIZE}, ABORTED: {0}, UNCERTAIN: {0, TXN_SIZE}}[outcome]
        if seen not in allowed:
            problems.append(f"transaction {txn} ({outcome=}) read {seen} of {TXN_SIZE} records")
    ledger.counts["idempotent acknowledged"] = len(acknowledged)
    ledger.counts["idempotent read"] = sum(1 for times in ledger.read if times)
    ledger.counts["transactions committed"] = outcomes[COMMITTED]
    ledger.counts["transactions aborted"] = outcomes[ABORTED]
    ledger.counts["transactions of unknown outcome"] = outcomes[UNCERTAIN]
    return problems[:20]


def plot(samples: list[dict[str, float]], kills: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = ["rss_mb", "open_fds", "threads", "data_dir_mb", "partition_dirs"]
    figure, axes = plt.subplots(len(series), 1, figsize=(9, 11), sharex=True)
    minutes = [s["minute"] for s in samples]
    for axis, name in zip(axes, series, strict=True):
        axis.plot(minutes, [s[name] for s in samples])
        axis.set_ylabel(name)
        for kill in kills:
            axis.axvline(kill, color="red", alpha=0.2)
    axes[-1].set_xlabel("minutes (red: SIGKILL and restart)")
    figure.suptitle("minibroker soak: broker resources")
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def run(
    minutes: float,
    kill_every_s: float,
    sample_every_s: float,
    rate: int,
    out: Path,
    overrides: list[str],
) -> int:
    with tempfile.TemporaryDirectory(prefix="minibroker-soak-") as tmp:
        broker = Broker(Path(tmp) / "data", free_port(), overrides)
        broker.start()
        create_topics(broker.bootstrap)
        ledger, stop, done = Ledger(), threading.Event(), threading.Event()
        bootstrap = broker.bootstrap
        loads: list[tuple[Callable[..., None], tuple[Any, ...]]] = [
            (idempotent_load, (bootstrap, stop, ledger, rate)),
            (transactional_load, (bootstrap, stop, ledger)),
            (group_members, (bootstrap, stop, ledger)),
            (admin_churn, (bootstrap, stop, ledger)),
            (cleaner_load, (bootstrap, stop, ledger)),
            (connection_churn, (bootstrap, stop, ledger)),
        ]
        verifiers = [
            (verifier, (bootstrap, IDEMPOTENT, "read_uncommitted", done, ledger)),
            (verifier, (bootstrap, TRANSACTIONS, "read_committed", done, ledger)),
        ]
        threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in loads]
        checkers = [threading.Thread(target=f, args=a, daemon=True) for f, a in verifiers]
        for thread in threads + checkers:
            thread.start()
        started = time.monotonic()
        samples: list[dict[str, float]] = []
        kills: list[float] = []
        next_kill = started + kill_every_s
        try:
            while time.monotonic() - started < minutes * 60:
                time.sleep(sample_every_s)
                samples.append(sample(broker, started))
                if time.monotonic() >= next_kill:
                    broker.kill()
                    kills.append((time.monotonic() - started) / 60)
                    broker.start()
                    next_kill = time.monotonic() + kill_every_s
            stop.set()
            for thread in threads:
                thread.join(180)
            done.set()
            for thread in checkers:
                thread.join(300)
            problems = check(ledger)
        finally:
            stop.set()
            done.set()
            broker.stop()
    report = {
        "minutes": minutes,
        "kills": len(kills),
        "counts": ledger.counts,
        "problems": problems,
    }
    out.with_suffix(".json").write_text(json.dumps({**report, "samples": samples}, indent=1))
    plot(samples, kills, out.with_suffix(".png"))
    print(json.dumps(report, indent=1))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 1 if problems else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--kill-every", type=float, default=180.0, help="seconds")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds")
    parser.add_argument("--rate", type=int, default=2000, help="idempotent records/s")
    parser.add_argument("--out", type=Path, help="<out>.json and <out>.png; default results/soak")
    add_publish_flag(parser)
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="a broker setting"
    )
    args = parser.parse_args()
    out = args.out or output_path("soak", args.publish)
    sys.exit(run(args.minutes, args.kill_every, args.sample_every, args.rate, out, args.override))


if __name__ == "__main__":
    main()
