"""Incremental fetches read only what changed: each kind of change a fetch can see notifies
the sessions holding the partition, and an incremental fetch reads and answers exactly the
partitions changed (over the wire, in-process brokers, reads counted in the handler)."""

from __future__ import annotations

import base64
import errno
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from minibroker.handlers import fetch as fetch_handler
from minibroker.log.blob import FileBlob
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker, KafkaCluster
from tests.clients.runner import run_ok
from tests.server.test_fetch_v13 import answered, fetch_fields, topic_id
from tests.wire import WireClient

TOPIC = "t"
PARTITIONS = 4
TIMEOUT_S = 30


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The partitions incremental fetches read, in order (the brokers run in this process)."""
    read: list[int] = []
    read_partition = fetch_handler._read_partition

    def counted(ctx: Any, item: Any, *args: Any) -> Any:
        if item.cached is not None:  # from a session
            read.append(item.key[1])
        return read_partition(ctx, item, *args)

    monkeypatch.setattr(fetch_handler, "_read_partition", counted)
    return read


class Session:
    """An incremental fetch session over every partition of `TOPIC`, from their log ends."""

    def __init__(
        self,
        client: WireClient,
        tid: uuid.UUID,
        offsets: dict[int, int],
        reads: list[int],
        isolation_level: int = 0,
    ) -> None:
        self.client, self.tid, self.reads = client, tid, reads
        self.isolation_level = isolation_level
        full = self._call(fetch_fields({tid: offsets}, epoch=0))
        assert full.session_id != 0
        self.session_id = full.session_id
        self.epoch = 0

    def _call(self, fields: dict[str, Any]) -> Any:
        fields["isolation_level"] = self.isolation_level
        response = self.client.call(ApiKey.Fetch, 18, **fields)
        assert response.error_code == ErrorCode.NO_ERROR
        return response

    def fetch(self, offsets: dict[int, int] | None = None, **extra: Any) -> tuple[list[int], Any]:
        """The partitions read, and the partitions answered by index."""
        self.epoch += 1
        self.reads.clear()
        topics = {self.tid: offsets} if offsets else {}
        fields = fetch_fields(topics, session_id=self.session_id, epoch=self.epoch, **extra)
        response = self._call(fields)
        return sorted(self.reads), {p: part for (_, p), part in answered(response).items()}


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        running.create_topic(TOPIC, partitions=PARTITIONS)
        yield running


def wait_for_fetches(kafka: KafkaBroker, count: int) -> None:
    """Until the broker has received `count` Fetch requests (the last one parked)."""
    deadline = time.monotonic() + TIMEOUT_S
    while len(kafka.requests(ApiKey.Fetch)) < count:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def all_from(offset: int) -> dict[int, int]:
    return dict.fromkeys(range(PARTITIONS), offset)


def test_each_change_reads_and_answers_only_its_partition(
    kafka: KafkaBroker, reads: list[int]
) -> None:
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = Session(client, tid, all_from(0), reads)
        assert session.fetch() == ([], {})  # caught up after the full fetch: nothing is read
        # an append
        kafka.produce(TOPIC, b"appended", partition=2)
        read, parts = session.fetch()
        assert (read, list(parts), parts[2].high_watermark) == ([2], [2], 1)
        assert b"appended" in bytes(parts[2].records)
        # not moved on: read again and answered again, as Kafka reads the session's offset
        read, parts = session.fetch()
        assert (read, list(parts)) == ([2], [2])
        assert session.fetch({2: 1}) == ([2], {})  # the request moved it: read, nothing new
        assert session.fetch() == ([], {})
        # DeleteRecords moves a log start
        kafka.produce(TOPIC, b"to-delete", partition=1)
        assert session.fetch({1: 1})[0] == [1]
        deleted = client.call(
            ApiKey.DeleteRecords,
            2,
            topics=[{"name": TOPIC, "partitions": [{"partition_index": 1, "offset": 1}]}],
            timeout_ms=5000,
        )
        assert deleted.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        read, parts = session.fetch()
        assert (read, list(parts), parts[1].log_start_offset) == ([1], [1], 1)
        assert session.fetch() == ([], {})
        # the topic is deleted: every partition, answered with its error on every fetch
        removed = client.call(ApiKey.DeleteTopics, 4, topic_names=[TOPIC], timeout_ms=5000)
        assert removed.responses[0].error_code == ErrorCode.NO_ERROR
        for _ in range(2):
            read, parts = session.fetch()
            assert (read, sorted(parts)) == ([0, 1, 2, 3], [0, 1, 2, 3])
            assert all(p.error_code != ErrorCode.NO_ERROR for p in parts.values())


def test_a_partition_left_out_for_the_size_limit_is_read_again(
    kafka: KafkaBroker, reads: list[int]
) -> None:
    """A partition with records the fetch had no room for has more to read though its state
    does not change: the next fetches read it until it has returned them."""
    tid = topic_id(kafka)
    for index in range(PARTITIONS):
        kafka.produce(TOPIC, f"record-{index}".encode() * 50, partition=index)
    with WireClient(kafka.bootstrap_servers) as client:

        def fetch(offsets: dict[int, int], session_id: int, epoch: int) -> Any:
            fields = fetch_fields({tid: offsets}, session_id=session_id, epoch=epoch)
            fields["max_bytes"] = 1  # the first partition with records only (KIP-74)
            response = client.call(ApiKey.Fetch, 18, **fields)
            assert response.error_code == ErrorCode.NO_ERROR
            return {p: part for (_, p), part in answered(response).items()}

        session_id = client.call(
            ApiKey.Fetch, 18, **fetch_fields({tid: all_from(0)}, epoch=0)
        ).session_id
        # the full fetch had room for every partition; now one per fetch, from offset 0 again
        got = []
        offsets: dict[int, int] = all_from(0)
        for epoch in range(1, PARTITIONS + 1):
            reads.clear()
            parts = fetch(offsets, session_id, epoch)
            with_records = [p for p, part in parts.items() if bytes(part.records)]
            assert len(with_records) == 1
            got.extend(with_records)
            offsets = {with_records[0]: 1}
        assert sorted(got) == list(range(PARTITIONS))
        reads.clear()
        assert fetch(offsets, session_id, PARTITIONS + 1) == {}
        assert reads == [got[-1]]


def test_an_acl_change_has_the_session_read_again(reads: list[int]) -> None:
    """Under an authorizer, a session reads only what changed while its principal and the
    ACLs stay the same; an ACL change (which notifies no partition) has every partition
    authorized and read again."""
    me = "User:ANONYMOUS"
    with KafkaBroker(storage="memory", config=AUTHORIZER_CONFIG) as kafka:
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        kafka.add_acl(me, "READ", topic=TOPIC)
        tid = topic_id(kafka)
        with WireClient(kafka.bootstrap_servers) as client:
            session = Session(client, tid, all_from(0), reads)
            assert session.fetch() == ([0, 1, 2, 3], {})  # the first: all authorized, read
            assert session.fetch() == ([], {})
            kafka.produce(TOPIC, b"allowed", partition=1)
            assert session.fetch({1: 1})[0] == [1]
            kafka.remove_acls(principal=me, topic=TOPIC)
            read, parts = session.fetch()
            assert (read, sorted(parts)) == ([], [0, 1, 2, 3])  # refused: not read
            assert {p.error_code for p in parts.values()} == {ErrorCode.TOPIC_AUTHORIZATION_FAILED}
            kafka.add_acl(me, "READ", topic=TOPIC)
            read, parts = session.fetch()
            assert (read, sorted(parts)) == ([0, 1, 2, 3], [0, 1, 2, 3])
            assert {p.error_code for p in parts.values()} == {ErrorCode.NO_ERROR}
            assert session.fetch() == ([], {})


def test_a_long_poll_with_a_refused_partition_answers_what_woke_it(reads: list[int]) -> None:
    """A refused partition does not end a long poll; the partition whose append ends it is
    answered with it, in the session's order."""
    me = "User:ANONYMOUS"
    with KafkaBroker(storage="memory", config=AUTHORIZER_CONFIG) as kafka:
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        kafka.create_topic("hidden", partitions=1)
        kafka.add_acl(me, "READ", topic=TOPIC)
        tid, hidden = topic_id(kafka), topic_id(kafka, "hidden")
        with WireClient(kafka.bootstrap_servers) as client:
            fields = fetch_fields({hidden: {0: 0}, tid: all_from(0)}, epoch=0)
            session_id = client.call(ApiKey.Fetch, 18, **fields).session_id
            for epoch in (1, 2):  # the second reads only the refused partition's error
                fields = fetch_fields({}, session_id=session_id, epoch=epoch)
                assert list(answered(client.call(ApiKey.Fetch, 18, **fields))) == [(hidden, 0)]
            fields = fetch_fields({}, session_id=session_id, epoch=3, max_wait_ms=TIMEOUT_S * 1000)
            client.send(ApiKey.Fetch, 18, **fields)
            wait_for_fetches(kafka, 4)
            kafka.produce(TOPIC, b"wakes", partition=2)
            _, response = client.recv(ApiKey.Fetch, 18)
    parts = answered(response)
    assert list(parts) == [(hidden, 0), (tid, 2)]
    assert parts[(hidden, 0)].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert b"wakes" in bytes(parts[(tid, 2)].records)


