"""Jepsen-style runs of the queue, read-write and share workloads under a seeded nemesis.

`scripts/jepsen --minutes N --seed S [--unsafe] [--nodes 3] [--clients java]`: the queue,
read-write transaction and share-group workloads on an in-process cluster (3 nodes unless
`--nodes`) under a seeded nemesis, then a final drain, then the checker over the whole
history: the summary printed, history.jsonl, anomalies.json and summary.json written under
`--out` (default results/jepsen/<safe|unsafe>-seed<S>).

Safe: acks=all idempotent producers, min.insync.replicas=2, replication factor 3, internal
topics at replication factor 3 / min ISR 2, no unclean election. Unsafe: acks=1 producers,
min.insync.replicas=1, unclean.leader.election.enable=true. Exits 1 when the checker found an
anomaly (expected in the unsafe configuration), 2 when a client or the nemesis crashed.

Clients: confluent-kafka, or Java kafka-clients 4.3 (`--clients java`, or per role:
`--producers`, `--consumers`, `--txn-clients`, `--share-clients`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.jepsen.checker import Result, check, summary_text, write_results
from benchmarks.jepsen.history import History
from benchmarks.jepsen.nemesis import EXTRA_FAULTS, FAULTS, Nemesis, heal_all, schedule
from benchmarks.jepsen.workloads import (
    JAVA_CLIENT,
    QUEUE_GROUPS,
    QUEUE_TOPIC,
    SHARE_GROUP,
    TXN_TOPIC,
    CommittedObserver,
    JavaQueueProducer,
    JavaWorkers,
    QueueConsumer,
    QueueProducer,
    Settings,
    ShareWorker,
    TxnWorker,
    Worker,
    drain,
    key_of,
)
from minibroker.testing import KafkaCluster
from tests.clients.runner import installed

LAG_TIME_MS = 1000
FLUSH_MS = 1000
SEGMENT_BYTES = 1024 * 1024
SHARED_MEMORY = Path("/dev/shm")
REPLICATION_FACTOR = 3
PARTITIONS = 3
SAFE_CONFIG = {
    "min.insync.replicas": 2,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    # few internal partitions, so that internal-leader-alone hits the ones in use
    "offsets.topic.num.partitions": PARTITIONS,
    "transaction.state.log.num.partitions": PARTITIONS,
    "unclean.leader.election.enable": "false",
    "replica.lag.time.max.ms": LAG_TIME_MS,
    # replica logs fsynced every second (as a page cache written back): a crash-node loses
    # about the last second of its replicas' appends
    "log.flush.interval.ms": FLUSH_MS,
    # small segments: rolls happen under crashes, and each fsync the power-loss model reads
    # (the active segment) stays small
    "log.segment.bytes": SEGMENT_BYTES,
}
UNSAFE_CONFIG = {
    **SAFE_CONFIG,
    "min.insync.replicas": 1,
    "transaction.state.log.min.isr": 1,
    "unclean.leader.election.enable": "true",
}


CLIENTS = ("confluent", "java")  # confluent-kafka, Java kafka-clients 4.3


@dataclass(frozen=True)
class Clients:
    """Each role's client, one of CLIENTS."""

    producers: str = "confluent"
    consumers: str = "confluent"
    txn: str = "confluent"
    share: str = "confluent"


@dataclass
class Options:
    seconds: float
    seed: int
    unsafe: bool
    out: Path
    nodes: int = 3
    clients: Clients = field(default_factory=Clients)
    faults: Sequence[str] = FAULTS
    fault_interval_s: float = 2.0
    producers: int = 2
    consumers: int = 4  # alternately classic and KIP-848 group members
    transactors: int = 2
    share_consumers: int = 2


def _committed(cluster: KafkaCluster, group: str) -> dict[str, int]:
    return {
        key_of(topic, partition): offset
        for (topic, partition), offset in cluster.committed_offsets(group).items()
    }


def _workers(
    cluster: KafkaCluster, options: Options, history: History, stop: threading.Event
) -> list[Worker]:
    settings = Settings(
        cluster.bootstrap_servers, "1" if options.unsafe else "all", PARTITIONS, options.seed
    )
    process = iter(range(1_000))
    write_lock = threading.Lock()
    workers: list[Worker] = []
    java: list[dict[str, Any]] = []
    producer_class = JavaQueueProducer if options.clients.producers == "java" else QueueProducer
    for _ in range(options.producers):
        workers.append(producer_class(settings, history, stop, next(process)))
    for index in range(options.consumers):
        protocol = ("classic", "consumer")[index % 2]
        if options.clients.consumers == "java":
            group = QUEUE_GROUPS[protocol]
            spec = {"role": "queue-consumer", "group": group, "protocol": protocol}
            java.append({"process": next(process), **spec})
        else:
            workers.append(QueueConsumer(settings, protocol, history, stop, next(process)))
    for _ in range(options.share_consumers):
        if options.clients.share == "java":
            java.append({"process": next(process), "role": "share", "group": SHARE_GROUP})
        else:
            workers.append(ShareWorker(settings, history, stop, next(process)))
    for _ in range(options.transactors):
        if options.clients.txn == "java":
            number = next(process)
            java.append({"process": number, "role": "txn", "seed": options.seed * 1000 + number})
        else:
            workers.append(TxnWorker(settings, write_lock, history, stop, next(process)))
    if java:
        workers.append(JavaWorkers(settings, java, history, stop, -2))
    observer = CommittedObserver(lambda group: _committed(cluster, group), history, stop, -1)
    workers.append(observer)
    return workers


