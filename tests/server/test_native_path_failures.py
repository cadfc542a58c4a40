"""A native fast path that fails (`dispatch.answer_natively`) is answered as a failing handler
is: logged, UNKNOWN_SERVER_ERROR where the response has a top-level error code (Fetch), else
the connection closed (Produce) once the answers before it are written."""

from __future__ import annotations

from collections.abc import Iterator
from unittest import mock

import pytest

from minibroker.handlers import fetch_native, produce_native
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.wire import WireClient, encode_request, request_frame

BUG = RuntimeError("a bug in the native path")


@pytest.fixture
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(record_requests=False) as running:
        running.create_topic("t")
        yield running


def test_a_failing_native_fetch_is_answered_unknown_server_error(broker: KafkaBroker) -> None:
    wanted = {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}
    with (
        mock.patch.object(fetch_native, "answer", side_effect=BUG),
        WireClient(broker.bootstrap_servers) as client,
    ):
        answer = client.call(
            ApiKey.Fetch,
            12,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[{"topic": "t", "partitions": [wanted]}],
            forgotten_topics_data=[],
            rack_id="",
        )
    assert answer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_a_failing_native_produce_closes_the_connection(broker: KafkaBroker) -> None:
    produce = encode_request(
        ApiKey.Produce,
        9,
        transactional_id=None,
        acks=1,
        timeout_ms=1000,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": b""}]}],
    )
    versions = request_frame(ApiKey.ApiVersions, 3, 1, encode_request(ApiKey.ApiVersions, 3))
    with (
        mock.patch.object(produce_native, "answer", side_effect=BUG),
        WireClient(broker.bootstrap_servers) as client,
    ):
        # in one send, so that both are read together: the answer before the failure is kept
        client.send_raw(versions + request_frame(ApiKey.Produce, 9, 2, produce))
        assert client.recv(ApiKey.ApiVersions, 3)[0] == 1
        with pytest.raises(ConnectionError):
            client.recv_frame()
