"""Fetch responses sent from the segment files (sendfile, and chunks through the transport when
the socket is full): the bytes, their order, and the descriptors they hold, on asyncio's loop
and on uvloop."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvloop
from confluent_kafka import Producer

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

TOPIC = "big"
VALUE = b"v" * 1000
RECORDS = 12_000  # about 12 MB: more than the socket buffers hold
FETCH_VERSIONS = (4, 11, 12)
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


@pytest.fixture(params=list(LOOPS))
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(tmp_path / "data", loop_factory=LOOPS[request.param]) as running:
        producer = Producer(
            {"bootstrap.servers": running.bootstrap_servers, "linger.ms": 5, "batch.size": 1 << 20}
        )
        for _ in range(RECORDS):
            producer.produce(TOPIC, VALUE, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        yield running


def fetch_fields(offset: int, max_wait_ms: int = 0) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 64 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 16 << 20}
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def slow_reader(bootstrap: str) -> WireClient:
    """A client whose small receive buffer keeps the broker's socket full."""
    host, _, port = bootstrap.partition(":")
    client = WireClient(bootstrap)
    client.sock.close()
    client.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    client.sock.settimeout(30)
    client.sock.connect((host, int(port)))
    return client


def stored_bytes(broker: ThreadedBroker, offset: int) -> bytes:
    assert broker.broker is not None
    partition = broker.broker.cluster.partition(TOPIC, 0)
    assert partition is not None
    return partition.log.read(offset, 16 << 20)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_pipelined_fetches_come_back_whole_and_in_order(broker: ThreadedBroker) -> None:
    offsets = [0, RECORDS // 3, 0]
    with slow_reader(broker.bootstrap_servers) as client:
        sent = []
        for offset, version in zip(offsets, FETCH_VERSIONS, strict=True):
            sent.append(client.send(ApiKey.Fetch, version, **fetch_fields(offset)))
        sent.append(client.send(ApiKey.Metadata, 12, topics=None))
        for offset, version, correlation_id in zip(offsets, FETCH_VERSIONS, sent, strict=False):
            received_id, response = client.recv(ApiKey.Fetch, version)
            assert received_id == correlation_id
            partition = response.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.NO_ERROR
            assert partition.high_watermark == RECORDS
            assert partition.records == stored_bytes(broker, offset)
            assert len(partition.records) > 4 << 20
        received_id, metadata = client.recv(ApiKey.Metadata, 12)
        assert received_id == sent[-1]
        assert [topic.name for topic in metadata.topics] == [TOPIC]


def test_a_client_gone_mid_response_leaves_no_descriptor_behind(broker: ThreadedBroker) -> None:
    with WireClient(broker.bootstrap_servers) as warm_up:
        warm_up.call(ApiKey.Fetch, 12, **fetch_fields(0))
    baseline = open_descriptors()
    for _ in range(3):
        client = slow_reader(broker.bootstrap_servers)
        for _ in range(3):
            client.send(ApiKey.Fetch, 12, **fetch_fields(0))
        client.recv_frame()  # the broker is now in the middle of the second response
        client.close()
    deadline = time.monotonic() + 20
    while open_descriptors() > baseline:
        assert time.monotonic() < deadline, "file regions of unsent responses stayed open"
        time.sleep(0.05)
