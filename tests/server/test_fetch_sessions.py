"""Incremental fetch sessions (KIP-227) over the wire, as Kafka 4.3 answers them, and real
clients consuming through them (Java 4.3) or without them (librdkafka)."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from minibroker.handlers import fetch as fetch_handler
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok
from tests.server.test_fetch_v13 import answered, fetch_fields, partition_fields, topic_id
from tests.wire import WireClient

TOPIC = "t"
TIMEOUT_S = 30


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        running.create_topic(TOPIC, partitions=3)
        yield running


def open_session(client: WireClient, fields: dict[str, Any], version: int = 18) -> Any:
    response = client.call(ApiKey.Fetch, version, **{**fields, "session_epoch": 0})
    assert response.error_code == ErrorCode.NO_ERROR
    assert response.session_id != 0
    return response


def test_full_fetch_opens_a_session_and_incremental_fetches_answer_only_changes(
    kafka: KafkaBroker,
) -> None:
    tid = topic_id(kafka)
    kafka.produce(TOPIC, b"first", partition=0)
    with WireClient(kafka.bootstrap_servers) as client:
        full = open_session(client, fetch_fields({tid: {0: 0, 1: 0, 2: 0}}))
        session = full.session_id
        assert sorted(p for _, p in answered(full)) == [0, 1, 2]
        # Partition 0 moves on to offset 1: nothing changed otherwise, an empty answer.
        quiet = client.call(
            ApiKey.Fetch, 18, **fetch_fields({tid: {0: 1}}, session_id=session, epoch=1)
        )
        assert (quiet.error_code, quiet.session_id, quiet.responses) == (0, session, [])
        kafka.produce(TOPIC, b"second", partition=2)
        # Partition 2 is read from the offset the session keeps for it (0).
        changed = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=2))
        parts = answered(changed)
        assert list(parts) == [(tid, 2)]
        assert b"second" in bytes(parts[(tid, 2)].records)
        assert parts[(tid, 2)].high_watermark == 1
        # Partition 2 moves on too: nothing left to say.
        caught_up = client.call(
            ApiKey.Fetch, 18, **fetch_fields({tid: {2: 1}}, session_id=session, epoch=3)
        )
        assert caught_up.responses == []


def test_a_moved_log_start_offset_is_answered(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    for value in (b"a", b"b"):
        kafka.produce(TOPIC, value, partition=1)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({tid: {1: 2}})).session_id
        deleted = client.call(
            ApiKey.DeleteRecords,
            2,
            topics=[{"name": TOPIC, "partitions": [{"partition_index": 1, "offset": 1}]}],
            timeout_ms=5000,
        )
        assert deleted.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        response = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1))
    (partition,) = answered(response).values()
    assert (partition.log_start_offset, partition.high_watermark) == (1, 2)
    assert not partition.records


def test_quiet_partitions_are_not_read_again_until_their_state_changes(
    kafka: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An incremental fetch reads only the session partitions whose state (log end, high
    watermark, log start, leader, the topic itself) changed since they had nothing to say,
    and those that the request changed (tests/server/test_fetch_session_changes.py: each kind
    of change)."""
    reads: list[int] = []
    read_partition = fetch_handler._read_partition

    def counted(ctx: Any, item: Any, *args: Any) -> Any:
        reads.append(item.key[1])
        return read_partition(ctx, item, *args)

    monkeypatch.setattr(fetch_handler, "_read_partition", counted)
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({tid: {0: 0, 1: 0, 2: 0}})).session_id
        epoch = 0

        def fetch(offsets: dict[int, int] | None = None) -> tuple[list[int], dict[int, Any]]:
            nonlocal epoch
            epoch += 1
            reads.clear()
            response = client.call(
                ApiKey.Fetch,
                18,
                **fetch_fields({tid: offsets} if offsets else {}, session_id=session, epoch=epoch),
            )
            assert response.error_code == ErrorCode.NO_ERROR
            return sorted(reads), {p: part for (_, p), part in answered(response).items()}

        assert fetch() == ([], {})  # all caught up in the full fetch: none is read
        kafka.produce(TOPIC, b"new", partition=2)
        read, parts = fetch()
        assert (read, list(parts), parts[2].high_watermark) == ([2], [2], 1)
        assert fetch({2: 1}) == ([2], {})  # the request moved its fetch offset
        assert fetch() == ([], {})
        deleted = client.call(
            ApiKey.DeleteRecords,
            2,
            topics=[{"name": TOPIC, "partitions": [{"partition_index": 2, "offset": 1}]}],
            timeout_ms=5000,
        )
        assert deleted.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        read, parts = fetch()
        assert (read, list(parts), parts[2].log_start_offset) == ([2], [2], 1)
        removed = client.call(ApiKey.DeleteTopics, 4, topic_names=[TOPIC], timeout_ms=5000)
        assert removed.responses[0].error_code == ErrorCode.NO_ERROR
        read, parts = fetch()
        assert read == [0, 1, 2]
        assert sorted(parts) == [0, 1, 2]
        assert all(part.error_code != ErrorCode.NO_ERROR for part in parts.values())


