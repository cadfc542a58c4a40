"""minibroker.testcontainers.KafkaContainer: testcontainers-python's KafkaContainer API over an
in-process broker. The drift test compares it with the real class (testcontainers, from the
test extra), so a method added upstream shows up here; the example file runs as a user runs
it."""

from __future__ import annotations

import inspect
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer

from minibroker.testcontainers import (
    ContainerStartException,
    KafkaContainer,
    broker_settings,
    setting_name,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "testcontainers_example.py"


def _real_kafka_container(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An instance of testcontainers' KafkaContainer, without a Docker client."""
    kafka = pytest.importorskip("testcontainers.community.kafka")
    monkeypatch.setattr("testcontainers.core.container.DockerClient", lambda **_: None)
    return kafka.KafkaContainer()


def _public_names(thing: object) -> set[str]:
    return {name for name in dir(thing) if not name.startswith("_")}


def test_every_public_name_of_testcontainers_kafka_container_exists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = _real_kafka_container(monkeypatch)
    ours = KafkaContainer()
    assert sorted(_public_names(real) - _public_names(ours)) == []
    for name in ("__enter__", "__exit__"):
        assert hasattr(ours, name)


def _parameters(method: Any) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(method).parameters)


def test_every_method_takes_the_real_methods_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _real_kafka_container(monkeypatch)
    ours = KafkaContainer()
    for name in sorted(_public_names(real)):
        real_method = getattr(type(real), name, None)
        if not callable(real_method):
            continue
        theirs, mine = _parameters(real_method), _parameters(getattr(type(ours), name))
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in mine.values()):
            continue
        missing = [p for p in theirs if p not in mine and theirs[p].kind.name != "VAR_KEYWORD"]
        assert missing == [], name
    assert (
        list(_parameters(KafkaContainer.__init__))[:6] == list(_parameters(type(real).__init__))[:6]
    )


def test_the_defaults_match_testcontainers(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _real_kafka_container(monkeypatch)
    ours = KafkaContainer()
    for name in ("port", "listener_name", "security_protocol", "cluster_id", "listeners"):
        assert getattr(ours, name) == getattr(real, name), name
    assert ours.env == real.env
    assert ours.image == real.image


@pytest.mark.parametrize(
    ("variable", "setting"),
    [
        ("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable"),
        ("KAFKA_NUM_PARTITIONS", "num.partitions"),
        ("KAFKA_A__B", "a_b"),
        ("KAFKA_A___B_C", "a-b.c"),
        ("CLUSTER_ID", "cluster.id"),
        ("KAFKA", None),
        ("JAVA_HOME", None),
    ],
)
def test_setting_names_follow_the_kafka_images_convention(
    variable: str, setting: str | None
) -> None:
    assert setting_name(variable) == setting


def test_only_settings_that_apply_in_process_are_passed() -> None:
    env = {
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:9093",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
        "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_LOG_RETENTION_MS": 60000,
        "PATH": "/usr/bin",
    }
    assert broker_settings(env) == {"log.retention.ms": "60000"}


def test_a_round_trip_through_the_bootstrap_server() -> None:
    with KafkaContainer() as kafka:
        assert kafka.status == "running"
        bootstrap = kafka.get_bootstrap_server()
        assert bootstrap == f"127.0.0.1:{kafka.get_exposed_port(9093)}"
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send("events", b"hello").get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(
            "events", bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        )
        records = []
        while not records:
            for batch in consumer.poll(timeout_ms=1000).values():
                records.extend(batch)
        consumer.close()
        assert [record.value for record in records] == [b"hello"]
    assert kafka.status == "exited"


def test_with_env_and_with_cluster_id_configure_the_broker() -> None:
    container = (
        KafkaContainer()
        .with_env("KAFKA_NUM_PARTITIONS", "4")
        .with_env("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
        .with_cluster_id("abcdefghijklmnopqrstuv")
    )
    with container as kafka:
        node = kafka.broker.node(kafka.broker.node_ids[0])
        assert node.cluster_id == "abcdefghijklmnopqrstuv"
        assert node.config.raw("num.partitions") == "4"
        assert node.config.raw("auto.create.topics.enable") == "false"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_with_bind_ports_on_the_kafka_port_picks_the_brokers_port() -> None:
    port = _free_port()
    with KafkaContainer().with_bind_ports(9093, port) as kafka:
        assert kafka.get_bootstrap_server() == f"127.0.0.1:{port}"


def test_with_methods_return_the_container() -> None:
    container = KafkaContainer("apache/kafka:3.9.0", port=9092, name="ignored", network=None)
    chained = (
        container.with_kraft()
        .with_envs(KAFKA_NUM_PARTITIONS="2")
        .with_exposed_ports(9999)
        .with_network_aliases("kafka")
        .with_name("kafka")
        .with_command("ignored")
        .with_volume_mapping("/tmp", "/data")
        .with_tmpfs_mount("/var/lib/kafka")
        .with_kwargs(platform="linux/amd64")
        .maybe_emulate_amd64()
        .waiting_for(object())
    )
    assert chained is container
    assert container.kraft_enabled
    assert container.broker_config()["cluster.id"] == container.cluster_id


def test_with_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / "kafka.env"
    env_file.write_text("# comment\nKAFKA_NUM_PARTITIONS=5\nexport KAFKA_LOG_RETENTION_MS='9'\n")
    container = KafkaContainer().with_env_file(env_file)
    assert container.broker_config()["num.partitions"] == "5"
    assert container.broker_config()["log.retention.ms"] == "9"


def test_before_start_and_docker_only_methods_say_why() -> None:
    container = KafkaContainer()
    assert container.status == "not_started"
    with pytest.raises(ContainerStartException):
        container.get_bootstrap_server()
    with pytest.raises(NotImplementedError, match="Docker"):
        container.exec("kafka-topics --list")
    with pytest.raises(NotImplementedError, match="Docker"):
        container.get_wrapped_container()
    with pytest.raises(ValueError, match="port_to_expose"):
        KafkaContainer(port_to_expose=9093)
    with pytest.raises(ValueError, match="PLAINTEXT"):
        KafkaContainer(security_protocol="SASL_PLAINTEXT")
    container.stop()  # stopping a container that never started is fine


def test_start_twice_and_stop_twice() -> None:
    container = KafkaContainer()
    assert container.start() is container
    address = container.get_bootstrap_server()
    assert container.start().get_bootstrap_server() == address
    container.stop()
    container.stop()
    with pytest.raises(ValueError, match="not served"):
        container.start().get_exposed_port(2181)
    container.stop()


@pytest.mark.clients
def test_example_file_passes(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", EXAMPLE.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
