"""`minibroker serve` as a user runs it: ready line, real port, graceful SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from tests.wire import WireClient


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "minibroker", "serve", "--listen", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "ready" in line, process.stderr.read() if process.stderr else line
    return process, line.split()[-1]


def test_serve_prints_ready_and_stops_gracefully(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, address = _start("--data-dir", str(data_dir), "--override", "num.partitions=3")
    try:
        with WireClient(address) as client:
            response = client.call(ApiKey.Metadata, 4, topics=[{"name": "cli"}])
        assert response.topics[0].error_code == ErrorCode.NO_ERROR
        assert len(response.topics[0].partitions) == 3
        assert (response.brokers[0].host, response.brokers[0].port) == (
            address.split(":")[0],
            int(address.split(":")[1]),
        )
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
    assert (data_dir / "cli-2").is_dir()
    assert (data_dir / ".kafka_cleanshutdown").exists()


def test_advertised_address_and_environment(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "MINIBROKER_AUTO_CREATE_TOPICS_ENABLE": "false"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minibroker",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--advertised",
            "localhost:19092",
            "--in-memory",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        address = process.stdout.readline().split()[-1]
        with WireClient(address) as client:
            response = client.call(ApiKey.Metadata, 4, topics=[{"name": "nope"}])
        assert (response.brokers[0].host, response.brokers[0].port) == ("localhost", 19092)
        assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0


def test_serve_defers_kafka_pythons_clients_and_the_package_stays_whole() -> None:
    script = """
import sys
from minibroker.cli import defer_package_init
defer_package_init("kafka")
from minibroker.protocol import codec
assert "kafka.admin" not in sys.modules and "kafka.consumer" not in sys.modules
assert codec.response_class(51).__name__ == "AlterUserScramCredentialsResponse"
import kafka
from kafka import TopicPartition
assert kafka.KafkaConsumer.__name__ == "KafkaConsumer" and kafka.__version__
assert TopicPartition("t", 0).partition == 0 and "kafka.admin" in sys.modules
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