def test_forgotten_partitions_leave_the_session(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({tid: {0: 0, 1: 0}})).session_id
        kafka.produce(TOPIC, b"forgotten", partition=1)
        kafka.produce(TOPIC, b"kept", partition=0)
        response = client.call(
            ApiKey.Fetch,
            18,
            **fetch_fields({}, session_id=session, epoch=1, forgotten={tid: [1]}),
        )
        assert list(answered(response)) == [(tid, 0)]
        # Forgetting the last partition closes the session: answered sessionless.
        closing = client.call(
            ApiKey.Fetch,
            18,
            **fetch_fields({}, session_id=session, epoch=2, forgotten={tid: [0]}),
        )
        assert (closing.error_code, closing.session_id, closing.responses) == (0, 0, [])
        gone = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=3))
    assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_errors_are_always_answered(kafka: KafkaBroker) -> None:
    unknown = uuid.uuid4()
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({unknown: {0: 0}})).session_id
        for epoch in (1, 2):
            response = client.call(
                ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=epoch)
            )
            assert [p.error_code for p in answered(response).values()] == [
                ErrorCode.UNKNOWN_TOPIC_ID
            ]


def test_session_errors_as_kafka(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({tid: {0: 0}})).session_id
        unknown = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session + 1, epoch=1))
        wrong_epoch = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=5))
        names_fields = fetch_fields({}, session_id=session, epoch=1)
        del names_fields["replica_id"]
        names = client.call(ApiKey.Fetch, 12, **names_fields)
        still_open = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1))
    for response, error in (
        (unknown, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (wrong_epoch, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
        (names, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR),
    ):
        assert (response.error_code, response.session_id, response.responses) == (error, 0, [])
    assert (still_open.error_code, still_open.session_id) == (ErrorCode.NO_ERROR, session)


def test_final_epoch_closes_the_session_and_fetches_sessionless(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    kafka.produce(TOPIC, b"final-epoch", partition=0)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({tid: {0: 0}})).session_id
        final = client.call(
            ApiKey.Fetch, 18, **fetch_fields({tid: {0: 0}}, session_id=session, epoch=-1)
        )
        assert final.session_id == 0
        assert b"final-epoch" in bytes(answered(final)[(tid, 0)].records)
        closed = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1))
    assert closed.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_sessions_by_name_below_v13(kafka: KafkaBroker) -> None:
    fields = fetch_fields({})
    fields["topics"] = [{"topic": TOPIC, "partitions": [partition_fields(0, 0)]}]
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fields, version=12).session_id
        kafka.produce(TOPIC, b"named", partition=0)
        fields = {**fetch_fields({}, session_id=session, epoch=1), "topics": []}
        response = client.call(ApiKey.Fetch, 12, **fields)
        by_id = client.call(ApiKey.Fetch, 13, **fetch_fields({}, session_id=session, epoch=2))
    assert [t.topic for t in response.responses] == [TOPIC]
    assert b"named" in bytes(response.responses[0].partitions[0].records)
    assert by_id.error_code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_topic_recreated_under_its_name_is_inconsistent(kafka: KafkaBroker) -> None:
    old_id = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        session = open_session(client, fetch_fields({old_id: {0: 0}})).session_id
        deleted = client.call(ApiKey.DeleteTopics, 4, topic_names=[TOPIC], timeout_ms=5000)
        assert deleted.responses[0].error_code == ErrorCode.NO_ERROR
        kafka.create_topic(TOPIC, partitions=3)
        assert topic_id(kafka) != old_id
        response = client.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1))
    assert [p.error_code for p in answered(response).values()] == [ErrorCode.INCONSISTENT_TOPIC_ID]


