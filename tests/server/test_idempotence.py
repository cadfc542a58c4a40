"""Idempotent producers over TCP: duplicates, gaps and restarts, by hand and with real clients."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import request_class
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from minibroker.txn.snapshot import list_snapshots
from tests.wire import WireClient

PRODUCE_VERSION = 8
INIT_PRODUCER_ID_VERSION = 4
_ProduceTopic = request_class(ApiKey.Produce).TopicProduceData
_FetchTopic = request_class(ApiKey.Fetch).FetchTopic
_ListOffsetsTopic = request_class(ApiKey.ListOffsets).ListOffsetsTopic


def create_topic(bootstrap: str, topic: str) -> None:
    with WireClient(bootstrap) as client:
        topics = [request_class(ApiKey.Metadata).MetadataRequestTopic(name=topic)]
        response = client.call(ApiKey.Metadata, 1, topics=topics)
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def init_producer_id(
    client: WireClient, version: int = INIT_PRODUCER_ID_VERSION
) -> tuple[int, int]:
    response = client.call(
        ApiKey.InitProducerId,
        version,
        transactional_id=None,
        transaction_timeout_ms=60_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert response.error_code == ErrorCode.NO_ERROR
    return response.producer_id, response.producer_epoch


def idempotent_batch(producer_id: int, epoch: int, sequence: int, count: int) -> bytes:
    now_ms = int(time.time() * 1000)
    records = [(None, f"value-{sequence + i}".encode(), [], now_ms) for i in range(count)]
    return build_batch(
        records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence
    )


def produce(client: WireClient, topic: str, batch: bytes) -> Any:
    response = client.call(
        ApiKey.Produce,
        PRODUCE_VERSION,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            _ProduceTopic(
                name=topic,
                partition_data=[_ProduceTopic.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    return response.responses[0].partition_responses[0]


def log_end_offset(bootstrap: str, topic: str) -> int:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.ListOffsets,
            1,
            replica_id=-1,
            topics=[
                _ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        _ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)
                    ],
                )
            ],
        )
    partition = response.topics[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR
    offset: int = partition.offset
    return offset


def stored_batch_headers(bootstrap: str, topic: str) -> list[BatchHeader]:
    headers: list[BatchHeader] = []
    with WireClient(bootstrap) as client:
        while True:
            response = client.call(
                ApiKey.Fetch,
                11,
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 24,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[
                    _FetchTopic(
                        topic=topic,
                        partitions=[
                            _FetchTopic.FetchPartition(
                                partition=0,
                                fetch_offset=headers[-1].last_offset + 1 if headers else 0,
                                partition_max_bytes=1 << 24,
                            )
                        ],
                    )
                ],
                forgotten_topics_data=[],
                rack_id="",
            )
            partition = response.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.NO_ERROR
            batches = split_batches(bytes(partition.records or b""))
            if not batches:
                return headers
            headers += [BatchHeader.parse(batch) for batch in batches]


# -- InitProducerId -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(6))
def test_init_producer_id_hands_out_new_ids(bootstrap: str, version: int) -> None:
    with WireClient(bootstrap) as client:
        first = init_producer_id(client, version)
        second = init_producer_id(client, version)
    assert first[0] >= 0 and second[0] >= 0 and first[0] != second[0]
    assert first[1] == second[1] == 0


def test_init_producer_id_rejects_an_id_without_epoch(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.InitProducerId,
            4,
            transactional_id=None,
            transaction_timeout_ms=60_000,
            producer_id=-1,
            producer_epoch=3,
        )
    assert (response.error_code, response.producer_id, response.producer_epoch) == (
        ErrorCode.INVALID_REQUEST,
        -1,
        -1,
    )


def test_transactional_id_goes_to_the_coordinator(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.InitProducerId, 3, transactional_id="txn-1", transaction_timeout_ms=60_000
        )
    assert response.error_code == ErrorCode.NO_ERROR
    assert (response.producer_id >= 0, response.producer_epoch) == (True, 0)


# -- raw batches ----------------------------------------------------------------------------------


def test_duplicate_is_answered_with_the_original_offsets_and_stored_once(bootstrap: str) -> None:
    create_topic(bootstrap, "dup")
    with WireClient(bootstrap) as client:
        producer_id, epoch = init_producer_id(client)
        first = idempotent_batch(producer_id, epoch, 0, 3)
        second = idempotent_batch(producer_id, epoch, 3, 2)
        assert produce(client, "dup", first).base_offset == 0
        assert produce(client, "dup", second).base_offset == 3
        again = produce(client, "dup", first)
        assert (again.error_code, again.base_offset) == (ErrorCode.NO_ERROR, 0)
        assert produce(client, "dup", second).base_offset == 3
    assert log_end_offset(bootstrap, "dup") == 5


def test_gap_is_out_of_order(bootstrap: str) -> None:
    create_topic(bootstrap, "gap")
    with WireClient(bootstrap) as client:
        producer_id, epoch = init_producer_id(client)
        assert produce(client, "gap", idempotent_batch(producer_id, epoch, 0, 2)).error_code == 0
        gap = produce(client, "gap", idempotent_batch(producer_id, epoch, 3, 1))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(client, "gap", idempotent_batch(producer_id, epoch, 2, 1)).base_offset == 2
    assert log_end_offset(bootstrap, "gap") == 3


def _produce_three_batches(bootstrap: str, topic: str) -> tuple[int, int]:
    create_topic(bootstrap, topic)
    with WireClient(bootstrap) as client:
        producer_id, epoch = init_producer_id(client)
        for sequence in (0, 2, 4):
            batch = idempotent_batch(producer_id, epoch, sequence, 2)
            assert produce(client, topic, batch).base_offset == sequence
    return producer_id, epoch


def _check_sequences_continue(bootstrap: str, topic: str, producer_id: int, epoch: int) -> None:
    with WireClient(bootstrap) as client:
        # a snapshot keeps only each producer's newest batch, as Kafka's does
        duplicate = produce(client, topic, idempotent_batch(producer_id, epoch, 4, 2))
        assert (duplicate.error_code, duplicate.base_offset) == (ErrorCode.NO_ERROR, 4)
        gap = produce(client, topic, idempotent_batch(producer_id, epoch, 7, 1))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(client, topic, idempotent_batch(producer_id, epoch, 6, 1)).base_offset == 6
        assert init_producer_id(client)[0] != producer_id
    assert log_end_offset(bootstrap, topic) == 7


def test_sequences_survive_a_restart(broker: ThreadedBroker, tmp_path: Path) -> None:
    producer_id, epoch = _produce_three_batches(broker.bootstrap_servers, "restart")
    broker.stop()
    snapshots = list_snapshots(tmp_path / "data" / "restart-0")
    assert [offset for offset, _ in snapshots] == [6]
    broker.start()
    _check_sequences_continue(broker.bootstrap_servers, "restart", producer_id, epoch)


def test_sequences_are_rebuilt_from_the_log_without_a_snapshot(
    broker: ThreadedBroker, tmp_path: Path
) -> None:
    producer_id, epoch = _produce_three_batches(broker.bootstrap_servers, "crash")
    broker.stop()
    for _, path in list_snapshots(tmp_path / "data" / "crash-0"):
        path.unlink()  # as after a crash: no snapshot from a clean shutdown
    broker.start()
    _check_sequences_continue(broker.bootstrap_servers, "crash", producer_id, epoch)


# -- real clients ---------------------------------------------------------------------------------


def _assert_one_producer_in_sequence(headers: list[BatchHeader], records: int) -> None:
    assert sum(h.records_count for h in headers) == records
    assert {h.producer_id for h in headers} != {-1}
    assert len({h.producer_id for h in headers}) == 1
    expected = 0
    for header in headers:
        assert header.base_sequence == expected
        expected += header.records_count


@pytest.mark.clients
def test_kafka_python_is_idempotent_across_a_restart(broker: ThreadedBroker) -> None:
    from kafka import KafkaProducer

    create_topic(broker.bootstrap_servers, "kp3")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
    try:
        assert producer.config["enable_idempotence"]
        for i in range(50):
            producer.send("kp3", value=f"before-{i}".encode(), partition=0)
        producer.flush(timeout=30)
        broker.restart()
        futures = [
            producer.send("kp3", value=f"after-{i}".encode(), partition=0) for i in range(50)
        ]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close(timeout=10)
    _assert_one_producer_in_sequence(stored_batch_headers(broker.bootstrap_servers, "kp3"), 100)


@pytest.mark.clients
def test_confluent_kafka_is_idempotent_across_a_restart(broker: ThreadedBroker) -> None:
    from confluent_kafka import KafkaError, Producer

    create_topic(broker.bootstrap_servers, "rdk")
    errors: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            errors.append(error)

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    for i in range(50):
        producer.produce("rdk", value=f"before-{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    broker.restart()
    for i in range(50):
        producer.produce("rdk", value=f"after-{i}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert errors == []
    _assert_one_producer_in_sequence(stored_batch_headers(broker.bootstrap_servers, "rdk"), 100)