def test_retention_moving_the_log_start_is_seen(reads: list[int]) -> None:
    """Records that expire a few seconds after the session caught up: retention deletes their
    segments, and the session reads the partition and answers its new log start."""
    config = {"log.retention.check.interval.ms": 200, "log.initial.task.delay.ms": 200}
    with KafkaBroker(storage="memory", config=config) as kafka:
        kafka.create_topic(TOPIC, PARTITIONS, {"retention.ms": 5_000, "segment.ms": 1})
        written_ms = int(time.time() * 1000) - 2_000  # expiring 3 s from now
        for n, value in enumerate((b"old-1", b"old-2", b"old-3")):
            # timestamps past segment.ms apart: each record rolls a new segment
            kafka.produce(TOPIC, value, partition=1, timestamp_ms=written_ms + 10 * n)
        tid = topic_id(kafka)
        with WireClient(kafka.bootstrap_servers) as client:
            session = Session(client, tid, {**all_from(0), 1: 3}, reads)
            assert session.fetch() == ([], {})
            assert kafka.values(TOPIC, 1) == [b"old-1", b"old-2", b"old-3"]  # not expired yet
            deadline = time.monotonic() + TIMEOUT_S
            while len(kafka.values(TOPIC, 1)) > 1:
                assert time.monotonic() < deadline, "retention did not run"
                time.sleep(0.05)
            read, parts = session.fetch()
    assert (read, list(parts), parts[1].log_start_offset) == ([1], [1], 2)


