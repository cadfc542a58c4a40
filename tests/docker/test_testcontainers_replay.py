"""The start sequences of Testcontainers' Java, Go and .NET Kafka modules, replayed with the
docker CLI against the image (their runtimes' packages cannot be installed here).

Each case does what the module's source does (read in testcontainers-java's
`org.testcontainers.kafka.KafkaContainer`/`ConfluentKafkaContainer` and `KafkaHelper`,
testcontainers-go's `modules/kafka/kafka.go`, testcontainers-dotnet's `KafkaBuilder` and
`ConfluentVendor`): the same environment, entrypoint and command (a loop waiting for the start
script), the port published on 127.0.0.1, then the start script written with the mapped port,
the container's hostname or address, copied in with `docker cp` at the module's path, and the
module's wait: its regular expression searched in the container's log lines. confluent-kafka then
produces through the mapped port and reads the records back in a consumer group.
"""

from __future__ import annotations

import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.docker import engine
from tests.docker.test_testcontainers import assert_produce_and_group_consume

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

WAIT_TIMEOUT_S = 60.0
JAVA_STARTER = "/tmp/testcontainers_start.sh"
GO_STARTER = "/usr/sbin/testcontainers_start.sh"
DOTNET_STARTER = "/testcontainers.sh"


@dataclass(frozen=True)
class Started:
    """What a module knows once the container runs, for its start script."""

    host: str
    mapped_port: int
    hostname: str  # the container's (Docker's Config.Hostname)
    address: str  # the container's on the bridge


@dataclass(frozen=True)
class Module:
    port: int  # the exposed port clients use
    env: dict[str, str]
    command: list[str]
    script_path: str
    script: Callable[[Started], str]
    wait_for: str
    entrypoint: str | None = None
    extra_ports: list[int] = field(default_factory=list)


KRAFT_PROTOCOL_MAP = "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
JAVA_ENV = {  # KafkaHelper.envVars()
    "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw",
    "KAFKA_LISTENERS": "PLAINTEXT://:9092,BROKER://:9093,CONTROLLER://:9094",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": KRAFT_PROTOCOL_MAP,
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_NODE_ID": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
}
JAVA_COMMAND = ["sh", "-c", f"while [ ! -f {JAVA_STARTER} ]; do sleep 0.1; done; {JAVA_STARTER}"]
JAVA_WAIT = ".*Transitioning from RECOVERY to RUNNING.*"


def java_script(start: str) -> Callable[[Started], str]:
    def script(started: Started) -> str:
        advertised = (
            f"PLAINTEXT://{started.host}:{started.mapped_port},BROKER://{started.hostname}:9093"
        )
        return f"#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS={advertised}\n{start} \n"

    return script


GO_ENV = {
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
    "KAFKA_REST_BOOTSTRAP_SERVERS": (
        "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094"
    ),
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": KRAFT_PROTOCOL_MAP,
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_BROKER_ID": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
}


def go_script(started: Started) -> str:
    advertised = (
        f"PLAINTEXT://{started.host}:{started.mapped_port},BROKER://{started.hostname}:9092"
        "${EXTRA_ADVERTISED_LISTENERS:+,${EXTRA_ADVERTISED_LISTENERS}}"
    )
    return (
        "#!/bin/bash\n"
        "source /etc/confluent/docker/bash-config\n"
        f'export KAFKA_ADVERTISED_LISTENERS="{advertised}"\n'
        "echo Starting Kafka KRaft mode\n"
        "sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure\n"
        'echo \'kafka-storage format --ignore-formatted -t "$(kafka-storage random-uuid)"'
        " -c /etc/kafka/kafka.properties' >> /etc/confluent/docker/configure\n"
        "echo '' > /etc/confluent/docker/ensure\n"
        "/etc/confluent/docker/configure\n"
        "/etc/confluent/docker/launch"
    )


DOTNET_ENV = {  # KafkaBuilder.Init(), Confluent vendor, ZooKeeper (its default)
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,BROKER://0.0.0.0:9093",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_BROKER_ID": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181",
}


