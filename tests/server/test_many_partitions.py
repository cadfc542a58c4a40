"""Thousands of partitions: created and deleted in grouped requests, opened on first use after
a clean restart (log/lazy.py), all recovered after a SIGKILL — with real clients."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from minibroker import KafkaBroker
from minibroker.log.lazy import is_open
from minibroker.server.broker import Broker

TOPICS = 40
PER_TOPIC = 50
NAMES = [f"many-{index:02d}" for index in range(TOPICS)]


def _serve(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "minibroker", "serve", "--listen", "127.0.0.1:0"]
    argv += ["--data-dir", str(data_dir), "--log-level", "WARNING"]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"minibroker serve exited with {process.wait()}"
    return process, line.strip().rsplit(" ", 1)[-1]


def _create_all(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for first in range(0, TOPICS, 20):
        requested = [NewTopic(name, PER_TOPIC, 1) for name in NAMES[first : first + 20]]
        for future in admin.create_topics(requested, request_timeout=120).values():
            future.result()


def _value(topic: str, partition: int) -> bytes:
    return f"{topic}/{partition}".encode()


def _write_one_record_everywhere(bootstrap: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "log_level": 3}
    )
    failed: list[object] = []
    for name in NAMES:
        for partition in range(PER_TOPIC):
            producer.produce(
                name,
                _value(name, partition),
                partition=partition,
                on_delivery=lambda error, _: failed.append(error) if error else None,
            )
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failed == []


def _owner(broker: KafkaBroker) -> Broker:
    return broker._owner()


@pytest.fixture(scope="module")
def crashed_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """2,000 partitions, one acknowledged record in each, then SIGKILL."""
    data_dir = tmp_path_factory.mktemp("many") / "data"
    process, bootstrap = _serve(data_dir)
    try:
        _create_all(bootstrap)
        _write_one_record_everywhere(bootstrap)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    assert not (data_dir / ".kafka_cleanshutdown").exists()
    yield data_dir


@pytest.mark.clients
def test_every_partition_is_recovered_after_sigkill_then_opened_on_first_use(
    crashed_data_dir: Path,
) -> None:
    with KafkaBroker(data_dir=crashed_data_dir) as broker:
        owner = _owner(broker)
        partitions = [p for p in owner.cluster.partitions() if p.topic in NAMES]
        assert len(partitions) == TOPICS * PER_TOPIC
        assert all(is_open(p.log) for p in partitions)  # a crash: recovered at start
        for name in NAMES:
            assert broker.end_offsets(name) == dict.fromkeys(range(PER_TOPIC), 1)
        assert broker.values(NAMES[7], 13) == [_value(NAMES[7], 13)]
    with KafkaBroker(data_dir=crashed_data_dir) as broker:  # after a clean shutdown
        owner = _owner(broker)
        logs = {(p.topic, p.index): p.log for p in owner.cluster.partitions() if p.topic in NAMES}
        assert not any(is_open(log) for log in logs.values())
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "group.id": "many-reader",
                "enable.auto.commit": False,
                "log_level": 3,
            }
        )
        try:
            metadata = consumer.list_topics(timeout=30)
            assert all(len(metadata.topics[name].partitions) == PER_TOPIC for name in NAMES)
            assert not any(is_open(log) for log in logs.values())  # Metadata opens nothing
            consumer.assign([TopicPartition(NAMES[3], p, 0) for p in range(PER_TOPIC)])
            values = set()
            while len(values) < PER_TOPIC:
                message = consumer.poll(10)
                assert message is not None and message.error() is None
                values.add(message.value())
        finally:
            consumer.close()
        assert values == {_value(NAMES[3], p) for p in range(PER_TOPIC)}
        opened = {key for key, log in logs.items() if is_open(log)}
        assert opened == {(NAMES[3], p) for p in range(PER_TOPIC)}


@pytest.mark.clients
def test_a_deferred_partition_first_touched_by_each_api(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with KafkaBroker(data_dir=data_dir) as broker:
        broker.create_topic("touched", 4)
        for partition in range(4):
            for index in range(5):
                broker.produce("touched", f"{partition}-{index}", partition=partition)
    with KafkaBroker(data_dir=data_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})
        # DeleteRecords first
        deleted = admin.delete_records([TopicPartition("touched", 0, 2)])
        assert next(iter(deleted.values())).result().low_watermark == 2
        # ListOffsets first
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap_servers, "group.id": "g", "log_level": 3}
        )
        try:
            assert consumer.get_watermark_offsets(TopicPartition("touched", 1)) == (0, 5)
            # Fetch first
            consumer.assign([TopicPartition("touched", 2, 3)])
            message = consumer.poll(10)
            assert message is not None and message.value() == b"2-3"
        finally:
            consumer.close()
        # Produce first: the next offset follows the stored ones
        assert broker.produce("touched", "3-5", partition=3) == 5
        assert broker.end_offsets("touched") == {0: 5, 1: 5, 2: 5, 3: 6}
        assert broker.values("touched", 0) == [b"0-2", b"0-3", b"0-4"]
    with KafkaBroker(data_dir=data_dir) as broker:
        assert broker.values("touched", 0) == [b"0-2", b"0-3", b"0-4"]
        assert broker.values("touched", 3)[-1] == b"3-5"


@pytest.mark.clients
def test_topics_created_and_deleted_in_grouped_requests(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with KafkaBroker(data_dir=data_dir, config={"log.retention.check.interval.ms": 100}) as broker:
        _create_all(broker.bootstrap_servers)
        assert sum(1 for path in data_dir.iterdir() if path.name.startswith("many-")) == 2000
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "log_level": 3})
        for future in admin.delete_topics(NAMES[:30], request_timeout=120).values():
            future.result()
        live = [path for path in data_dir.glob("many-*") if not path.name.endswith("-delete")]
        left = sorted({path.name.rsplit("-", 1)[0] for path in live})
        assert left == NAMES[30:]
        assert sorted(n for n in broker.topics() if n.startswith("many-")) == NAMES[30:]
    checkpoint = (data_dir / "recovery-point-offset-checkpoint").read_text().splitlines()
    assert int(checkpoint[1]) == len(checkpoint) - 2 == 10 * PER_TOPIC
    assert not list(data_dir.glob("*-delete"))  # removed after the request, before the stop