def test_the_cache_holds_max_incremental_fetch_session_cache_slots() -> None:
    config = {"max.incremental.fetch.session.cache.slots": "1"}
    with KafkaBroker(storage="memory", config=config) as kafka:
        kafka.create_topic(TOPIC, partitions=1)
        fields = {**fetch_fields({topic_id(kafka): {0: 0}}), "session_epoch": 0}
        with WireClient(kafka.bootstrap_servers) as client:
            first = client.call(ApiKey.Fetch, 18, **fields)
            second = client.call(ApiKey.Fetch, 18, **fields)
    assert first.session_id != 0
    assert (second.error_code, second.session_id) == (ErrorCode.NO_ERROR, 0)
    assert list(answered(second)) == list(answered(first))


def test_sessions_belong_to_one_node() -> None:
    with KafkaBroker(storage="memory") as kafka:
        kafka.create_topic(TOPIC, partitions=1)
        with WireClient(kafka.bootstrap_servers) as client:
            session = open_session(client, fetch_fields({topic_id(kafka): {0: 0}})).session_id
        kafka.restart()
        with WireClient(kafka.bootstrap_servers) as client:
            response = client.call(
                ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1)
            )
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def wait_until_recorded(kafka: KafkaBroker, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while len(kafka.requests(ApiKey.Fetch)) < count:
        assert time.monotonic() < deadline, "the broker did not receive the fetch"
        time.sleep(0.01)


def test_a_fetch_overtaken_in_its_session_gets_invalid_epoch(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    with (
        WireClient(kafka.bootstrap_servers) as waiting,
        WireClient(kafka.bootstrap_servers) as other,
    ):
        session = open_session(waiting, fetch_fields({tid: {0: 0}})).session_id
        waiting.send(
            ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=1, max_wait_ms=30_000)
        )
        wait_until_recorded(kafka, 2)  # the broker took epoch 1: it waits for records
        overtaking = other.call(ApiKey.Fetch, 18, **fetch_fields({}, session_id=session, epoch=2))
        assert (overtaking.error_code, overtaking.responses) == (ErrorCode.NO_ERROR, [])
        kafka.produce(TOPIC, b"wakes", partition=0)
        _, overtaken = waiting.recv(ApiKey.Fetch, 18)
    assert (overtaken.error_code, overtaken.session_id, overtaken.responses) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        session,
        [],
    )