def dotnet_script(started: Started) -> str:
    advertised = (
        f"PLAINTEXT://{started.host}:{started.mapped_port},BROKER://{started.address}:9093,"
    )
    return (
        "#!/bin/bash\n\n"
        "echo 'clientPort=2181' > zookeeper.properties\n"
        "echo 'dataDir=/var/lib/zookeeper/data' >> zookeeper.properties\n"
        "zookeeper-server-start zookeeper.properties &\n\n"
        f"export KAFKA_ADVERTISED_LISTENERS={advertised}\n"
        "echo '' > /etc/confluent/docker/ensure\n"
        "exec /etc/confluent/docker/run\n"
    )


MODULES = {
    "java-KafkaContainer": Module(
        9092,
        JAVA_ENV,
        JAVA_COMMAND,
        JAVA_STARTER,
        java_script("/etc/kafka/docker/run"),
        JAVA_WAIT,
    ),
    "java-ConfluentKafkaContainer": Module(
        9092,
        JAVA_ENV,
        JAVA_COMMAND,
        JAVA_STARTER,
        java_script("/etc/confluent/docker/run"),
        JAVA_WAIT,
    ),
    "go-kafka.Run": Module(
        9093,
        GO_ENV,
        ["-c", f"while [ ! -f {GO_STARTER} ]; do sleep 0.1; done; bash {GO_STARTER}"],
        GO_STARTER,
        go_script,
        ".*Transitioning from RECOVERY to RUNNING.*",
        entrypoint="sh",
    ),
    "dotnet-KafkaBuilder": Module(
        9092,
        DOTNET_ENV,
        [f"while [ ! -f {DOTNET_STARTER} ]; do sleep 0.1; done; {DOTNET_STARTER}"],
        DOTNET_STARTER,
        dotnet_script,
        r"\[KafkaServer id=\d+\] started",
        entrypoint="/bin/sh -c",
        extra_ports=[9093, 2181],
    ),
}


@pytest.fixture
def container_name() -> Iterator[str]:
    name = f"minibroker-tc-replay-{uuid.uuid4().hex[:12]}"
    yield name
    engine.docker("rm", "--force", "--volumes", name, check=False)


def start(module: Module, image: str, name: str) -> Started:
    options = ["--name", name, "-p", f"127.0.0.1::{module.port}"]
    options += [arg for port in module.extra_ports for arg in ("-p", f"127.0.0.1::{port}")]
    options += [arg for key, value in module.env.items() for arg in ("-e", f"{key}={value}")]
    command = list(module.command)
    if module.entrypoint is not None:
        entrypoint, *leading = module.entrypoint.split()
        options += ["--entrypoint", entrypoint]
        command = [*leading, *command]
    engine.docker("create", *options, image, *command)
    engine.docker("start", name)
    mapped = engine.docker("port", name, str(module.port)).splitlines()[0].rsplit(":", 1)[1]
    hostname = engine.docker("inspect", "--format", "{{.Config.Hostname}}", name)
    address = engine.docker("inspect", "--format", "{{.NetworkSettings.IPAddress}}", name)
    return Started("127.0.0.1", int(mapped), hostname, address)


def copy_script(name: str, path: str, content: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / Path(path).name
        script.write_text(content)
        script.chmod(0o777)
        engine.docker("cp", str(script), f"{name}:{path}")


def wait_for_log(name: str, pattern: str) -> str:
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while time.monotonic() < deadline:
        logs = engine.logs(name)
        if any(re.search(pattern, line) for line in logs.splitlines()):
            return logs
        time.sleep(0.2)
    raise AssertionError(f"no line matching {pattern!r} in {WAIT_TIMEOUT_S}s:\n{engine.logs(name)}")


@pytest.mark.parametrize("module_name", list(MODULES))
def test_module_start_sequence(image: str, container_name: str, module_name: str) -> None:
    module = MODULES[module_name]
    started = start(module, image, container_name)
    copy_script(container_name, module.script_path, module.script(started))
    wait_for_log(container_name, module.wait_for)
    bootstrap = f"{started.host}:{started.mapped_port}"
    assert_produce_and_group_consume(bootstrap, module_name.replace(".", "-"))
