"""Client workloads with confluent-kafka over a running cluster, each recording into a
`History`. Each process is a thread with its own clients; values are unique ("p3-17"), keys
"topic/partition".

- queue: producers (idempotent acks=all, or acks=1 in the unsafe configuration) send one
  value at a time to a random partition (or, `JavaQueueProducer`, Java kafka-clients 4.3
  through the client harness's job server: batches of values, each to a random partition,
  all recorded `info` when the batch's job fails); consumers of two groups (one classic,
  one KIP-848) poll and commit after each poll; an observer records the groups' committed
  offsets.
- wr (Jepsen's read-write transactions over Kafka): each transaction polls a read_committed
  consumer assigned to every partition of the topic, then appends to a few random partitions
  and commits. The write-and-commit phase is serialised between processes, so every edge of
  the dependency graph follows that order and any cycle is an anomaly (without it, two
  concurrent transactions appending to two partitions in opposite orders form a write-write
  cycle that Kafka allows).
- share: share-group consumers (KIP-932) of the queue topic accept every record explicitly
  and commit; each record whose commit succeeded is recorded as accepted ("share-ack").
- Java kafka-clients 4.3 consumers, transactional workers and share consumers (`JavaWorkers`):
  the same loops in one long-lived JVM (tests/clients/java/JepsenWorkers.java), one thread per
  worker, each printing its operations as JSON lines that are recorded here as they come.
- drain: after the run, a read_committed consumer reads every partition to its end (process
  `final`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import subprocess
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    AcknowledgeType,
    Consumer,
    IllegalStateException,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    ShareConsumer,
    TopicPartition,
)

from benchmarks.jepsen.checker import FINAL
from benchmarks.jepsen.history import History, Op
from tests.clients.runner import ClientRunError, run_client, start_client

QUEUE_TOPIC = "jepsen-queue"
TXN_TOPIC = "jepsen-wr"
# one group per rebalance protocol: classic, and KIP-848's consumer protocol
QUEUE_GROUPS = {"classic": "jepsen-queue-group", "consumer": "jepsen-queue-group-848"}
SHARE_GROUP = "jepsen-share-group"
QUIET = {"log_level": 0, "logger": lambda *_args: None}
TIMEOUT_MS = 6000
TXN_TIMEOUT_MS = 10000  # at least message.timeout.ms (librdkafka)


def key_of(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


@dataclass
class Settings:
    bootstrap: str
    acks: str  # "all" or "1"
    partitions: int
    seed: int


def _records(messages: list[Message]) -> dict[str, list[list[Any]]]:
    reads: dict[str, list[list[Any]]] = {}
    for message in messages:
        if message.error() is not None:
            continue
        topic, partition, value = message.topic(), message.partition(), message.value()
        assert topic is not None and partition is not None and value is not None
        reads.setdefault(key_of(topic, partition), []).append([message.offset(), value.decode()])
    return reads


class Worker(threading.Thread):
    def __init__(self, name: str, history: History, stop: threading.Event, process: int) -> None:
        super().__init__(name=name, daemon=True)
        self.history = history
        self.stop_event = stop
        self.process = process
        self.count = 0
        self.error: BaseException | None = None

    def next_value(self) -> str:
        self.count += 1
        return f"p{self.process}-{self.count}"

    def run(self) -> None:
        try:
            self.work()
        except BaseException as exc:  # reported by the runner
            self.error = exc

    def work(self) -> None:
        raise NotImplementedError


class QueueProducer(Worker):
    def __init__(self, settings: Settings, *args: Any) -> None:
        super().__init__("queue-producer", *args)
        self.settings = settings
        self.rng = random.Random(settings.seed * 1000 + self.process)

    def _producer(self) -> Producer:
        return Producer(
            {
                "bootstrap.servers": self.settings.bootstrap,
                "acks": self.settings.acks,
                "enable.idempotence": self.settings.acks == "all",
                "message.timeout.ms": TIMEOUT_MS,
                "linger.ms": 0,
                **QUIET,
            }
        )

    def work(self) -> None:
        producer = self._producer()
        while not self.stop_event.is_set():
            partition = self.rng.randrange(self.settings.partitions)
            key, value = key_of(QUEUE_TOPIC, partition), self.next_value()
            invoked = self.history.invoke(self.process, "send", [["send", key, value]])
            outcome = _send(producer, partition, value)
            if outcome and outcome[0][0] is None:
                offset = outcome[0][1].offset()
                self.history.complete(invoked, "ok", [["send", key, [offset, value]]])
            else:
                # a delivery error may still have reached the log: unknown, not failed
                self.history.complete(invoked, "info", [["send", key, value]])
                if outcome and outcome[0][0] is not None and outcome[0][0].fatal():
                    producer = self._producer()


JAVA_CLIENT = "java-4.3"
JAVA_BATCH = 10


class JavaQueueProducer(QueueProducer):
    """The queue producer as Java kafka-clients 4.3 (`produce_paced` jobs): each job sends
    `JAVA_BATCH` values, each to a random partition, without waiting between them; the job
    answers every offset or fails as a whole, when each of its values is recorded `info`.
    Each value of a batch is its own operation, of process "<process>.<slot>" (a process
    has one operation in flight at a time)."""

    def __init__(self, settings: Settings, *args: Any) -> None:
        super().__init__(settings, *args)
        self.name = "queue-producer-java"

    def work(self) -> None:
        while not self.stop_event.is_set():
            batch = [
                (key_of(QUEUE_TOPIC, partition), partition, self.next_value())
                for partition in (
                    self.rng.randrange(self.settings.partitions) for _ in range(JAVA_BATCH)
                )
            ]
            invoked = [
                self.history.invoke(f"{self.process}.{slot}", "send", [["send", key, value]])
                for slot, (key, _partition, value) in enumerate(batch)
            ]
            offsets = self._send(batch)
            for op, (key, _partition, value) in zip(invoked, batch, strict=True):
                if offsets is None:
                    self.history.complete(op, "info", [["send", key, value]])
                else:
                    self.history.complete(op, "ok", [["send", key, [offsets.pop(0), value]]])

    def _send(self, batch: list[tuple[str, int, str]]) -> list[int] | None:
        """The offsets of the batch's values, None when the job failed."""
        job = {
            "op": "produce_paced",
            "bootstrap": self.settings.bootstrap,
            "topic": QUEUE_TOPIC,
            "acks": self.settings.acks,
            "idempotent": self.settings.acks == "all",
            "interval_ms": 0,
            "timeout_ms": TIMEOUT_MS,
            "records": [
                {
                    "key": None,
                    "value": base64.b64encode(value.encode()).decode(),
                    "headers": [],
                    "partition": partition,
                }
                for _key, partition, value in batch
            ],
        }
        try:
            result = run_client(JAVA_CLIENT, job)
        except ClientRunError:
            return None
        if not result.get("ok"):
            return None
        return [int(sent["offset"]) for sent in result["results"]]


