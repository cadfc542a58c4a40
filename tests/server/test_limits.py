"""Connection limits by Kafka's names: max.connections, max.connections.per.ip (+ overrides),
connections.max.idle.ms, and the bound on requests in flight per connection."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.server.connection import MAX_IN_FLIGHT_REQUESTS
from minibroker.server.quotas import parse_overrides
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient, encode_request, request_frame

DEADLINE_SECONDS = 20.0


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _works(client: WireClient) -> bool:
    return bool(client.call(ApiKey.ApiVersions, 0).error_code == ErrorCode.NO_ERROR)


@pytest.fixture
def limited(request: pytest.FixtureRequest) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=request.param) as running:
        yield running


def _quotas(broker: ThreadedBroker) -> object:
    assert broker.broker is not None
    return broker.broker.quotas


@pytest.mark.parametrize("limited", [{"max.connections.per.ip": "2"}], indirect=True)
def test_a_connection_over_the_per_ip_maximum_is_closed(limited: ThreadedBroker) -> None:
    address = limited.bootstrap_servers
    with WireClient(address) as first, WireClient(address) as second:
        assert _works(first) and _works(second)
        with WireClient(address) as third:
            assert third.is_closed_by_peer()
        assert _works(first) and _works(second)
    # Both closed: their slots come back once the broker has seen them go.
    _wait_for(lambda: limited.broker is not None and limited.broker.quotas.total == 0, "slots")
    with WireClient(address) as again, WireClient(address) as and_again:
        assert _works(again) and _works(and_again)


@pytest.mark.parametrize(
    "limited",
    [{"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "localhost:3"}],
    indirect=True,
)
def test_per_ip_override_by_host_name(limited: ThreadedBroker) -> None:
    address = limited.bootstrap_servers
    with ExitStack() as stack:
        clients = [stack.enter_context(WireClient(address)) for _ in range(3)]
        assert all(_works(client) for client in clients)
        with WireClient(address) as fourth:
            assert fourth.is_closed_by_peer()


def test_override_parsing() -> None:
    assert parse_overrides("") == {}
    assert parse_overrides("127.0.0.1:5, 10.0.0.1:0") == {"127.0.0.1": 5, "10.0.0.1": 0}
    with pytest.raises(ValueError):
        parse_overrides("127.0.0.1")


@pytest.mark.parametrize("limited", [{"max.connections": "2"}], indirect=True)
def test_over_max_connections_a_client_waits_for_a_slot(limited: ThreadedBroker) -> None:
    """As Kafka's acceptor blocks, the third client is not served until one closes."""
    address = limited.bootstrap_servers
    assert limited.broker is not None
    quotas = limited.broker.quotas
    first = WireClient(address)
    with WireClient(address) as second:
        assert _works(first) and _works(second)
        with WireClient(address) as third:
            _wait_for(lambda: len(quotas.waiting) == 1, "the third connection to wait")
            sent = third.send(ApiKey.ApiVersions, 0)
            assert quotas.total == 2
            first.close()
            correlation_id, response = third.recv(ApiKey.ApiVersions, 0)
            assert (correlation_id, response.error_code) == (sent, ErrorCode.NO_ERROR)
            assert len(quotas.waiting) == 0
            assert _works(second)


@pytest.mark.parametrize(
    "limited", [{"max.connections": "1", "socket.listen.backlog.size": "1"}], indirect=True
)
def test_waiting_connections_are_bounded_by_the_backlog_size(limited: ThreadedBroker) -> None:
    address = limited.bootstrap_servers
    assert limited.broker is not None
    quotas = limited.broker.quotas
    with WireClient(address) as first, WireClient(address):
        assert _works(first)
        _wait_for(lambda: len(quotas.waiting) == 1, "the second connection to wait")
        with WireClient(address) as third:
            assert third.is_closed_by_peer()
        assert _works(first)


@pytest.mark.parametrize("limited", [{"connections.max.idle.ms": "200"}], indirect=True)
def test_idle_connection_is_closed(limited: ThreadedBroker) -> None:
    with WireClient(limited.bootstrap_servers) as client:
        assert _works(client)
        assert client.is_closed_by_peer()


@pytest.mark.parametrize("limited", [{"connections.max.idle.ms": "300"}], indirect=True)
def test_a_sender_trickling_one_frame_is_closed(limited: ThreadedBroker) -> None:
    """Bytes of an unfinished request are not activity: the trickle cannot keep it open."""
    frame = request_frame(ApiKey.ApiVersions, 0, 1, b"")
    partial = struct.pack(">i", 10_000) + frame[4:]
    with WireClient(limited.bootstrap_servers) as client:
        client.send_raw(partial)
        client.sock.settimeout(0.05)
        deadline = time.monotonic() + DEADLINE_SECONDS
        closed = False
        while not closed and time.monotonic() < deadline:
            try:
                client.send_raw(b"\x00")
                closed = client.sock.recv(1) == b""
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                closed = True
        assert closed


