"""Self-test of the real-client harness against librdkafka's in-process mock cluster.

Every client produces and consumes with every codec it supports; what it reads back must be
what it wrote, and what confluent-kafka reads back too (so that no program's encoding of the
job protocol is symmetric nonsense). The mock cluster stands in for a broker only here.
"""

from __future__ import annotations

import base64
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import confluent_kafka
import pytest

from .mock_proxy import MockClusterProxy
from .runner import (
    CAPABILITIES,
    CLIENTS,
    Capabilities,
    ClientRunError,
    install_all,
    job_server,
    run_client,
    run_ok,
)

pytestmark = pytest.mark.clients

# These open with ApiVersions v4, whose answer from the mock cluster they cannot use (see
# mock_proxy.py); they reach the mock through the proxy that repairs it.
NEED_PROXY = {"java-4.3", "java-3.9", "kafka-python-3"}
MOCK_PARTITIONS = 4  # the mock cluster's default for auto-created topics
JOB_TIMEOUT_MS = 20_000
CREATE_TIME = 1_600_000_000_123


@dataclass
class MockCluster:
    owner: confluent_kafka.Producer  # the cluster lives as long as this producer
    direct: str
    proxied: str

    def bootstrap(self, client: str) -> str:
        return self.proxied if client in NEED_PROXY else self.direct

    def create_topic(self, name: str) -> None:
        """The mock creates topics on a metadata request from librdkafka."""
        topic = self.owner.list_topics(name, timeout=10).topics[name]
        assert topic.error is None, topic.error
        assert len(topic.partitions) == MOCK_PARTITIONS


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[MockCluster]:
    owner = confluent_kafka.Producer({"test.mock.num.brokers": 1})
    broker = next(iter(owner.list_topics(timeout=10).brokers.values()))
    proxy = MockClusterProxy((broker.host, broker.port))
    yield MockCluster(owner, f"{broker.host}:{broker.port}", proxy.bootstrap)
    proxy.close()


@pytest.fixture(scope="module", autouse=True)
def clients_installed() -> None:
    install_all()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def sample_records(caps: Capabilities) -> list[dict[str, Any]]:
    headers: list[list[str | None]] = [
        ["trace", b64(b"abc")],
        ["empty", b64(b"")],
        ["trace", b64(b"def")],
    ]
    if caps.null_header_values:
        headers.append(["null", None])
    records: list[dict[str, Any]] = [
        {
            "key": b64(b"key-1"),
            "value": b64(b"\x00\xffbinary\n"),
            "headers": headers,
            "partition": 0,
        },
        {"key": None, "value": b64(b"no key"), "headers": [], "partition": 1},
        {"key": b64(b"tombstone"), "value": None, "headers": [], "partition": 1},
        {"key": b64(b"big"), "value": b64(b"compressible " * 500), "headers": [], "partition": 2},
        {
            "key": b64(b"partitioned by the client"),
            "value": b64(b"v"),
            "headers": [],
            "partition": None,
        },
    ]
    if caps.record_timestamps:
        records[1]["timestamp"] = CREATE_TIME
    return records


def comparable(record: dict[str, Any], caps: Capabilities) -> tuple[Any, ...]:
    headers = [tuple(h) for h in record["headers"]]
    return (record["key"], record["value"], headers if caps.header_order else sorted(headers))


def topic_name(*parts: str) -> str:
    return re.sub(r"[^a-zA-Z0-9._-]", "-", "harness-" + "-".join(parts))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("client", CLIENTS)
def test_produce_then_consume(mock_cluster: MockCluster, client: str, codec: str) -> None:
    caps = CAPABILITIES[client]
    assert codec in caps.codecs, f"{client} does not support {codec}"
    topic = topic_name(client, codec)
    mock_cluster.create_topic(topic)
    records = sample_records(caps)
    common = {"bootstrap": mock_cluster.bootstrap(client), "topic": topic}
    produced = run_ok(
        client,
        {
            **common,
            "op": "produce",
            "records": records,
            "compression": codec,
            "acks": "all",
            "idempotent": None,
            "timeout_ms": JOB_TIMEOUT_MS,
        },
    )["results"]

    assert len(produced) == len(records)
    for record, ack in zip(records, produced, strict=True):
        if record["partition"] is not None:
            assert ack["partition"] == record["partition"]
        assert 0 <= ack["partition"] < MOCK_PARTITIONS
        assert isinstance(ack["timestamp"], int)
        if not caps.ack_timestamps:
            assert ack["timestamp"] == -1
    assert len({(a["partition"], a["offset"]) for a in produced}) == len(records)

    consume = {
        **common,
        "op": "consume",
        "count": len(records),
        "from": "earliest",
        "timeout_ms": JOB_TIMEOUT_MS,
        "group": None,
        "isolation": "read_uncommitted",
    }
    for reader in dict.fromkeys([client, "confluent-kafka"]):
        reader_job = {**consume, "bootstrap": mock_cluster.bootstrap(reader)}
        result = run_ok(reader, reader_job)
        assert not result["timed_out"], f"{reader} read {len(result['records'])} records"
        by_position = {(r["partition"], r["offset"]): r for r in result["records"]}
        assert len(by_position) == len(records)
        for record, ack in zip(records, produced, strict=True):
            got = by_position[(ack["partition"], ack["offset"])]
            assert comparable(got, caps) == comparable(record, caps), reader
            if record.get("timestamp") is not None:
                assert (got["timestamp"], got["timestamp_type"]) == (CREATE_TIME, "CreateTime")