def _send(
    producer: Producer, partition: int, value: str
) -> list[tuple[KafkaError | None, Message]]:
    """One record sent and waited for: its delivery report, if one came."""
    outcome: list[tuple[KafkaError | None, Message]] = []
    producer.produce(
        QUEUE_TOPIC,
        value.encode(),
        partition=partition,
        on_delivery=lambda error, message: outcome.append((error, message)),
    )
    producer.flush(TIMEOUT_MS / 1000 + 5)
    return outcome


class QueueConsumer(Worker):
    def __init__(self, settings: Settings, protocol: str, *args: Any) -> None:
        super().__init__(f"queue-consumer-{protocol}", *args)
        self.settings = settings
        self.protocol = protocol

    def work(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.settings.bootstrap,
                "group.id": QUEUE_GROUPS[self.protocol],
                "group.protocol": self.protocol,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                **({"session.timeout.ms": 6000} if self.protocol == "classic" else {}),
                "isolation.level": "read_committed",
                **QUIET,
            }
        )
        consumer.subscribe([QUEUE_TOPIC])
        try:
            while not self.stop_event.is_set():
                invoked = self.history.invoke(self.process, "poll", [["poll"]])
                messages = consumer.consume(50, 0.2)
                self.history.complete(invoked, "ok", [["poll", _records(messages)]])
                if any(message.error() is None for message in messages):
                    # a commit refused under faults: the next one covers it
                    with contextlib.suppress(KafkaException):
                        consumer.commit(asynchronous=False)
        finally:
            consumer.close()


class CommittedObserver(Worker):
    """Records each queue group's committed offsets as the cluster holds them."""

    def __init__(self, read: Callable[[str], dict[str, int]], *args: Any) -> None:
        super().__init__("committed-observer", *args)
        self.read = read

    def work(self) -> None:
        while not self.stop_event.wait(0.25):
            for group in QUEUE_GROUPS.values():
                observed = {"group": group, "offsets": self.read(group)}
                self.history.record("observer", "committed", observed)


