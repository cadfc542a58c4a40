"""`minibroker healthcheck` (the image's HEALTHCHECK) against a live, a missing and a bad broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from minibroker.config import BrokerConfig
from minibroker.healthcheck import HealthCheckFailed, address_to_check, check
from minibroker.protocol.api_keys import ApiKey
from minibroker.testing.threaded import ThreadedBroker


def _healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minibroker", "healthcheck", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, **(env or {})},
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def memory_broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker() as broker:
        yield broker


def test_healthy_broker_answers_api_versions(memory_broker: ThreadedBroker) -> None:
    host, _, port = memory_broker.bootstrap_servers.partition(":")
    result = check(host, int(port), timeout=5)
    assert result.api_keys[ApiKey.ApiVersions][0] == 0
    assert ApiKey.Produce in result.api_keys


def test_cli_reads_the_listener_from_the_environment(memory_broker: ThreadedBroker) -> None:
    listeners = f"PLAINTEXT://{memory_broker.bootstrap_servers},OTHER://127.0.0.1:1"
    done = _healthcheck(env={"MINIBROKER_LISTENERS": listeners})
    assert done.returncode == 0, done.stderr


def test_cli_with_explicit_bootstrap(memory_broker: ThreadedBroker) -> None:
    done = _healthcheck("--bootstrap", memory_broker.bootstrap_servers)
    assert done.returncode == 0, done.stderr


def test_nothing_listening_is_unhealthy() -> None:
    done = _healthcheck("--bootstrap", f"127.0.0.1:{_free_port()}", "--timeout", "2")
    assert done.returncode == 1
    assert "unhealthy" in done.stderr


def test_a_server_that_is_not_kafka_is_unhealthy() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def answer_http() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        thread = threading.Thread(target=answer_http)
        thread.start()
        with pytest.raises(HealthCheckFailed):
            check("127.0.0.1", port, timeout=5)
        thread.join()


def test_wildcard_listener_is_checked_on_loopback() -> None:
    config = BrokerConfig({"listeners": "PLAINTEXT://0.0.0.0:9092,PLAINTEXT_HOST://[::]:29092"})
    assert address_to_check(config) == ("127.0.0.1", 9092)
    config = BrokerConfig({"listeners": "PLAINTEXT://[::]:19092"})
    assert address_to_check(config) == ("::1", 19092)
