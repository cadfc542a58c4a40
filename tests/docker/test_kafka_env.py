"""The image configured the Kafka images' way, on a real Docker engine.

A compose file written for apache/kafka (tests/docker/compose/apache-kafka-style.yml: KRaft
combined mode, KAFKA_* names, CLUSTER_ID) and one written for confluentinc/cp-kafka
(cp-kafka-style.yml: Confluent's cp-all-in-one broker, an internal and a host listener) run
with the image name as their only change, and a Bitnami-style `docker run -e KAFKA_CFG_...`
too; confluent-kafka on the host sees the
advertised listener, the cluster id and the partition count of an auto-created topic those
variables ask for, produces and consumes, and finds no one serving the controller listener.
The container's log says the fast path runs (uvloop, native produce path) and names the
variables ignored.
"""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.docker import engine
from tests.docker.conftest import Containers, free_port, wait_healthy
from tests.docker.test_image import (
    CLIENT_TIMEOUT_S,
    advertised_brokers,
    consume,
    produce,
    registry_subjects,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

APACHE_KAFKA_COMPOSE_FILE = Path(__file__).parent / "compose" / "apache-kafka-style.yml"
CP_KAFKA_COMPOSE_FILE = Path(__file__).parent / "compose" / "cp-kafka-style.yml"
APACHE_CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"
CP_KAFKA_CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
BITNAMI_CLUSTER_ID = "abcdefghijklmnopqrstuv"
FAST_PATH_LOG = "event loop: uvloop"
NATIVE_PRODUCE_LOG = "produce path: native"


def web_ports_override(directory: Path, console_port: int, registry_port: int) -> Path:
    """A compose override moving the image's web console and registry from 0.0.0.0:8080/8081
    (on the shared host network here) to free loopback ports; the broker is left as written."""
    override = directory / "web-ports.yml"
    override.write_text(
        "services:\n"
        "  broker:\n"
        f"    command: [--console, '127.0.0.1:{console_port}',"
        f" --schema-registry, '127.0.0.1:{registry_port}']\n"
    )
    return override


def auto_created_partitions(bootstrap: str, topic: str) -> int:
    """Produce one record to a topic that does not exist yet; its partition count."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, b"first")
    assert producer.flush(CLIENT_TIMEOUT_S) == 0
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
        topic, timeout=CLIENT_TIMEOUT_S
    )
    return len(metadata.topics[topic].partitions)


def cluster_id(bootstrap: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the answer comes
    return str(admin.describe_cluster().result(timeout=CLIENT_TIMEOUT_S).cluster_id)


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def assert_serves_kafka_clients(bootstrap: str, advertised_port: int) -> None:
    assert advertised_brokers(bootstrap) == {("localhost", advertised_port)}
    values = [b"kafka-env-%d" % i for i in range(5)]
    produce(bootstrap, "kafka-env-e2e", values)
    assert consume(bootstrap, "kafka-env-e2e", len(values)) == list(enumerate(values))


def test_compose_file_written_for_apache_kafka(image: str, tmp_path: Path) -> None:
    port, controller_port = free_port(), free_port()
    console_port, registry_port = free_port(), free_port()
    project = f"minibrokerkafkaenv{uuid.uuid4().hex[:8]}"
    env = {"IMAGE": image, "BROKER_PORT": str(port), "CONTROLLER_PORT": str(controller_port)}
    override = web_ports_override(tmp_path, console_port, registry_port)
    compose = [
        engine.COMPOSE,
        "-p",
        project,
        "-f",
        str(APACHE_KAFKA_COMPOSE_FILE),
        "-f",
        str(override),
    ]
    try:
        started = time.monotonic()
        engine.run([*compose, "up", "--detach"], env=env, timeout=300)
        container = engine.run([*compose, "ps", "-q"], env=env).stdout.decode().strip()
        wait_healthy(container, port, started)

        bootstrap = f"localhost:{port}"
        assert_serves_kafka_clients(bootstrap, port)
        assert auto_created_partitions(bootstrap, "auto-created") == 3  # KAFKA_NUM_PARTITIONS
        assert cluster_id(bootstrap) == APACHE_CLUSTER_ID
        assert refuses_connections(controller_port)
        assert registry_subjects(registry_port) == []

        logs = engine.logs(container)
        assert FAST_PATH_LOG in logs and NATIVE_PRODUCE_LOG in logs, logs
        assert (
            "ignored environment variables (no minibroker setting): "
            "KAFKA_CONTROLLER_QUORUM_VOTERS, KAFKA_HEAP_OPTS, "
            "KAFKA_INTER_BROKER_LISTENER_NAME, KAFKA_PROCESS_ROLES"
        ) in logs
        data_dirs = engine.docker("exec", container, "ls", "/tmp/kraft-combined-logs")
        assert "auto-created-0" in data_dirs.split()  # KAFKA_LOG_DIRS
    finally:
        engine.run([*compose, "down", "--volumes", "--timeout", "10"], env=env, check=False)


def test_compose_file_written_for_cp_kafka(image: str, tmp_path: Path) -> None:
    port, internal_port, controller_port = free_port(), free_port(), free_port()
    override = web_ports_override(tmp_path, free_port(), free_port())
    project = f"minibrokercpkafka{uuid.uuid4().hex[:8]}"
    env = {
        "IMAGE": image,
        "BROKER_PORT": str(port),
        "INTERNAL_PORT": str(internal_port),
        "CONTROLLER_PORT": str(controller_port),
    }
    compose = [engine.COMPOSE, "-p", project, "-f", str(CP_KAFKA_COMPOSE_FILE), "-f", str(override)]
    try:
        started = time.monotonic()
        engine.run([*compose, "up", "--detach"], env=env, timeout=300)
        container = engine.run([*compose, "ps", "-q"], env=env).stdout.decode().strip()
        wait_healthy(container, port, started)

        assert_serves_kafka_clients(f"localhost:{port}", port)
        assert advertised_brokers(f"localhost:{internal_port}") == {("localhost", internal_port)}
        assert cluster_id(f"localhost:{port}") == CP_KAFKA_CLUSTER_ID
        assert refuses_connections(controller_port)
    finally:
        engine.run([*compose, "down", "--volumes", "--timeout", "10"], env=env, check=False)


def test_bitnami_style_environment(containers: Containers) -> None:
    port, controller_port, console_port = free_port(), free_port(), free_port()
    name = f"minibroker-e2e-{uuid.uuid4().hex[:12]}"
    containers.names.append(name)
    environment = {
        "KAFKA_ENABLE_KRAFT": "yes",
        "ALLOW_PLAINTEXT_LISTENER": "yes",
        "KAFKA_KRAFT_CLUSTER_ID": BITNAMI_CLUSTER_ID,
        "KAFKA_CFG_NODE_ID": "0",
        "KAFKA_CFG_PROCESS_ROLES": "controller,broker",
        "KAFKA_CFG_LISTENERS": (
            f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"
        ),
        "KAFKA_CFG_ADVERTISED_LISTENERS": f"PLAINTEXT://localhost:{port}",
        "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CFG_CONTROLLER_QUORUM_VOTERS": f"0@127.0.0.1:{controller_port}",
        "KAFKA_CFG_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE": "true",
        "KAFKA_CFG_NUM_PARTITIONS": "2",
        "KAFKA_NUM_PARTITIONS": "5",  # Bitnami's own name wins over apache/kafka's
    }
    options = [arg for key, value in environment.items() for arg in ("--env", f"{key}={value}")]
    started = time.monotonic()
    engine.docker(
        "run",
        "--detach",
        "--name",
        name,
        "--network",
        "host",
        *options,
        containers.image,
        "--console",
        f"127.0.0.1:{console_port}",
    )
    wait_healthy(name, port, started)

    bootstrap = f"localhost:{port}"
    assert_serves_kafka_clients(bootstrap, port)
    assert auto_created_partitions(bootstrap, "auto-created") == 2
    assert cluster_id(bootstrap) == BITNAMI_CLUSTER_ID
    assert refuses_connections(controller_port)
    logs = engine.logs(name)
    assert FAST_PATH_LOG in logs, logs
    assert (
        "ignored environment variables (no minibroker setting): "
        "KAFKA_CFG_CONTROLLER_QUORUM_VOTERS, KAFKA_CFG_PROCESS_ROLES, KAFKA_ENABLE_KRAFT"
    ) in logs