class ShareWorker(Worker):
    """A share-group consumer: every record accepted, then committed; a record is recorded as
    accepted once its partition's commit succeeded."""

    def __init__(self, settings: Settings, *args: Any) -> None:
        super().__init__("share-consumer", *args)
        self.settings = settings

    def work(self) -> None:
        consumer = ShareConsumer(
            {
                "bootstrap.servers": self.settings.bootstrap,
                "group.id": SHARE_GROUP,
                "share.acknowledgement.mode": "explicit",
                "log_level": 0,
            }
        )
        consumer.subscribe([QUEUE_TOPIC])
        try:
            while not self.stop_event.is_set():
                self._poll_accept_commit(consumer)
        finally:
            consumer.close()

    def _poll_accept_commit(self, consumer: ShareConsumer) -> None:
        try:
            messages = [m for m in consumer.poll(0.2) if m.error() is None]
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if not messages:
                return
            results = consumer.commit_sync(TIMEOUT_MS / 1000)
        except (KafkaException, IllegalStateException):
            time.sleep(0.1)  # unknown outcome: nothing recorded as accepted
            return
        for message in messages:
            topic, partition, value = message.topic(), message.partition(), message.value()
            assert topic is not None and partition is not None and value is not None
            if results.get(TopicPartition(topic, partition), "missing") is None:
                accepted = {
                    "group": SHARE_GROUP,
                    "key": key_of(topic, partition),
                    "offset": message.offset(),
                    "value": value.decode(),
                }
                self.history.record(self.process, "share-ack", accepted)


class TxnWorker(Worker):
    """Read-write transactions: poll, then append to a few partitions and commit."""

    def __init__(self, settings: Settings, write_lock: threading.Lock, *args: Any) -> None:
        super().__init__("txn", *args)
        self.settings = settings
        self.write_lock = write_lock
        self.rng = random.Random(settings.seed * 1000 + self.process)
        self.transactional_id = f"jepsen-wr-{self.process}"

    def work(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.settings.bootstrap,
                "group.id": f"jepsen-wr-reader-{self.process}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                **QUIET,
            }
        )
        consumer.assign([TopicPartition(TXN_TOPIC, p, 0) for p in range(self.settings.partitions)])
        producer: Producer | None = None
        try:
            while not self.stop_event.is_set():
                with self.write_lock:
                    if producer is None:
                        producer = self._try_producer()
                if producer is not None and not self._transaction(producer, consumer):
                    producer = None
        finally:
            consumer.close()

    def _try_producer(self) -> Producer | None:
        """A transactional producer, initialised (None when the cluster refused for now)."""
        producer = Producer(
            {
                "bootstrap.servers": self.settings.bootstrap,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": TXN_TIMEOUT_MS,
                "message.timeout.ms": TIMEOUT_MS,
                "linger.ms": 0,
                **QUIET,
            }
        )
        try:
            producer.init_transactions(30)
        except KafkaException:
            time.sleep(0.5)
            return None
        return producer

    def _transaction(self, producer: Producer, consumer: Consumer) -> bool:
        """One transaction; False when the producer must be made again."""
        count = self.rng.randint(1, 3)
        sends = [
            (key_of(TXN_TOPIC, p), p, self.next_value())
            for p in self.rng.sample(range(self.settings.partitions), count)
        ]
        invoked = self.history.invoke(
            self.process, "txn", [["poll"], *[["send", key, value] for key, _p, value in sends]]
        )
        reads = _records(consumer.consume(50, 0.1))
        delivered: dict[str, int] = {}
        with self.write_lock:
            committing = False
            try:
                producer.begin_transaction()
                for _key, partition, value in sends:
                    producer.produce(
                        TXN_TOPIC,
                        value.encode(),
                        partition=partition,
                        on_delivery=lambda error, message: _delivered(delivered, error, message),
                    )
                producer.flush(TIMEOUT_MS / 1000 + 5)
                committing = True
                producer.commit_transaction(TIMEOUT_MS / 1000 + 5)
            except KafkaException as exc:
                return self._abort(producer, invoked, reads, sends, exc, committing)
        done = [
            ["poll", reads],
            *[["send", key, [delivered.get(value), value]] for key, _p, value in sends],
        ]
        self.history.complete(invoked, "ok", done)
        return True

    def _abort(
        self,
        producer: Producer,
        invoked: Op,
        reads: dict[str, list[list[Any]]],
        sends: list[tuple[str, int, str]],
        error: KafkaException,
        committing: bool,
    ) -> bool:
        attempted = [["poll", reads], *[["send", key, value] for key, _p, value in sends]]
        requires_abort = error.args[0].txn_requires_abort()
        if committing and not requires_abort:
            self.history.complete(invoked, "info", attempted)  # the commit may have happened
            return False
        try:
            producer.abort_transaction(TIMEOUT_MS / 1000 + 5)
        except KafkaException:
            self.history.complete(invoked, "info", attempted)
            return False
        self.history.complete(invoked, "fail", attempted)
        return True


