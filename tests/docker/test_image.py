"""docker/Dockerfile and docker/docker-compose*.yml on a real Docker engine.

The image is built on a local Debian stand-in for the official Python base, run with host
networking on free 127.0.0.1 ports, used by confluent-kafka (librdkafka), stopped with
`docker stop` and restarted on the same volume; the compose files are validated and the
host-network variant is brought up with both listeners in use; the web console, on by
default, answers its JSON API from the running container, and the compose file's Schema
Registry answers too. Start-up figures are printed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.docker import engine
from tests.docker.conftest import Containers, Startup, free_port, wait_healthy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DOCKER_DIR = engine.REPO / "docker"
COMPOSE_FILE = DOCKER_DIR / "docker-compose.yml"
HOST_NETWORK_COMPOSE_FILE = DOCKER_DIR / "docker-compose.host-network.yml"
CLIENT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10  # Docker's default: SIGTERM, then SIGKILL after this many seconds
OFFSET_BEGINNING = -2


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str]) -> Iterator[list[str]]:
    """Lines printed after the test, even when output is captured."""
    lines: list[str] = []
    yield lines
    with capsys.disabled():
        for line in lines:
            print(f"\n[docker] {line}")


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value, key=value, partition=0)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0


def consume(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "docker-e2e", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    try:
        while len(records) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            offset, value = message.offset(), message.value()
            assert offset is not None and value is not None
            records.append((offset, value))
    finally:
        consumer.close()
    return records


def advertised_brokers(bootstrap: str) -> set[tuple[str, int]]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=CLIENT_TIMEOUT_S)
    return {(str(broker.host), broker.port) for broker in metadata.brokers.values()}


def console_api(port: int, path: str) -> Any:
    """A GET of the web console's JSON API on 127.0.0.1:`port` (it must answer 200)."""
    url = f"http://127.0.0.1:{port}{path}"
    with urllib.request.urlopen(url, timeout=CLIENT_TIMEOUT_S) as answer:
        assert answer.status == 200
        return json.loads(answer.read())


def registry_subjects(port: int) -> Any:
    """The Schema Registry's `GET /subjects` on 127.0.0.1:`port`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/subjects", timeout=10) as answer:
        assert answer.status == 200
        return json.loads(answer.read())


def topic_end_offsets(console_port: int, topic: str) -> int:
    topics = console_api(console_port, "/api/topics")["topics"]
    return next(int(entry["end_offsets"]) for entry in topics if entry["name"] == topic)


def startup_line(what: str, startup: Startup) -> str:
    return (
        f"{what}: broker answering after {startup.answering:.2f}s, "
        f"Docker reports healthy after {startup.healthy:.2f}s "
        f"(container process start to answering: {startup.process_to_answering:.2f}s)"
    )


def test_image_metadata(image: str, report: list[str]) -> None:
    config = engine.container_config(image)
    assert config["User"] == "1000:1000"  # numeric, so runAsNonRoot can verify it
    defaults = ["--config", "/etc/minibroker/server.properties"]
    # `minibroker serve --config ...` with the options given, or a program given instead.
    assert config["Entrypoint"] == ["docker-entrypoint"]
    assert "/var/lib/minibroker" in config["Volumes"]
    healthcheck = ["CMD", "python", "-m", "minibroker.healthcheck", *defaults]
    assert config["Healthcheck"]["Test"] == healthcheck
    assert config["Healthcheck"]["Interval"] == 1_000_000_000  # ns: healthy within 2 s
    assert "9092/tcp" in config["ExposedPorts"]
    assert "8080/tcp" in config["ExposedPorts"]  # the web console and the Schema Registry,
    assert "8081/tcp" in config["ExposedPorts"]  # on by default:
    assert config["Cmd"] == ["--console", "0.0.0.0:8080", "--schema-registry", "0.0.0.0:8081"]
    # Defaults as MINIBROKER_* variables would win over a compose file's KAFKA_* names.
    assert not [item for item in config["Env"] if item.startswith("MINIBROKER_")]
    report.append(f"image {image}: {engine.image_size_bytes(image) / 1e6:.0f} MB")


def test_image_runs_the_native_produce_path_without_a_compiler(image: str) -> None:
    """The build stage compiled the accelerator; the image itself has no compiler."""
    probe = "from minibroker.records.accel import active_path; print(active_path())"
    run = ["run", "--rm", "--network", "none", "--entrypoint", "/opt/minibroker/bin/python"]
    assert engine.docker(*run, image, "-c", probe).strip() == "native"
    no_compiler = engine.docker(*run, image, "-c", "import shutil; print(shutil.which('cc'))")
    assert no_compiler.strip() == "None"


def test_entrypoint_runs_a_given_program_or_the_broker(image: str) -> None:
    """Options go to `minibroker serve --config ...`; a program (Testcontainers' `sh -c`
    wait loop) runs instead, with the tools Kafka images' start scripts use."""
    run = ["run", "--rm", image]  # on the default bridge, where `hostname -i` has an address
    assert "usage: minibroker serve" in engine.docker(*run, "--help")
    tools = ["bash", "sed", "awk", "grep", "cut", "nc", "kafka-storage", "zookeeper-server-start"]
    script = f"sleep 0.1; hostname -i; for tool in {' '.join(tools)}; do command -v $tool; done"
    address, *found = engine.docker(*run, "sh", "-c", script).splitlines()
    assert address.count(".") == 3, address
    assert [Path(path).name for path in found] == tools
    assert len(engine.docker(*run, "kafka-storage", "random-uuid")) == 22  # as Kafka's