def run(options: Options) -> Result:
    if "java" in asdict(options.clients).values():
        installed(JAVA_CLIENT)  # a first install compiles: before the run's clock starts
    history = History()
    config: dict[str, Any] = UNSAFE_CONFIG if options.unsafe else SAFE_CONFIG
    # on disk, so that crash-node goes through the power-loss model (its fsyncs never reach
    # the disk); in shared memory where there is some
    scratch = SHARED_MEMORY if SHARED_MEMORY.is_dir() else None
    with (
        tempfile.TemporaryDirectory(prefix="minibroker-jepsen-", dir=scratch) as data_dir,
        KafkaCluster(
            nodes=options.nodes,
            data_dir=data_dir,
            config=config,
            record_requests=False,
            power_loss_seed=options.seed,
        ) as cluster,
    ):
        for topic in (QUEUE_TOPIC, TXN_TOPIC):
            cluster.create_topic(topic, PARTITIONS, replication_factor=REPLICATION_FACTOR)
        cluster.wait_in_sync()
        stop = threading.Event()
        workers = _workers(cluster, options, history, stop)
        faults = schedule(
            options.seed, cluster.node_ids, PARTITIONS, options.faults, options.fault_interval_s
        )
        nemesis = Nemesis(cluster, history, faults, stop, QUEUE_TOPIC, LAG_TIME_MS / 1000)
        threads: list[Worker | Nemesis] = [*workers, nemesis]
        for thread in threads:
            thread.start()
        time.sleep(options.seconds)
        stop.set()
        nemesis.join()
        for worker in workers:
            worker.join(60)
        heal_all(cluster)
        cluster.wait_in_sync(timeout_s=60)
        ends = {topic: cluster.end_offsets(topic) for topic in (QUEUE_TOPIC, TXN_TOPIC)}
        drain(history, cluster.bootstrap_servers, ends)
        crashed = [t.name for t in threads if t.error is not None or t.is_alive()]
        for thread in threads:
            if thread.error is not None:
                print(f"{thread.name}: {thread.error!r}", file=sys.stderr)
    ops = history.ops
    result = check(ops)
    result.summary["configuration"] = "unsafe" if options.unsafe else "safe"
    result.summary["seed"] = options.seed
    result.summary["nodes"] = options.nodes
    result.summary["clients"] = asdict(options.clients)
    java = [worker for worker in workers if isinstance(worker, JavaWorkers)]
    if java:
        result.summary["java_operations"] = dict(sorted(java[0].recorded.items()))
    result.summary["seconds"] = options.seconds
    result.summary["crashed_threads"] = crashed
    write_results(options.out, ops, result)
    return result


# each role's flag: the Clients field it sets, and the role it names
ROLE_FLAGS = {
    "--producers": ("producers", "the queue producers"),
    "--consumers": ("consumers", "the queue consumers"),
    "--txn-clients": ("txn", "the read-write transactions"),
    "--share-clients": ("share", "the share consumers"),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/jepsen", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unsafe", action="store_true", help="acks=1 and unclean election")
    parser.add_argument("--nodes", type=int, default=3, help="cluster size (3 or more)")
    parser.add_argument(
        "--clients",
        choices=CLIENTS,
        default="confluent",
        help="every role's client: confluent-kafka or Java kafka-clients 4.3",
    )
    for flag, (_field, role) in ROLE_FLAGS.items():
        parser.add_argument(flag, choices=CLIENTS, default=None, help=f"{role}' client")
    parser.add_argument("--fault-interval", type=float, default=2.0, help="seconds")
    parser.add_argument("--faults", default=",".join(FAULTS), help="comma-separated kinds")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    kinds = [kind for kind in args.faults.split(",") if kind]
    unknown = set(kinds) - set(FAULTS) - set(EXTRA_FAULTS)
    if unknown or not kinds:
        parser.error(f"--faults: kinds are {', '.join(FAULTS + EXTRA_FAULTS)}")
    if args.nodes < REPLICATION_FACTOR:
        parser.error(f"--nodes: at least {REPLICATION_FACTOR} (the replication factor)")
    name = f"{'unsafe' if args.unsafe else 'safe'}-seed{args.seed}"
    options = Options(
        seconds=args.minutes * 60,
        seed=args.seed,
        unsafe=args.unsafe,
        out=args.out or Path("results/jepsen") / name,
        nodes=args.nodes,
        clients=Clients(
            **{
                name: getattr(args, flag[2:].replace("-", "_")) or args.clients
                for flag, (name, _role) in ROLE_FLAGS.items()
            }
        ),
        faults=kinds,
        fault_interval_s=args.fault_interval,
    )
    result = run(options)
    print(summary_text(result))
    print(f"results: {options.out}")
    if result.summary["crashed_threads"]:
        return 2
    return 0 if result.valid else 1


if __name__ == "__main__":
    sys.exit(main())
