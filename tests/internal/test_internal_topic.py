"""InternalTopic over both storage backends: creation and configs, partition for a key,
append and read back (after a restart on disk), transactional batches and markers, and the
Kafka error codes storage failures answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.cluster.state import Cluster, Partition
from minibroker.config import BrokerConfig
from minibroker.internal.topic import (
    InternalTopic,
    ReadMarker,
    ReadRecord,
    java_string_hash,
    partition_for,
)
from minibroker.log.dirs import LogDirs
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import NO_PRODUCER_ID, BatchHeader, split_batches
from minibroker.records.records import build_control_batch

BACKENDS = ["disk", "memory"]
NAME = "__test_state"
NOW = 1_700_000_000_000


class Broker:
    """A cluster over a log manager, reopened from its directory as a restarted broker's."""

    def __init__(self, backend: str, tmp_path: Path) -> None:
        self.data_dir = tmp_path / "data" if backend == "disk" else None
        self.config = BrokerConfig({})
        self.open()

    def open(self) -> None:
        self.logs = LogDirs(
            None if self.data_dir is None else [self.data_dir],
            node_id=1,
            cluster_id="c",
            default_config=Cluster.default_log_config(self.config),
        )
        self.cluster = Cluster(self.config, self.logs, self.data_dir)
        self.cluster.load()

    def restart(self) -> None:
        self.logs.close()
        self.open()


@pytest.fixture(params=BACKENDS)
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broker]:
    running = Broker(request.param, tmp_path)
    yield running
    running.logs.close()


def read_all(topic: InternalTopic) -> list[tuple[int, ReadRecord | ReadMarker]]:
    return [(p.index, item) for p in topic.created_partitions() for item in topic.read(p)]


def test_java_string_hash_and_partition_for_key_match_kafka() -> None:
    assert java_string_hash("test") == 3556498
    assert partition_for("test", 50) == 3556498 % 50
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(MIN_VALUE) is 0


def test_created_on_first_use_with_its_configs(broker: Broker) -> None:
    topic = InternalTopic(broker.cluster, NAME, 3, 12345)
    assert topic.topic() is None
    assert read_all(topic) == []
    created = topic.ensure()
    assert topic.ensure() is created
    assert len(created.partitions) == 3
    assert created.configs == {"cleanup.policy": "compact", "segment.bytes": "12345"}
    other = InternalTopic(broker.cluster, "__other_state", 1, 100, cleanup_policy="delete")
    assert other.ensure().configs["cleanup.policy"] == "delete"


def test_partition_of_a_key(broker: Broker) -> None:
    topic = InternalTopic(broker.cluster, NAME, 7, 1 << 20)
    for key in ("test", "polygenelubricants", "g1", "\U0001f600"):
        partition = topic.partition_of(key)
        assert partition.topic == NAME
        assert partition.index == partition_for(key, 7)


def test_append_and_read_back_after_a_restart(broker: Broker) -> None:
    topic = InternalTopic(broker.cluster, NAME, 3, 1 << 20)
    appended: list[Partition] = []
    assert topic.append_records("a", [], NOW) == ErrorCode.NO_ERROR
    assert topic.topic() is None  # nothing to append: not even created
    assert topic.append_records("a", [(b"k1", b"v1"), (b"k2", None)], NOW) == ErrorCode.NO_ERROR
    topic.partition_of("b").append_listeners.add(appended.append)
    assert topic.append_records("b", [(b"k3", b"v3")], NOW + 1) == ErrorCode.NO_ERROR
    assert appended == [topic.partition_of("b")]

    a, b = partition_for("a", 3), partition_for("b", 3)
    expected_a: list[ReadRecord | ReadMarker] = [
        (b"k1", b"v1", NO_PRODUCER_ID),
        (b"k2", None, NO_PRODUCER_ID),
    ]
    assert list(topic.read(topic.partition_of("a"))) == expected_a
    assert list(topic.read(topic.partition_of("b"))) == [(b"k3", b"v3", NO_PRODUCER_ID)]
    # one uncompressed batch per append
    [batch] = split_batches(topic.partition_of("a").log.read(0, 1 << 20))
    header = BatchHeader.parse(batch)
    assert (header.records_count, header.compression, header.is_transactional) == (2, 0, False)
    before = sorted(read_all(topic), key=lambda item: item[0])
    assert {index for index, _ in before} == {a, b}

    broker.restart()
    reopened = InternalTopic(broker.cluster, NAME, 3, 1 << 20)
    if broker.data_dir is None:
        assert reopened.topic() is None  # memory keeps nothing
    else:
        assert sorted(read_all(reopened), key=lambda item: item[0]) == before


def test_transactional_batches_and_markers(broker: Broker) -> None:
    topic = InternalTopic(broker.cluster, NAME, 1, 1 << 20)
    written: list[bytes] = []

    def write(partition: Partition, batch: bytes) -> ErrorCode:
        written.append(batch)
        partition.log.append(bytearray(batch), partition.leader_epoch, NOW)
        return ErrorCode.NO_ERROR

    def refuse(partition: Partition, batch: bytes) -> ErrorCode:
        return ErrorCode.INVALID_PRODUCER_EPOCH

    assert topic.append_records("t", [(b"k", b"v")], NOW, (42, 3), write) == ErrorCode.NO_ERROR
    header = BatchHeader.parse(written[0])
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 0)
    assert header.is_transactional
    refused = topic.append_records("t", [(b"x", b"y")], NOW, (42, 2), refuse)
    assert refused == ErrorCode.INVALID_PRODUCER_EPOCH
    partition = topic.partition_of("t")
    marker = build_control_batch(
        True, producer_id=42, producer_epoch=3, coordinator_epoch=0, timestamp=NOW
    )
    partition.log.append(bytearray(marker), partition.leader_epoch, NOW)
    assert list(topic.read(partition)) == [(b"k", b"v", 42), ReadMarker(42, commit=True)]


def test_a_topic_that_cannot_be_created_answers_coordinator_not_available(
    broker: Broker,
) -> None:
    topic = InternalTopic(broker.cluster, NAME, 0, 1 << 20)  # 0 partitions: refused
    assert topic.append_records("a", [(b"k", b"v")], NOW) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert topic.topic() is None


def test_a_failed_write_answers_not_coordinator(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = InternalTopic(broker.cluster, NAME, 2, 1 << 20)
    partition = topic.partition_of("a")
    appended: list[Partition] = []
    partition.append_listeners.add(appended.append)

    def fail(*args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(partition.log, "append", fail)
    assert topic.append_records("a", [(b"k", b"v")], NOW) == ErrorCode.NOT_COORDINATOR
    assert appended == []
    monkeypatch.undo()
    assert list(topic.read(partition)) == []


def test_lazy_partitions_never_used_are_not_read(broker: Broker) -> None:
    """`__consumer_offsets` partitions are created on disk when first used (log/lazy.py)."""
    topic = InternalTopic(broker.cluster, "__consumer_offsets", 4, 1 << 20)
    key = next(k for k in (f"g{i}" for i in range(100)) if partition_for(k, 4) == 1)
    assert topic.append_records(key, [(b"k", b"v")], NOW) == ErrorCode.NO_ERROR
    loaded = [p.index for p in topic.created_partitions()]
    assert loaded == ([1, 3] if broker.data_dir is not None else [0, 1, 2, 3])
    assert read_all(topic) == [(1, (b"k", b"v", NO_PRODUCER_ID))]