PROTOBUF_SCHEMA = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Order { string id = 1; google.protobuf.Timestamp at = 2; }
"""


def test_image_parses_protobuf_schemas_without_grpcio(image: str) -> None:
    """The image leaves grpcio out (nothing imports it): the Schema Registry's Protobuf
    parsing, `python -m grpc_tools.protoc`, still reads a schema and its well-known import."""
    probe = (
        "import sys; from minibroker.registry.formats.protobuf import ProtobufFormat; "
        "schema = ProtobufFormat().parse(sys.stdin.read(), {}); "
        "print(schema.message_descriptor([0]).full_name)"
    )
    run = ["run", "--rm", "-i", "--network", "none", "--entrypoint", "python", image, "-c", probe]
    done = engine.run([engine.DOCKER, *run], input_bytes=PROTOBUF_SCHEMA.encode())
    assert done.stdout.decode().strip() == "Order"
    no_grpc = "import importlib.util as u; print(u.find_spec('grpc'))"
    assert engine.docker("run", "--rm", "--entrypoint", "python", image, "-c", no_grpc) == "None"


def test_produce_stop_and_restart_on_the_same_volume(
    containers: Containers, report: list[str]
) -> None:
    port, console_port = free_port(), free_port()
    bootstrap = f"127.0.0.1:{port}"
    volume = containers.new_volume()
    first, startup = containers.run(volume, port, console_port)
    report.append(startup_line("docker run", startup))
    assert advertised_brokers(bootstrap) == {("127.0.0.1", port)}

    values = [b"record-%d" % i for i in range(20)]
    produce(bootstrap, "docker-e2e", values)
    assert consume(bootstrap, "docker-e2e", len(values)) == list(enumerate(values))
    overview = console_api(console_port, "/api/overview")
    assert overview["data_dir"] == "/var/lib/minibroker"
    assert overview["topics"] == 1
    assert topic_end_offsets(console_port, "docker-e2e") == len(values)

    stop_started = time.monotonic()
    engine.docker("stop", "--time", str(STOP_TIMEOUT_S), first, timeout=60)
    report.append(f"docker stop: exited after {time.monotonic() - stop_started:.2f}s")
    state = engine.container_state(first)
    assert state["ExitCode"] == 0, engine.logs(first)  # 137 would mean SIGKILL
    assert "minibroker.cli: stopping" in engine.logs(first)

    _, startup = containers.run(volume, port, console_port)
    report.append(startup_line("docker run on the existing volume", startup))
    assert topic_end_offsets(console_port, "docker-e2e") == len(values)
    assert consume(bootstrap, "docker-e2e", len(values)) == list(enumerate(values))
    produce(bootstrap, "docker-e2e", [b"after-restart"])
    assert consume(bootstrap, "docker-e2e", len(values) + 1)[-1] == (20, b"after-restart")


def test_compose_file_is_valid(docker_engine: None) -> None:
    assert compose_config(COMPOSE_FILE, "--services") == "minibroker"
    assert compose_config(COMPOSE_FILE, "--volumes") == "minibroker-data"
    rendered = compose_config(COMPOSE_FILE)
    assert "MINIBROKER_ADVERTISED_LISTENERS: PLAINTEXT://minibroker:29092," in rendered
    assert "PLAINTEXT_HOST://localhost:9092" in rendered
    assert "- published: 8080\n      target: 8080" in rendered  # the web console's port
    assert "- 0.0.0.0:8080" in rendered  # the console's address, in `command`
    assert "- published: 8081\n      target: 8081" in rendered  # the Schema Registry's
    assert "- 0.0.0.0:8081" in rendered
    assert "- minibroker-data:/var/lib/minibroker" in rendered


def test_commented_client_service_is_valid(docker_engine: None, tmp_path: Path) -> None:
    uncommented = re.sub(r"(?m)^  # (?=app:|  )", "  ", COMPOSE_FILE.read_text())
    (tmp_path / "docker").mkdir()
    example = tmp_path / "docker" / "docker-compose.yml"
    example.write_text(uncommented)
    assert compose_config(example, "--services").split() == ["minibroker", "app"]
    assert "condition: service_healthy" in compose_config(example)


def test_host_network_variant_differs_only_in_network_and_addresses(
    docker_engine: None,
) -> None:
    main = _without_network_settings(compose_config(COMPOSE_FILE))
    variant = _without_network_settings(compose_config(HOST_NETWORK_COMPOSE_FILE))
    assert variant == main


def test_host_network_compose_brings_up_both_listeners(image: str, report: list[str]) -> None:
    host_port, internal_port, console_port = free_port(), free_port(), free_port()
    registry_port = free_port()
    project = f"minibrokere2e{uuid.uuid4().hex[:8]}"
    env = {
        "MINIBROKER_IMAGE": image,
        "MINIBROKER_PORT": str(host_port),
        "MINIBROKER_INTERNAL_PORT": str(internal_port),
        "MINIBROKER_CONSOLE_PORT": str(console_port),
        "MINIBROKER_REGISTRY_PORT": str(registry_port),
    }
    compose = [engine.COMPOSE, "-p", project, "-f", str(HOST_NETWORK_COMPOSE_FILE)]
    try:
        started = time.monotonic()
        engine.run([*compose, "up", "--detach", "--no-build"], env=env, timeout=300)
        container = engine.run([*compose, "ps", "-q"], env=env).stdout.decode().strip()
        report.append(
            startup_line("docker-compose up", wait_healthy(container, host_port, started))
        )

        host_bootstrap = f"127.0.0.1:{host_port}"
        internal_bootstrap = f"127.0.0.1:{internal_port}"
        assert advertised_brokers(host_bootstrap) == {("127.0.0.1", host_port)}
        assert advertised_brokers(internal_bootstrap) == {("127.0.0.1", internal_port)}
        values = [b"compose-%d" % i for i in range(5)]
        produce(host_bootstrap, "compose-e2e", values)
        assert consume(internal_bootstrap, "compose-e2e", len(values)) == list(enumerate(values))
        assert topic_end_offsets(console_port, "compose-e2e") == len(values)
        assert registry_subjects(registry_port) == []
    finally:
        engine.run([*compose, "down", "--volumes", "--timeout", "10"], env=env, check=False)


def compose_config(file: Path, *args: str) -> str:
    """`docker-compose config` with every variable of the file at its default."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("MINIBROKER_")}
    done = subprocess.run(
        [engine.COMPOSE, "-f", str(file), "config", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _without_network_settings(rendered: str) -> list[str]:
    """`docker-compose config` output (keys sorted) minus what the variant changes."""
    kept: list[str] = []
    in_ports = False
    for line in rendered.splitlines():
        if kept and kept[-1] in ("    - --console", "    - --schema-registry"):
            kept.append("    - <address>")
            continue
        if line == "    ports:":
            in_ports = True
            continue
        if in_ports and line.startswith("    - "):
            continue
        if in_ports and line.startswith("      "):
            continue
        in_ports = False
        key = line.strip().split(":")[0]
        if key in ("network_mode", "MINIBROKER_LISTENERS", "MINIBROKER_ADVERTISED_LISTENERS"):
            continue
        kept.append(line)
    return kept
