"""Fetch v13-18 over the wire: topics by id in request and response, UNKNOWN_TOPIC_ID, the
v15+ ReplicaState, and leader discovery (KIP-951, v16+) in an in-process cluster."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from minibroker.log.blob import SMALL_REGION_BYTES
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker, KafkaCluster
from tests.wire import WireClient

TOPIC = "t"


def partition_fields(index: int, offset: int, leader_epoch: int = -1) -> dict[str, Any]:
    return {
        "partition": index,
        "current_leader_epoch": leader_epoch,
        "fetch_offset": offset,
        "last_fetched_epoch": -1,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }


def fetch_fields(
    topics: dict[uuid.UUID, dict[int, int]],
    *,
    session_id: int = 0,
    epoch: int = -1,
    forgotten: dict[uuid.UUID, list[int]] | None = None,
    max_wait_ms: int = 0,
    leader_epoch: int = -1,
) -> dict[str, Any]:
    """A Fetch v13+ request: {topic id: {partition: fetch offset}}."""
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 16 << 20,
        "isolation_level": 0,
        "session_id": session_id,
        "session_epoch": epoch,
        "topics": [
            {
                "topic_id": topic_id,
                "partitions": [
                    partition_fields(index, offset, leader_epoch)
                    for index, offset in offsets.items()
                ],
            }
            for topic_id, offsets in topics.items()
        ],
        "forgotten_topics_data": [
            {"topic_id": topic_id, "partitions": indexes}
            for topic_id, indexes in (forgotten or {}).items()
        ],
        "rack_id": "",
    }


def topic_id(kafka: KafkaCluster, name: str = TOPIC) -> uuid.UUID:
    return kafka.node(kafka.node_ids[0]).cluster.topics[name].topic_id


def answered(response: Any) -> dict[tuple[uuid.UUID, int], Any]:
    return {(t.topic_id, p.partition_index): p for t in response.responses for p in t.partitions}


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        running.create_topic(TOPIC, partitions=2)
        yield running


@pytest.mark.parametrize("version", [13, 14, 15, 16, 17, 18])
def test_topics_go_by_id_in_request_and_response(kafka: KafkaBroker, version: int) -> None:
    kafka.produce(TOPIC, b"first-record", partition=0)
    kafka.produce(TOPIC, b"second-record", partition=0)
    kafka.produce(TOPIC, b"third-record", partition=1)
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Fetch, version, **fetch_fields({tid: {0: 1, 1: 0}}))
    assert response.error_code == ErrorCode.NO_ERROR
    assert response.session_id == 0  # epoch -1: sessionless
    assert [t.topic_id for t in response.responses] == [tid]
    parts = answered(response)
    assert [p.error_code for p in parts.values()] == [ErrorCode.NO_ERROR] * 2
    assert (parts[(tid, 0)].high_watermark, parts[(tid, 1)].high_watermark) == (2, 1)
    assert b"second-record" in bytes(parts[(tid, 0)].records)
    assert b"first-record" not in bytes(parts[(tid, 0)].records)
    assert b"third-record" in bytes(parts[(tid, 1)].records)


def test_v15_replica_state_of_a_consumer_is_served(kafka: KafkaBroker) -> None:
    kafka.produce(TOPIC, b"replica-state", partition=0)
    fields = fetch_fields({topic_id(kafka): {0: 0}})
    del fields["replica_id"]
    fields["replica_state"] = {"replica_id": -1, "replica_epoch": -1}
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Fetch, 18, **fields)
    (partition,) = answered(response).values()
    assert partition.error_code == ErrorCode.NO_ERROR
    assert b"replica-state" in bytes(partition.records)


def test_an_unknown_topic_id_gets_unknown_topic_id_for_each_partition(kafka: KafkaBroker) -> None:
    kafka.produce(TOPIC, b"kept", partition=0)
    unknown = uuid.uuid4()
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(
            ApiKey.Fetch, 18, **fetch_fields({unknown: {0: 0, 3: 0}, tid: {0: 0}})
        )
        # Alongside an empty partition, the error answers at once (no 60 s long poll; the
        # client gives up after 10 s).
        waiting = client.call(
            ApiKey.Fetch, 18, **fetch_fields({unknown: {0: 0}, tid: {1: 0}}, max_wait_ms=60_000)
        )
    parts = answered(response)
    assert [t.topic_id for t in response.responses] == [unknown, tid]
    assert parts[(unknown, 0)].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert parts[(unknown, 3)].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert parts[(unknown, 0)].high_watermark == -1
    assert parts[(tid, 0)].error_code == ErrorCode.NO_ERROR
    assert b"kept" in bytes(parts[(tid, 0)].records)
    assert [p.error_code for p in answered(waiting).values()] == [
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.NO_ERROR,
    ]


def test_an_unknown_partition_of_a_known_topic_id(kafka: KafkaBroker) -> None:
    tid = topic_id(kafka)
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Fetch, 13, **fetch_fields({tid: {7: 0}}))
    assert answered(response)[(tid, 7)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_v12_still_names_topics(kafka: KafkaBroker) -> None:
    kafka.produce(TOPIC, b"named", partition=1)
    fields = fetch_fields({})
    fields["topics"] = [{"topic": TOPIC, "partitions": [partition_fields(1, 0)]}]
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Fetch, 12, **fields)
    assert [t.topic for t in response.responses] == [TOPIC]
    assert b"named" in bytes(response.responses[0].partitions[0].records)


def test_v18_sends_large_record_ranges_from_the_segment_files() -> None:
    """Records past SMALL_REGION_BYTES go out as file regions (sendfile), in a v18 frame."""
    with KafkaBroker() as kafka:
        kafka.create_topic("big", partitions=1)
        producer = Producer(
            {"bootstrap.servers": kafka.bootstrap_servers, "linger.ms": 5, "batch.size": 1 << 20}
        )
        for _ in range(3000):
            producer.produce("big", b"v" * 1000, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        partition = kafka.node(1).cluster.partition("big", 0)
        assert partition is not None
        stored = partition.log.read(0, 16 << 20)
        assert len(stored) > 10 * SMALL_REGION_BYTES
        with WireClient(kafka.bootstrap_servers) as client:
            response = client.call(
                ApiKey.Fetch, 18, **fetch_fields({topic_id(kafka, "big"): {0: 0}})
            )
    (fetched,) = answered(response).values()
    assert (fetched.error_code, fetched.high_watermark) == (ErrorCode.NO_ERROR, 3000)
    # Whole batches up to partition_max_bytes (1 MiB), byte for byte as stored.
    assert len(fetched.records) > SMALL_REGION_BYTES
    assert stored.startswith(fetched.records)


@pytest.mark.parametrize(
    ("version", "error"),
    [
        (4, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (5, ErrorCode.NOT_LEADER_OR_FOLLOWER),
        (6, ErrorCode.KAFKA_STORAGE_ERROR),
        (12, ErrorCode.KAFKA_STORAGE_ERROR),
    ],
)
def test_a_storage_error_is_not_leader_before_v6(
    kafka: KafkaBroker, version: int, error: ErrorCode
) -> None:
    partition = kafka.node(1).cluster.partition(TOPIC, 0)
    assert partition is not None
    partition.log.storage_error = OSError("disk gone")  # as the log sets it on an I/O error
    fields = fetch_fields({})
    fields["topics"] = [{"topic": TOPIC, "partitions": [partition_fields(0, 0)]}]
    with WireClient(kafka.bootstrap_servers) as client:
        response = client.call(ApiKey.Fetch, version, **fields)
    assert response.responses[0].partitions[0].error_code == error


# ---- leader discovery (KIP-951) ----------------------------------------------------------


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        running.create_topic(TOPIC, partitions=3)
        yield running


def test_not_leader_carries_the_current_leader_and_its_endpoint(cluster: KafkaCluster) -> None:
    tid = topic_id(cluster)
    assert (cluster.leader(TOPIC, 1), cluster.leader(TOPIC, 2)) == (2, 3)
    cluster.move_leader(TOPIC, 2, 2)  # leader epoch 1
    with WireClient(cluster.address(1)) as client:
        response = client.call(ApiKey.Fetch, 16, **fetch_fields({tid: {0: 0, 1: 0, 2: 0}}))
    parts = answered(response)
    assert parts[(tid, 0)].error_code == ErrorCode.NO_ERROR
    assert parts[(tid, 0)].current_leader is None
    for index, epoch in ((1, 0), (2, 1)):
        moved = parts[(tid, index)]
        assert moved.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (moved.current_leader.leader_id, moved.current_leader.leader_epoch) == (2, epoch)
    host, _, port = cluster.address(2).partition(":")
    assert [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints] == [
        (2, host, int(port), None)
    ]


def test_fenced_leader_epoch_carries_the_current_leader(cluster: KafkaCluster) -> None:
    tid = topic_id(cluster)
    cluster.move_leader(TOPIC, 0, 3)  # leader epoch 1 on node 3
    with WireClient(cluster.address(3)) as client:
        response = client.call(ApiKey.Fetch, 18, **fetch_fields({tid: {0: 0}}, leader_epoch=0))
    (fenced,) = answered(response).values()
    assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (3, 1)
    assert [e.node_id for e in response.node_endpoints] == [3]


def test_before_v16_not_leader_comes_without_leader_or_endpoints(cluster: KafkaCluster) -> None:
    tid = topic_id(cluster)
    with WireClient(cluster.address(1)) as client:
        response = client.call(ApiKey.Fetch, 15, **fetch_fields({tid: {1: 0}}))
    (moved,) = answered(response).values()
    assert moved.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert moved.current_leader is None
    assert not response.node_endpoints