def test_a_pushed_error_keeps_the_partition_in_the_session(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    kafka.push_errors(ApiKey.Fetch, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic=TOPIC, partition=1)
    with WireClient(kafka.bootstrap_servers) as client:
        full = open_session(client, fetch_fields({tid: {0: 0, 1: 0}}))
        parts = answered(full)
        assert parts[(tid, 1)].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (parts[(tid, 1)].current_leader.leader_id, full.node_endpoints[0].node_id) == (1, 1)
        kafka.produce(TOPIC, b"after", partition=1)
        response = client.call(
            ApiKey.Fetch, 18, **fetch_fields({}, session_id=full.session_id, epoch=1)
        )
    parts = answered(response)
    assert list(parts) == [(tid, 1)]
    assert b"after" in bytes(parts[(tid, 1)].records)
    first_fetch = kafka.requests(ApiKey.Fetch)[0]
    assert first_fetch.partitions() == {(TOPIC, 0), (TOPIC, 1)}


# ---- real clients ------------------------------------------------------------------------

RECORDS = 40
VALUE_SIZE = 600  # records of ~650 bytes; 1 KiB per partition per fetch: many fetches


def produce_records(kafka: KafkaBroker) -> dict[int, list[bytes]]:
    values: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for i in range(RECORDS):
        value = f"{i:04d}".encode() * (VALUE_SIZE // 4)
        kafka.produce(TOPIC, value, partition=i % 3)
        values[i % 3].append(value)
    return values


def fetches_by_id(kafka: KafkaBroker) -> list[Any]:
    fetches = kafka.requests(ApiKey.Fetch)
    assert fetches
    tid = topic_id(kafka)
    for fetch in fetches:
        assert fetch.api_version >= 13
        assert all(topic.topic_id == tid for topic in fetch.body.topics)
    return [fetch.body for fetch in fetches]


def test_java_consumes_through_an_incremental_fetch_session(kafka: KafkaBroker) -> None:
    values = produce_records(kafka)
    result = run_ok(
        "java-4.3",
        {
            "op": "consume",
            "bootstrap": kafka.bootstrap_servers,
            "topic": TOPIC,
            "count": RECORDS,
            "from": "earliest",
            "group": None,
            "timeout_ms": TIMEOUT_S * 1000,
            "config": {"max.partition.fetch.bytes": "1024", "fetch.max.bytes": "4096"},
        },
    )
    assert not result["timed_out"]
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for record in result["records"]:
        got[record["partition"]].append(base64.b64decode(record["value"]))
    assert got == values
    bodies = fetches_by_id(kafka)
    assert (bodies[0].session_id, bodies[0].session_epoch) == (0, 0)
    incremental = [b for b in bodies if b.session_id != 0 and b.session_epoch > 0]
    assert len(incremental) >= 2
    assert len({b.session_id for b in incremental}) == 1
    epochs = [b.session_epoch for b in incremental]
    assert epochs == list(range(1, len(epochs) + 1))


def test_confluent_kafka_consumes_by_topic_id_without_sessions(kafka: KafkaBroker) -> None:
    """librdkafka (2.16) fetches by topic id but does not use fetch sessions (KIP-227): every
    fetch is full and sessionless (session id 0, epoch -1)."""
    values = produce_records(kafka)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": "unused",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 1024,
            "fetch.max.bytes": 4096,
            "message.max.bytes": 4096,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while sum(map(len, got.values())) < RECORDS:
            assert time.monotonic() < deadline, f"read {got} only"
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got[message.partition()].append(message.value())
    finally:
        consumer.close()
    assert got == values
    bodies = fetches_by_id(kafka)
    assert len(bodies) > 3
    assert {(b.session_id, b.session_epoch) for b in bodies} == {(0, -1)}


def test_kafka_python_consumes_through_a_session_by_topic_name(kafka: KafkaBroker) -> None:
    """kafka-python 3 fetches at v12 (topic names) in incremental fetch sessions."""
    values = produce_records(kafka)
    consumer = KafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        max_partition_fetch_bytes=1024,
        fetch_max_bytes=4096,
        enable_auto_commit=False,
    )
    consumer.assign([KafkaTopicPartition(TOPIC, p) for p in range(3)])
    consumer.seek_to_beginning()
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while sum(map(len, got.values())) < RECORDS:
            assert time.monotonic() < deadline, f"read {got} only"
            for tp, records in consumer.poll(timeout_ms=500).items():
                got[tp.partition].extend(record.value for record in records)
    finally:
        consumer.close()
    assert got == values
    fetches = kafka.requests(ApiKey.Fetch)
    assert {f.api_version for f in fetches} == {12}
    assert {t.topic for f in fetches for t in f.body.topics} == {TOPIC}
    assert (fetches[0].body.session_id, fetches[0].body.session_epoch) == (0, 0)
    assert sum(1 for f in fetches if f.body.session_id != 0 and f.body.session_epoch > 0) >= 2
