"""Kafka's answers to requests it won't serve, over TCP with hand-built frames."""

from __future__ import annotations

import struct
import time

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient, encode_request, request_frame


def test_unknown_api_versions_version_gets_a_v0_error_body(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        client.send_raw(request_frame(ApiKey.ApiVersions, 9, 77, b"\x00\x00\x00"))
        frame = client.recv_frame()
    correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
    assert (correlation_id, error_code, count) == (77, ErrorCode.UNSUPPORTED_VERSION, 1)
    assert struct.unpack_from(">hhh", frame, 10) == (ApiKey.ApiVersions, 0, 4)
    assert len(frame) == 16


def test_unknown_api_key_closes_the_connection(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        client.send_raw(request_frame(999, 0, 1, b""))
        assert client.is_closed_by_peer()
    with WireClient(bootstrap) as other:
        assert other.call(ApiKey.ApiVersions, 0).error_code == ErrorCode.NO_ERROR


def test_unadvertised_version_closes_the_connection(bootstrap: str) -> None:
    body = encode_request(ApiKey.Fetch, 3, max_wait_ms=0, min_bytes=1, topics=[])
    with WireClient(bootstrap) as client:
        client.send_raw(request_frame(ApiKey.Fetch, 3, 1, body))
        assert client.is_closed_by_peer()


def test_truncated_body_closes_the_connection(bootstrap: str) -> None:
    body = encode_request(ApiKey.Metadata, 1, topics=[{"name": "some-topic"}])[:-3]
    with WireClient(bootstrap) as client:
        client.send_raw(request_frame(ApiKey.Metadata, 1, 1, body))
        assert client.is_closed_by_peer()


def test_oversized_frame_closes_the_connection(tmp_path: object) -> None:
    settings = {"socket.request.max.bytes": "1000"}
    with ThreadedBroker(settings=settings) as running, WireClient(running.bootstrap_servers) as c:
        c.send_raw(struct.pack(">i", 1001) + b"\x00" * 16)
        assert c.is_closed_by_peer()


def test_produce_v2_is_advertised_but_rejected(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        client.call(ApiKey.Metadata, 1, topics=[{"name": "t"}])
        topic_data = [{"name": "t", "partition_data": [{"index": 0, "records": b""}]}]
        response = client.call(ApiKey.Produce, 2, acks=1, timeout_ms=1000, topic_data=topic_data)
    partition = response.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_responses_come_back_in_request_order(bootstrap: str) -> None:
    """A long-polling Fetch must not let the Metadata request behind it answer first."""
    with WireClient(bootstrap) as client:
        client.call(ApiKey.Metadata, 1, topics=[{"name": "order"}])
        fetch_id = client.send(
            ApiKey.Fetch,
            4,
            replica_id=-1,
            max_wait_ms=300,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            topics=[
                {
                    "topic": "order",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
                    ],
                }
            ],
        )
        metadata_id = client.send(ApiKey.Metadata, 1, topics=None)
        first, _ = client.recv(ApiKey.Fetch, 4)
        second, _ = client.recv(ApiKey.Metadata, 1)
    assert (first, second) == (fetch_id, metadata_id)


def test_metadata_auto_creates_and_rejects_bad_names(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Metadata,
            12,
            topics=[{"name": "fresh"}, {"name": "bad/name"}],
            allow_auto_topic_creation=True,
        )
        again = client.call(ApiKey.Metadata, 12, topics=[{"name": "fresh"}])
    fresh, bad = response.topics
    assert fresh.error_code == ErrorCode.NO_ERROR and len(fresh.partitions) == 1
    assert fresh.topic_id.int != 0 and again.topics[0].topic_id == fresh.topic_id
    assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_metadata_without_auto_creation(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Metadata, 12, topics=[{"name": "absent"}], allow_auto_topic_creation=False
        )
    assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(("version", "cluster_field"), [(8, True), (10, True), (12, False)])
def test_metadata_authorized_operations_only_when_asked(
    bootstrap: str, version: int, cluster_field: bool
) -> None:
    topic_operations = {3, 4, 5, 6, 7, 8, 10, 11}
    with WireClient(bootstrap) as client:
        asked = client.call(
            ApiKey.Metadata,
            version,
            topics=[{"name": "acl-ops"}],
            include_cluster_authorized_operations=cluster_field,
            include_topic_authorized_operations=True,
        )
        not_asked = client.call(ApiKey.Metadata, version, topics=[{"name": "acl-ops"}])
    assert asked.topics[0].authorized_operations == topic_operations
    assert not_asked.topics[0].authorized_operations is None
    if cluster_field:
        assert asked.authorized_operations == {5, 7, 8, 9, 10, 11, 12}
        assert not_asked.authorized_operations is None


def test_fetch_long_poll_is_woken_by_an_append(bootstrap: str) -> None:
    from minibroker.records.records import build_batch

    batch = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
    with WireClient(bootstrap) as consumer, WireClient(bootstrap) as producer:
        consumer.call(ApiKey.Metadata, 1, topics=[{"name": "wake"}])
        fetch_id = consumer.send(
            ApiKey.Fetch,
            11,
            replica_id=-1,
            max_wait_ms=20_000,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": "wake",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        produced = producer.call(
            ApiKey.Produce,
            8,
            acks=1,
            timeout_ms=1000,
            topic_data=[{"name": "wake", "partition_data": [{"index": 0, "records": batch}]}],
        )
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
        consumer.sock.settimeout(10)
        correlation_id, fetched = consumer.recv(ApiKey.Fetch, 11)
    assert correlation_id == fetch_id
    partition = fetched.responses[0].partitions[0]
    assert partition.high_watermark == 1 and partition.preferred_read_replica == -1
    stored = bytes(partition.records)
    assert stored[16:] == batch[16:], "stored bytes differ beyond offset and leader epoch"
    assert stored[12:16] == b"\x00\x00\x00\x00"


def test_incremental_fetch_session_is_not_found(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Fetch,
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1024,
            isolation_level=0,
            session_id=5,
            session_epoch=3,
            topics=[],
            forgotten_topics_data=[],
            rack_id="",
        )
    assert response.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_acks_zero_gets_no_response(bootstrap: str) -> None:
    from minibroker.records.records import build_batch

    batch = build_batch([(None, b"fire and forget", [], int(time.time() * 1000))])
    with WireClient(bootstrap) as client:
        client.call(ApiKey.Metadata, 1, topics=[{"name": "acks0"}])
        client.send(
            ApiKey.Produce,
            7,
            acks=0,
            timeout_ms=1000,
            topic_data=[{"name": "acks0", "partition_data": [{"index": 0, "records": batch}]}],
        )
        metadata_id = client.send(ApiKey.Metadata, 1, topics=[{"name": "acks0"}])
        correlation_id, _ = client.recv(ApiKey.Metadata, 1)
        offsets = client.call(
            ApiKey.ListOffsets,
            1,
            replica_id=-1,
            topics=[{"name": "acks0", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        )
    assert correlation_id == metadata_id
    assert offsets.topics[0].partitions[0].offset == 1