@pytest.mark.parametrize("client", CLIENTS)
def test_unknown_op_is_reported_not_crashed(client: str) -> None:
    result = run_client(client, {"op": "no_such_op", "bootstrap": "127.0.0.1:1"})
    assert result["ok"] is False
    assert result["error_name"] == "UNSUPPORTED_OP"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("client", ["confluent-kafka", "kcat", "java-4.3"])
def test_client_error_comes_back_in_the_result(client: str) -> None:
    job = {
        "op": "produce",
        "bootstrap": f"127.0.0.1:{closed_port()}",
        "topic": "nowhere",
        "records": [{"key": None, "value": b64(b"v"), "headers": [], "partition": 0}],
        "timeout_ms": 2_000,
        "config": {"max.block.ms": "2000"} if client.startswith("java") else {},
    }
    result = run_client(client, job)
    assert result["ok"] is False
    assert result["error"]


ADMIN_CLIENTS = [name for name in CLIENTS if "list_offsets" in CAPABILITIES[name].ops]


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_admin_metadata_and_offsets(mock_cluster: MockCluster, client: str) -> None:
    topic = topic_name(client, "admin")
    mock_cluster.create_topic(topic)
    bootstrap = mock_cluster.bootstrap(client)
    common = {"bootstrap": bootstrap, "timeout_ms": JOB_TIMEOUT_MS}
    record: dict[str, Any] = {"key": None, "value": b64(b"v"), "headers": [], "partition": 0}
    run_ok(client, {**common, "op": "produce", "topic": topic, "records": [record, record]})

    described = run_ok(client, {**common, "op": "metadata", "topics": [topic]})
    assert [b["port"] for b in described["brokers"]] == [int(bootstrap.split(":")[1])]
    (topic_info,) = described["topics"]
    assert topic_info["error"] is None
    assert sorted(p["partition"] for p in topic_info["partitions"]) == list(range(MOCK_PARTITIONS))

    for spec, expected in [("earliest", 0), ("latest", 2)]:
        job = {**common, "op": "list_offsets", "topic": topic, "partitions": [0], "spec": spec}
        (offset,) = run_ok(client, job)["offsets"]
        assert (offset["partition"], offset["offset"], offset["error"]) == (0, expected, None)


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_admin_errors_come_back_per_item(mock_cluster: MockCluster, client: str) -> None:
    """The mock cluster has no DeleteRecords: the refusal is the item's error, not a crash."""
    topic = topic_name(client, "admin-errors")
    mock_cluster.create_topic(topic)
    job = {
        "op": "delete_records",
        "bootstrap": mock_cluster.bootstrap(client),
        "topic": topic,
        "offsets": {"0": 0},
        "timeout_ms": JOB_TIMEOUT_MS,
    }
    (item,) = run_ok(client, job)["partitions"]
    assert item["partition"] == 0
    assert item["error"]  # error_name too where the client names it (kafkajs does not here)
    assert item["low_watermark"] == -1


# --- job servers (runner.py, job_server.py): one long-lived process per Java/kafkajs client ---

SERVED_CLIENTS = ["java-4.3", "java-3.9", "kafkajs"]


