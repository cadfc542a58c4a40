"""`minibroker serve --kafka-ready-log` (what the image's Kafka start scripts run): once the
broker answers, Kafka's own start-up lines, which Testcontainers' Kafka modules wait for, in
the mode the Kafka images' variables set; the real CLI in a subprocess, asked ApiVersions
after the lines appear."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from minibroker.healthcheck import check

SERVE = [sys.executable, "-m", "minibroker", "serve", "--in-memory", "--listen", "127.0.0.1:0"]
TIMEOUT_S = 60
LOG4J_PREFIX = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] INFO "


@pytest.fixture
def serve_with(request: pytest.FixtureRequest) -> Iterator[tuple[list[str], int]]:
    """`serve --kafka-ready-log` with the variables given as the test's parameter, stopped
    after the given number of lines that follow "ready" are read: those lines and the
    broker's port."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("KAFKA_")}
    variables, line_count = request.param
    env.update(variables)
    broker = subprocess.Popen(
        [*SERVE, "--kafka-ready-log", "--override", "node.id=7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert broker.stdout is not None
        ready = broker.stdout.readline()
        port = int(ready.rsplit(":", 1)[1])
        yield [broker.stdout.readline() for _ in range(line_count)], port
    finally:
        broker.terminate()
        broker.wait(TIMEOUT_S)


# The variables and how many lines follow "ready"; an empty variable is unset.
KRAFT = ({"KAFKA_PROCESS_ROLES": "broker,controller", "KAFKA_ZOOKEEPER_CONNECT": ""}, 2)
NEITHER: tuple[dict[str, str], int] = ({}, 2)
ZOOKEEPER = ({"KAFKA_ZOOKEEPER_CONNECT": "localhost:2181"}, 1)


@pytest.mark.parametrize("serve_with", [KRAFT, NEITHER], indirect=True)
def test_kraft_lines(serve_with: tuple[list[str], int]) -> None:
    lines, port = serve_with
    unfenced, started = lines
    assert re.fullmatch(
        LOG4J_PREFIX + r"\[BrokerLifecycleManager id=7\] The broker has been unfenced\. "
        r"Transitioning from RECOVERY to RUNNING\. \(kafka\.server\.BrokerLifecycleManager\)\n",
        unfenced,
    )
    assert re.fullmatch(
        LOG4J_PREFIX + r"\[KafkaRaftServer nodeId=7\] Kafka Server started "
        r"\(kafka\.server\.KafkaRaftServer\)\n",
        started,
    )
    check("127.0.0.1", port, timeout=5)  # the lines come once the broker answers


@pytest.mark.parametrize("serve_with", [ZOOKEEPER], indirect=True)
def test_zookeeper_line(serve_with: tuple[list[str], int]) -> None:
    (started,), port = serve_with
    assert re.fullmatch(
        LOG4J_PREFIX + r"\[KafkaServer id=7\] started \(kafka\.server\.KafkaServer\)\n", started
    )
    check("127.0.0.1", port, timeout=5)