@pytest.mark.parametrize("limited", [{"connections.max.idle.ms": "200"}], indirect=True)
def test_a_long_poll_in_flight_is_not_idle(limited: ThreadedBroker) -> None:
    with WireClient(limited.bootstrap_servers) as client:
        client.call(ApiKey.Metadata, 4, topics=[{"name": "idle"}], allow_auto_topic_creation=True)
        partitions = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]
        response = client.call(
            ApiKey.Fetch,
            4,
            replica_id=-1,
            max_wait_ms=1500,
            min_bytes=1,
            max_bytes=1024,
            isolation_level=0,
            topics=[{"topic": "idle", "partitions": partitions}],
        )
        assert response.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR


def test_requests_in_flight_are_bounded_even_within_one_read(broker: ThreadedBroker) -> None:
    """300 long-polling Fetches sent in one write: at most MAX_IN_FLIGHT_REQUESTS are started,
    the rest wait in the buffer, and all are answered in order."""
    address = broker.bootstrap_servers
    count = 300
    with WireClient(address) as client:
        client.call(
            ApiKey.Metadata, 4, topics=[{"name": "inflight"}], allow_auto_topic_creation=True
        )
        partitions = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]
        body = encode_request(
            ApiKey.Fetch,
            4,
            replica_id=-1,
            max_wait_ms=300,
            min_bytes=1,
            max_bytes=1024,
            isolation_level=0,
            topics=[{"topic": "inflight", "partitions": partitions}],
        )
        client.send_raw(b"".join(request_frame(ApiKey.Fetch, 4, i, body) for i in range(count)))
        assert broker.broker is not None
        connections = broker.broker.connections
        _wait_for(lambda: any(c.in_flight for c in connections), "requests in flight")
        peak = 0
        for expected in range(count):
            peak = max(peak, *(c.in_flight for c in connections))
            correlation_id, _ = client.recv(ApiKey.Fetch, 4)
            assert correlation_id == expected
        assert 0 < peak <= MAX_IN_FLIGHT_REQUESTS


def _send_long_poll(client: WireClient, topic: str, max_wait_ms: int) -> None:
    """A Fetch at the end of an empty topic: it stays in flight for `max_wait_ms`."""
    client.call(ApiKey.Metadata, 4, topics=[{"name": topic}], allow_auto_topic_creation=True)
    partitions = [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}]
    client.send(
        ApiKey.Fetch,
        4,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1024,
        isolation_level=0,
        topics=[{"topic": topic, "partitions": partitions}],
    )


@pytest.mark.parametrize("limited", [{"queued.max.request.bytes": "1"}], indirect=True)
def test_queued_request_bytes_bound_holds_other_connections(limited: ThreadedBroker) -> None:
    """One long-polling Fetch holds the whole bound: a second connection's request is not
    started until the Fetch is answered, then it is. Meanwhile both connections wait, as
    Kafka mutes every channel while its memory pool is exhausted."""
    assert limited.broker is not None
    quotas = limited.broker.quotas
    address = limited.bootstrap_servers
    with WireClient(address) as polling, WireClient(address) as other:
        _send_long_poll(polling, "queued", max_wait_ms=1500)
        _wait_for(lambda: len(quotas.waiting_for_bytes) == 1, "the polling connection held")
        other.send(ApiKey.ApiVersions, 0)
        _wait_for(lambda: len(quotas.waiting_for_bytes) == 2, "the other request held")
        assert quotas.queued_request_bytes > 0  # the Fetch still holds the bytes
        polling.recv(ApiKey.Fetch, 4)
        assert other.recv(ApiKey.ApiVersions, 0)[1].error_code == ErrorCode.NO_ERROR
        assert _works(polling) and _works(other)
    _wait_for(lambda: quotas.queued_request_bytes == 0, "every request byte released")


def test_queued_request_bytes_default_lets_connections_proceed(broker: ThreadedBroker) -> None:
    """Under the default bound a long poll holds nothing up; a closed connection's request
    bytes are released."""
    assert broker.broker is not None
    quotas = broker.broker.quotas
    with WireClient(broker.bootstrap_servers) as polling:
        _send_long_poll(polling, "unqueued", max_wait_ms=60_000)
        _wait_for(lambda: quotas.queued_request_bytes > 0, "the Fetch in flight")
        with WireClient(broker.bootstrap_servers) as other:
            assert _works(other)
        assert quotas.queued_request_bytes > 0 and not quotas.waiting_for_bytes
    _wait_for(lambda: quotas.queued_request_bytes == 0, "the closed connection's bytes")