def alter_config(client: WireClient, resource_type: int, name: str, key: str, value: str) -> None:
    altered = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [{"name": key, "config_operation": 0, "value": value}],
            }
        ],
        validate_only=False,
    )
    assert altered.responses[0].error_code == ErrorCode.NO_ERROR


@pytest.mark.parametrize("resource", ["topic", "broker"])
def test_a_config_change_that_refuses_old_fetchers_is_seen(
    kafka: KafkaBroker, reads: list[int], resource: str
) -> None:
    """Below v10 a partition of a zstd topic is refused (UNSUPPORTED_COMPRESSION_TYPE):
    setting `compression.type` on the topic, or the broker default it falls back to, has a
    v9 session's partitions read and refused."""
    fields = {**fetch_fields({}), "session_epoch": 0}
    del fields["topics"]
    partitions = [
        {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1}
        | {"partition_max_bytes": 1 << 20}
        for p in range(PARTITIONS)
    ]
    with WireClient(kafka.bootstrap_servers) as client:
        full = client.call(
            ApiKey.Fetch, 9, **fields, topics=[{"topic": TOPIC, "partitions": partitions}]
        )
        assert (full.error_code, len(full.responses[0].partitions)) == (0, PARTITIONS)

        def fetch(epoch: int) -> dict[int, int]:
            reads.clear()
            fields.update(session_id=full.session_id, session_epoch=epoch)
            response = client.call(ApiKey.Fetch, 9, **fields, topics=[])
            assert response.error_code == ErrorCode.NO_ERROR
            return {
                p.partition_index: p.error_code for t in response.responses for p in t.partitions
            }

        assert (fetch(1), reads) == ({}, [])
        if resource == "topic":
            alter_config(client, 2, TOPIC, "compression.type", "zstd")
        else:
            alter_config(client, 4, "", "compression.type", "zstd")
        refused = dict.fromkeys(range(PARTITIONS), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
        assert (fetch(2), reads) == (refused, [0, 1, 2, 3])


@pytest.mark.parametrize("commit", [True, False])
def test_a_transaction_ending_moves_the_last_stable_offset(
    kafka: KafkaBroker, reads: list[int], commit: bool
) -> None:
    tid = topic_id(kafka)
    producer = Producer(
        {"bootstrap.servers": kafka.bootstrap_servers, "transactional.id": f"txn-{commit}"}
    )
    producer.init_transactions(TIMEOUT_S)
    with WireClient(kafka.bootstrap_servers) as client:
        session = Session(client, tid, all_from(0), reads, isolation_level=1)
        producer.begin_transaction()
        producer.produce(TOPIC, b"in-txn", partition=3)
        producer.flush(TIMEOUT_S)
        read, parts = session.fetch()  # the high watermark moved, the LSO did not
        assert (read, list(parts), parts[3].high_watermark, parts[3].last_stable_offset) == (
            [3],
            [3],
            1,
            0,
        )
        assert not parts[3].records
        assert session.fetch() == ([], {})
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.abort_transaction(TIMEOUT_S)
        read, parts = session.fetch()
        assert (read, list(parts), parts[3].last_stable_offset) == ([3], [3], 2)
        assert bytes(parts[3].records)
        assert bool(parts[3].aborted_transactions) is not commit


def test_a_log_going_offline_is_answered(reads: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A storage error on an append (a read-only disk) takes the log offline: the sessions
    holding the partition answer KAFKA_STORAGE_ERROR from their next fetch."""
    original = FileBlob.write_at

    def write_at(self: FileBlob, data: Any, position: int) -> None:
        if f"{TOPIC}-1" in str(self.path):
            raise OSError(errno.EROFS, "Read-only file system", str(self.path))
        original(self, data, position)

    with KafkaBroker(storage="disk") as kafka:
        kafka.create_topic(TOPIC, partitions=PARTITIONS)
        tid = topic_id(kafka)
        with WireClient(kafka.bootstrap_servers) as client:
            session = Session(client, tid, all_from(0), reads)
            monkeypatch.setattr(FileBlob, "write_at", write_at)
            producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "retries": 0})
            producer.produce(TOPIC, b"refused", partition=1)
            producer.flush(TIMEOUT_S)
            monkeypatch.setattr(FileBlob, "write_at", original)
            for _ in range(2):  # an error is answered on every fetch
                read, parts = session.fetch()
                assert (read, list(parts)) == ([1], [1])
                assert parts[1].error_code == ErrorCode.KAFKA_STORAGE_ERROR


def test_a_long_poll_on_a_session_wakes_on_a_change(kafka: KafkaBroker, reads: list[int]) -> None:
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = Session(client, tid, all_from(0), reads)
        session.epoch += 1
        client.send(
            ApiKey.Fetch,
            18,
            **fetch_fields(
                {}, session_id=session.session_id, epoch=1, max_wait_ms=TIMEOUT_S * 1000
            ),
        )
        wait_for_fetches(kafka, 2)
        kafka.produce(TOPIC, b"wakes", partition=0)
        _, response = client.recv(ApiKey.Fetch, 18)
    parts = answered(response)
    assert list(parts) == [(tid, 0)]
    assert b"wakes" in bytes(parts[(tid, 0)].records)


def test_high_watermark_and_leader_changes_in_a_cluster(reads: list[int]) -> None:
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=2)
        leader = cluster.leader(TOPIC, 0)
        follower = 3 - leader
        tid = topic_id(cluster)
        with WireClient(cluster.address(leader)) as client:
            session = Session(client, tid, {0: 0}, reads)
            cluster.pause_replication(follower, TOPIC, 0)
            producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1})
            producer.produce(TOPIC, b"unreplicated", partition=0)
            assert producer.flush(TIMEOUT_S) == 0
            read, parts = session.fetch()  # read on the append: its high watermark has not moved
            assert (read, parts) == ([0], {})
            assert session.fetch() == ([], {})
            cluster.resume_replication(follower, TOPIC, 0)
            deadline = time.monotonic() + TIMEOUT_S
            while not cluster.in_sync(TOPIC):
                assert time.monotonic() < deadline, "the follower did not catch up"
                time.sleep(0.01)
            read, parts = session.fetch()  # the high watermark moved after replication
            assert (read, list(parts), parts[0].high_watermark) == ([0], [0], 1)
            assert b"unreplicated" in bytes(parts[0].records)
            assert session.fetch({0: 1}) == ([0], {})
            cluster.move_leader(TOPIC, 0, follower)
            read, parts = session.fetch()
            assert (read, list(parts)) == ([0], [0])
            assert parts[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert parts[0].current_leader.leader_id == follower


def incremental_fetches(kafka: KafkaBroker) -> list[Any]:
    fetches = kafka.requests(ApiKey.Fetch)
    return [f for f in fetches if f.body.session_id != 0 and f.body.session_epoch > 0]


def test_kafka_python_consumes_many_partitions_through_a_session(reads: list[int]) -> None:
    """kafka-python (v12, incremental sessions) on 60 partitions: records appended to a few
    of them while it polls reach it, and its incremental fetches read only those."""
    partitions = 60
    with KafkaBroker(storage="memory") as kafka:
        kafka.create_topic(TOPIC, partitions=partitions)
        consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, fetch_max_wait_ms=200)
        consumer.assign([KafkaTopicPartition(TOPIC, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        try:
            deadline = time.monotonic() + TIMEOUT_S
            while not incremental_fetches(kafka):  # the full fetch is answered: caught up
                assert time.monotonic() < deadline, "no incremental fetch"
                assert consumer.poll(timeout_ms=100) == {}
            expected = {(p, f"r{p}".encode()) for p in (3, 17, 42)}
            got: set[tuple[int, bytes]] = set()
            for index, value in sorted(expected):
                kafka.produce(TOPIC, value, partition=index)
            deadline = time.monotonic() + TIMEOUT_S
            while got != expected:
                assert time.monotonic() < deadline, f"got {got} only"
                for tp, records in consumer.poll(timeout_ms=200).items():
                    got.update((tp.partition, record.value) for record in records)
        finally:
            consumer.close()
    # after the full fetch only the three partitions appended to (and their fetch offsets
    # moved) are read
    assert reads
    assert set(reads) <= {3, 17, 42}


def test_java_consumes_many_partitions_through_a_session_in_small_fetches() -> None:
    """Java 4.3 on 60 partitions, 20 of them with records, fetches too small for more than a
    few partitions each: the partitions left out are read again until consumed."""
    partitions = 60
    with KafkaBroker(storage="memory") as kafka:
        kafka.create_topic(TOPIC, partitions=partitions)
        values: dict[int, list[bytes]] = {}
        for index in range(0, partitions, 3):
            for n in range(2):
                value = f"{index:02d}-{n}".encode() * 150
                kafka.produce(TOPIC, value, partition=index)
                values.setdefault(index, []).append(value)
        result = run_ok(
            "java-4.3",
            {
                "op": "consume",
                "bootstrap": kafka.bootstrap_servers,
                "topic": TOPIC,
                "count": 2 * len(values),
                "from": "earliest",
                "group": None,
                "timeout_ms": TIMEOUT_S * 1000,
                "config": {"max.partition.fetch.bytes": "1024", "fetch.max.bytes": "4096"},
            },
        )
        fetches = incremental_fetches(kafka)
    assert not result["timed_out"]
    got: dict[int, list[bytes]] = {}
    for record in result["records"]:
        got.setdefault(record["partition"], []).append(base64.b64decode(record["value"]))
    assert got == values
    assert len(fetches) >= 2
    assert len({f.body.session_id for f in fetches}) == 1


def test_single_replica_leader_moves_and_a_fenced_node_are_seen(reads: list[int]) -> None:
    with KafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.create_topic(TOPIC, partitions=PARTITIONS)
        node = cluster.leader(TOPIC, 0)
        other = 3 - node
        led = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) == node]
        assert len(led) >= 2
        with WireClient(cluster.address(node)) as client:
            session = Session(client, topic_id(cluster), dict.fromkeys(led, 0), reads)
            assert session.fetch() == ([], {})
            cluster.move_leader(TOPIC, led[0], other)
            read, parts = session.fetch()
            assert (read, list(parts)) == ([led[0]], [led[0]])
            assert parts[led[0]].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            cluster.isolate_node(node)
            read, parts = session.fetch()
            assert (read, sorted(parts)) == (led, led)
            assert {p.error_code for p in parts.values()} == {ErrorCode.NOT_LEADER_OR_FOLLOWER}