@pytest.fixture
def servers_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the servers: on even if MINIBROKER_CLIENT_SERVERS=0 is set."""
    monkeypatch.setenv("MINIBROKER_CLIENT_SERVERS", "1")


def refused_job(client: str, port: int, timeout_ms: int) -> dict[str, Any]:
    """A metadata job against a port nobody listens on: it fails after `timeout_ms` (kafkajs:
    after one retry), the client logging the refused connections with that port."""
    config: dict[str, Any] = {"retry": {"retries": 1}} if client == "kafkajs" else {}
    return {
        "op": "metadata",
        "bootstrap": f"127.0.0.1:{port}",
        "topics": None,
        "timeout_ms": timeout_ms,
        "config": config,
    }


def hanging_job(client: str) -> dict[str, Any]:
    """A consume job that waits for a broker that never comes, for 10 minutes."""
    return {
        "op": "consume",
        "bootstrap": f"127.0.0.1:{closed_port()}",
        "topic": "nowhere",
        "count": 1,
        "group": None,
        "timeout_ms": 600_000,
        "config": {"retry": {"retries": 1000}} if client == "kafkajs" else {},
    }


@pytest.mark.usefixtures("servers_on")
@pytest.mark.parametrize("client", SERVED_CLIENTS)
def test_a_served_job_gives_what_a_process_of_its_own_gives(
    mock_cluster: MockCluster, client: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = topic_name(client, "served")
    mock_cluster.create_topic(topic)
    common: dict[str, Any] = {
        "bootstrap": mock_cluster.bootstrap(client),
        "timeout_ms": JOB_TIMEOUT_MS,
    }
    record: dict[str, Any] = {"key": None, "value": b64(b"v"), "headers": [], "partition": 0}
    run_ok(client, {**common, "op": "produce", "topic": topic, "records": [record] * 3})
    jobs: list[dict[str, Any]] = [
        {**common, "op": "metadata", "topics": [topic]},
        {**common, "op": "list_offsets", "topic": topic, "partitions": [0], "spec": "latest"},
        {**common, "op": "consume", "topic": topic, "count": 3, "group": None},
        {"op": "no_such_op", "bootstrap": "127.0.0.1:1"},
    ]
    server = job_server(client)
    served = [run_client(client, job) for job in jobs]
    assert server.submitted >= len(jobs) and server.alive

    monkeypatch.setenv("MINIBROKER_CLIENT_SERVERS", "0")
    submitted = server.submitted
    alone = [run_client(client, job) for job in jobs]
    assert server.submitted == submitted  # none of these went to the server
    assert served == alone
    assert len(served[2]["records"]) == 3


@pytest.mark.usefixtures("servers_on")
@pytest.mark.parametrize("client", SERVED_CLIENTS)
def test_a_hanging_job_times_out_and_the_server_serves_the_next(client: str) -> None:
    server = job_server(client)
    job = hanging_job(client)
    started = time.monotonic()
    with pytest.raises(ClientRunError, match="no result within 3 s") as hung:
        run_client(client, job, timeout_s=3)
    assert 3 <= time.monotonic() - started < 15
    assert job["bootstrap"] in str(hung.value)  # the job's log so far: its refused connections
    result = run_client(client, {"op": "no_such_op", "bootstrap": "127.0.0.1:1"})
    assert result["error_name"] == "UNSUPPORTED_OP"
    assert job_server(client) is server and server.alive


@pytest.mark.usefixtures("servers_on")
@pytest.mark.parametrize("client", SERVED_CLIENTS)
def test_a_crashed_server_fails_its_jobs_and_is_restarted(client: str) -> None:
    crashed = job_server(client)
    with ThreadPoolExecutor(max_workers=1) as pool:
        in_flight = pool.submit(run_client, client, hanging_job(client), 120)
        deadline = time.monotonic() + 30
        while crashed.in_flight == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        crashed.process.send_signal(signal.SIGKILL)
        with pytest.raises(ClientRunError, match="job server exited with code -9"):
            in_flight.result(timeout=30)
    assert not crashed.alive
    result = run_client(client, {"op": "no_such_op", "bootstrap": "127.0.0.1:1"})
    assert result["error_name"] == "UNSUPPORTED_OP"
    restarted = job_server(client)
    assert restarted is not crashed and restarted.process.pid != crashed.process.pid


@pytest.mark.usefixtures("servers_on")
@pytest.mark.parametrize("client", SERVED_CLIENTS)
def test_jobs_served_at_once_each_get_their_own_stderr(client: str) -> None:
    ports = [closed_port() for _ in range(3)]
    barrier = threading.Barrier(len(ports))

    def run(port: int) -> dict[str, Any]:
        barrier.wait()
        return run_client(client, refused_job(client, port, 3_000))

    with ThreadPoolExecutor(max_workers=len(ports)) as pool:
        results = list(pool.map(run, ports))
    for port, result in zip(ports, results, strict=True):
        assert result["ok"] is False
        assert f"127.0.0.1:{port}" in result["stderr"]
        for other in set(ports) - {port}:
            assert f":{other}" not in result["stderr"]
