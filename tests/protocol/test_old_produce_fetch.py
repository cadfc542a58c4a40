"""Produce v0-2 and Fetch v0-3 on the wire, emulating Kafka 3.9: legacy message sets converted
on append, stored batches down-converted for old fetchers; modern and old real clients on the
same topics."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY
from minibroker.records.legacy import (
    LegacyMessage,
    build_message_set,
    encode_entry,
    encode_message,
    inner_messages,
    iter_entries,
)
from minibroker.testing import KafkaBroker
from tests.wire import WireClient

EMULATE_39 = {"minibroker.emulate.kafka.version": "3.9"}
NOW = int(time.time() * 1000)
_names = (f"t{n}" for n in itertools.count())


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory", config=EMULATE_39) as started:
        yield started


def _topic(broker: KafkaBroker, **config: str) -> str:
    name = next(_names)
    broker.create_topic(name, 1, config)
    return name


def _produce(address: str, version: int, topic: str, records: bytes, acks: int = 1) -> Any | None:
    with WireClient(address) as client:
        fields = {
            "acks": acks,
            "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        }
        if acks == 0:
            client.send(ApiKey.Produce, version, **fields)
            return None
        response = client.call(ApiKey.Produce, version, **fields)
    return response.responses[0].partition_responses[0]


def _fetch(address: str, version: int, topic: str, offset: int = 0) -> Any:
    with WireClient(address) as client:
        response = client.call(
            ApiKey.Fetch,
            version,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        )
    return response.responses[0].partitions[0]


def _messages(records: bytes) -> list[LegacyMessage]:
    out: list[LegacyMessage] = []
    for message, crc_ok in iter_entries(records, partial_tail=True):
        assert crc_ok
        out.extend(inner_messages(message, 1 << 20) if message.codec else [message])
    return out


def _consume(address: str, topic: str, count: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": address, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message)
    finally:
        consumer.close()
    return got


def _records(magic: int, start: int = 0) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (i, NOW + i if magic else -1, b"k%d" % i, b"v%d-%d" % (magic, start + i)) for i in range(3)
    ]


@pytest.mark.parametrize(
    ("version", "magic"), [(0, 0), (1, 0), (2, 1), (2, 0)], ids=["v0", "v1", "v2", "v2-magic0"]
)
@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4])
def test_old_produce_then_modern_and_old_fetchers_read_it(
    broker: KafkaBroker, version: int, magic: int, codec: int
) -> None:
    address = broker.bootstrap_servers
    topic = _topic(broker)
    answer = _produce(
        address, version, topic, build_message_set(_records(magic), magic, codec=codec)
    )
    assert (answer.error_code, answer.base_offset) == (ErrorCode.NO_ERROR, 0)
    if version >= 2:
        assert answer.log_append_time_ms == -1
    got = _consume(address, topic, 3)
    assert [(m.offset(), m.key(), m.value()) for m in got] == [
        (o, k, v) for o, _, k, v in _records(magic)
    ]
    assert [m.timestamp()[1] for m in got] == [t for _, t, _, _ in _records(magic)]
    for fetch_version in range(4):
        partition = _fetch(address, fetch_version, topic)
        assert (partition.error_code, partition.high_watermark) == (ErrorCode.NO_ERROR, 3)
        messages = _messages(partition.records)
        assert [(m.offset, m.key, m.value) for m in messages] == [
            (o, k, v) for o, _, k, v in _records(magic)
        ]
        assert {m.magic for m in messages} == {0 if fetch_version < 2 else 1}
        assert {m.codec for m, _ in iter_entries(partition.records, partial_tail=True)} <= {codec}


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4"])
def test_modern_batches_are_down_converted(broker: KafkaBroker, compression: str) -> None:
    address = broker.bootstrap_servers
    topic = _topic(broker)
    producer = Producer(
        {"bootstrap.servers": address, "compression.type": compression, "linger.ms": 50}
    )
    for i in range(4):
        producer.produce(
            topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")], timestamp=NOW + i
        )
    assert producer.flush(10) == 0
    for fetch_version, magic in [(0, 0), (1, 0), (2, 1), (3, 1)]:
        messages = _messages(_fetch(address, fetch_version, topic).records)
        assert [(m.offset, m.key, m.value) for m in messages] == [
            (i, b"k%d" % i, b"v%d" % i) for i in range(4)
        ]
        assert [m.timestamp for m in messages] == [NOW + i if magic else -1 for i in range(4)]
        if compression == "none":  # one message per record: those before the offset left out
            later = _messages(_fetch(address, fetch_version, topic, offset=2).records)
            assert [m.offset for m in later] == [2, 3]


def test_v2_batches_in_old_produce_requests_are_taken(broker: KafkaBroker) -> None:
    from minibroker.records.records import build_batch

    topic = _topic(broker)
    batch = build_batch([(b"k", b"v", [("h", b"1")], NOW)])
    answer = _produce(broker.bootstrap_servers, 2, topic, batch)
    assert (answer.error_code, answer.base_offset) == (ErrorCode.NO_ERROR, 0)
    assert broker.records(topic)[0].headers == [("h", b"1")]


def test_log_append_time_topics_answer_the_append_time(broker: KafkaBroker) -> None:
    topic = _topic(broker, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    answer = _produce(broker.bootstrap_servers, 2, topic, build_message_set(_records(1), 1))
    assert answer.log_append_time_ms >= before
    messages = _messages(_fetch(broker.bootstrap_servers, 2, topic).records)
    assert {m.timestamp for m in messages} == {answer.log_append_time_ms}


def test_rejections_come_back_per_partition(broker: KafkaBroker) -> None:
    address = broker.bootstrap_servers
    topic = _topic(broker)
    good = build_message_set(_records(1), 1)
    corrupt = bytearray(good)
    corrupt[12] ^= 0xFF
    assert _produce(address, 2, topic, bytes(corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
    nested = encode_entry(
        2, encode_message(1, GZIP, NOW, None, build_message_set(_records(1), 1, codec=GZIP))
    )
    assert _produce(address, 1, topic, nested).error_code == ErrorCode.INVALID_RECORD
    compacted = _topic(broker, **{"cleanup.policy": "compact"})
    keyless = build_message_set([(0, NOW, None, b"v")], 1)
    assert _produce(address, 2, compacted, keyless).error_code == ErrorCode.INVALID_RECORD
    assert broker.records(topic) == []


def test_acks_0_gets_no_answer_and_is_appended(broker: KafkaBroker) -> None:
    topic = _topic(broker)
    assert (
        _produce(broker.bootstrap_servers, 0, topic, build_message_set(_records(0), 0), acks=0)
        is None
    )
    deadline = time.monotonic() + 10
    while len(broker.records(topic)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [r.value for r in broker.records(topic)] == [v for _, _, _, v in _records(0)]


def test_down_conversion_disabled_is_unsupported_version(broker: KafkaBroker) -> None:
    topic = _topic(broker, **{"message.downconversion.enable": "false"})
    broker.produce(topic, b"v", key=b"k")
    for version in range(4):
        partition = _fetch(broker.bootstrap_servers, version, topic)
        assert (partition.error_code, partition.high_watermark) == (
            ErrorCode.UNSUPPORTED_VERSION,
            -1,
        )
        assert not partition.records
    with WireClient(broker.bootstrap_servers) as client:
        modern = client.call(
            ApiKey.Fetch,
            4,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        )
    assert modern.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR


def test_broker_wide_down_conversion_setting() -> None:
    config = {**EMULATE_39, "log.message.downconversion.enable": "false"}
    with KafkaBroker(storage="memory", config=config) as off:
        off.create_topic("t", 1)
        off.produce("t", b"v")
        assert _fetch(off.bootstrap_servers, 2, "t").error_code == ErrorCode.UNSUPPORTED_VERSION
        off.create_topic("on", 1, {"message.downconversion.enable": "true"})
        off.produce("on", b"v")
        assert _messages(_fetch(off.bootstrap_servers, 2, "on").records)[0].value == b"v"


def test_zstd_cannot_be_down_converted(broker: KafkaBroker) -> None:
    address = broker.bootstrap_servers
    zstd_topic = _topic(broker, **{"compression.type": "zstd"})
    broker.produce(zstd_topic, b"v")
    assert _fetch(address, 3, zstd_topic).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    topic = _topic(broker)
    producer = Producer({"bootstrap.servers": address, "compression.type": "zstd"})
    producer.produce(topic, b"v" * 1000)  # librdkafka sends what does not shrink uncompressed
    assert producer.flush(10) == 0
    assert _fetch(address, 2, topic).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_zstd_topics_refuse_fetchers_before_v10_as_kafka_4() -> None:
    with KafkaBroker(storage="memory") as modern:
        modern.create_topic("z", 1, {"compression.type": "zstd"})
        modern.produce("z", b"v")
        with WireClient(modern.bootstrap_servers) as client:
            for version, error in [(9, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE), (10, 0)]:
                response = client.call(
                    ApiKey.Fetch,
                    version,
                    replica_id=-1,
                    max_wait_ms=0,
                    min_bytes=1,
                    max_bytes=1 << 20,
                    isolation_level=0,
                    topics=[
                        {
                            "topic": "z",
                            "partitions": [
                                {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                            ],
                        }
                    ],
                )
                partition = response.responses[0].partitions[0]
                assert partition.error_code == error
                assert bool(partition.records) == (error == 0)


def test_transactional_data_is_served_to_old_fetchers_without_markers(broker: KafkaBroker) -> None:
    address = broker.bootstrap_servers
    topic = _topic(broker)
    producer = Producer({"bootstrap.servers": address, "transactional.id": topic})
    producer.init_transactions(10)
    producer.begin_transaction()
    producer.produce(topic, b"aborted")
    assert producer.flush(10) == 0
    producer.abort_transaction(10)
    producer.begin_transaction()
    producer.produce(topic, b"committed")
    producer.commit_transaction(10)
    messages = _messages(_fetch(address, 2, topic).records)
    assert [(m.offset, m.value) for m in messages] == [(0, b"aborted"), (2, b"committed")]


@pytest.mark.parametrize(
    ("api_version", "codec"),
    [((0, 9), None), ((0, 9), "gzip"), ((0, 10), "snappy"), ((0, 10), "lz4"), ((0, 10, 2), None)],
)
def test_kafka_python_pinned_to_old_brokers(
    broker: KafkaBroker, api_version: tuple[int, ...], codec: str | None
) -> None:
    address = broker.bootstrap_servers
    topic = _topic(broker)
    producer = KafkaProducer(
        bootstrap_servers=address, api_version=api_version, compression_type=codec
    )
    for i in range(5):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(timeout=10)
    producer.close()
    stored = broker.records(topic)
    assert [(r.offset, r.value) for r in stored] == [(i, b"v%d" % i) for i in range(5)]
    timestamps_expected = api_version >= (0, 10)
    assert all((r.timestamp > 0) == timestamps_expected for r in stored)
    consumer = KafkaConsumer(
        bootstrap_servers=address, api_version=api_version, consumer_timeout_ms=3000
    )
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    got = [(m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    assert got == [(i, b"k%d" % i, b"v%d" % i) for i in range(5)]


def test_kafka_4_refuses_old_produce_and_does_not_serve_old_fetch() -> None:
    with KafkaBroker(storage="memory") as modern:
        modern.create_topic("t", 1)
        answer = _produce(modern.bootstrap_servers, 2, "t", build_message_set(_records(1), 1))
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert modern.records("t") == []
        with WireClient(modern.bootstrap_servers) as client:
            client.send(
                ApiKey.Fetch, 3, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1, topics=[]
            )
            assert client.is_closed_by_peer()