class JavaWorkers(Worker):
    """Java kafka-clients 4.3 workers in one JVM (`jepsen_workers`, a long-running job of the
    client harness, until SIGTERM): `specs` are its workers, e.g. `{"process": 4, "role":
    "queue-consumer", "group": g, "protocol": "classic"}`, `{"process": 8, "role": "txn",
    "seed": s}`, `{"process": 6, "role": "share", "group": g}`. Each line it prints is an
    operation entry of one worker, recorded as it comes; `recorded` counts them by
    "<f>-<type>"."""

    def __init__(self, settings: Settings, specs: list[dict[str, Any]], *args: Any) -> None:
        super().__init__("java-workers", *args)
        self.settings = settings
        self.specs = specs
        self.recorded: Counter[str] = Counter()
        self.stderr: deque[str] = deque(maxlen=40)  # the tail of the JVM's log

    def work(self) -> None:
        job = {
            "op": "jepsen_workers",
            "bootstrap": self.settings.bootstrap,
            "queue_topic": QUEUE_TOPIC,
            "txn_topic": TXN_TOPIC,
            "partitions": self.settings.partitions,
            "timeout_ms": TIMEOUT_MS,
            "txn_timeout_ms": TXN_TIMEOUT_MS,
            "workers": self.specs,
        }
        process = start_client(JAVA_CLIENT, job)
        assert process.stdout is not None and process.stderr is not None
        stderr = process.stderr
        threading.Thread(target=lambda: self.stderr.extend(stderr), daemon=True).start()
        threading.Thread(target=self._terminate_on_stop, args=(process,), daemon=True).start()
        pending: dict[Any, Op] = {}
        result: dict[str, Any] = {}
        for text in process.stdout:
            line = json.loads(text)
            if "process" in line:
                self._record(line, pending)
            else:
                result = line
        process.wait()
        if not result.get("ok"):
            tail = "".join(self.stderr)
            raise RuntimeError(f"Java workers: {result.get('error', 'no result')}\n{tail}")

    def _terminate_on_stop(self, process: subprocess.Popen[str]) -> None:
        self.stop_event.wait()
        process.terminate()

    def _record(self, line: dict[str, Any], pending: dict[Any, Op]) -> None:
        process, type_, f, value = line["process"], line["type"], line["f"], line["value"]
        if type_ == "invoke":
            pending[process] = self.history.invoke(process, f, value)
            return
        if type_ == "record":
            self.history.record(process, f, value)
        else:
            self.history.complete(pending.pop(process), type_, value)
        self.recorded[f"{f}-{type_}"] += 1
        if f == "poll" and type_ == "ok":
            self.recorded["records-polled"] += sum(len(read) for read in value[0][1].values())


def _delivered(delivered: dict[str, int], error: KafkaError | None, message: Message) -> None:
    value, offset = message.value(), message.offset()
    if error is None and value is not None and offset is not None:
        delivered[value.decode()] = offset


def drain(history: History, bootstrap: str, ends: dict[str, dict[int, int]]) -> None:
    """Read every partition of `ends` (topic -> partition -> high watermark) from its start
    with a read_committed consumer, one poll entry per partition: to the high watermark once
    the last stable offset reaches it (transactions left open time out), else to the last
    stable offset."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "jepsen-final",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    try:
        for topic, partitions in ends.items():
            for partition, high_watermark in partitions.items():
                end = _stable_end(consumer, topic, partition, high_watermark)
                _drain_partition(history, consumer, topic, partition, end, high_watermark)
    finally:
        consumer.close()


def _stable_end(consumer: Consumer, topic: str, partition: int, high_watermark: int) -> int:
    """The last stable offset, once it reaches the high watermark or the wait ends."""
    deadline = time.monotonic() + TXN_TIMEOUT_MS / 1000 + 2
    while True:
        _low, stable = consumer.get_watermark_offsets(
            TopicPartition(topic, partition), timeout=10, cached=False
        )
        if stable >= high_watermark or time.monotonic() > deadline:
            return int(stable)
        time.sleep(0.2)


def _drain_partition(
    history: History, consumer: Consumer, topic: str, partition: int, end: int, high: int
) -> None:
    """One poll entry: ok when read to the high watermark (info: only to `end`, an open
    transaction holding the last stable offset back, or the read ran out of time)."""
    invoked = history.invoke(FINAL, "poll", [["poll"]])
    consumer.assign([TopicPartition(topic, partition, 0)])
    records: list[list[Any]] = []
    deadline = time.monotonic() + 30
    position = 0
    while position < end and time.monotonic() < deadline:
        records.extend(_records(consumer.consume(500, 0.5)).get(key_of(topic, partition), []))
        position = consumer.position([TopicPartition(topic, partition)])[0].offset or 0
    history.complete(
        invoked,
        "ok" if position >= end >= high else "info",
        [["poll", {key_of(topic, partition): records}]],
    )
