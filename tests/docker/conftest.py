"""Fixtures for the image tests: the engine and the image (once per session), and containers
and volumes that are removed whatever the test's outcome."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from minibroker.healthcheck import HealthCheckFailed, check
from tests.docker import engine
from tests.quick import require_external

HEALTHY_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.05


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """docker, dockerd and docker-compose installed and a daemon answering."""
    require_external("the Docker engine")
    try:
        with engine.docker_engine():
            yield
    except engine.DockerUnavailable as exc:
        pytest.fail(f"Docker is not usable on this machine: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def image(docker_engine: None) -> str:
    try:
        return engine.build_image(engine.build_base_image())
    except engine.DockerUnavailable as exc:
        pytest.fail(f"the image cannot be built: {exc}", pytrace=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Startup:
    """Seconds from `docker run` (or `docker-compose up`) to each milestone."""

    answering: float  # ApiVersions from the host succeeds
    healthy: float  # Docker reports the container healthy
    process_to_answering: float  # from the container's process start (Docker's StartedAt)


def wait_healthy(container: str, port: int, started: float) -> Startup:
    """Poll until Docker says healthy; fail with the logs if the container stops first."""
    answering: float | None = None
    answering_at = 0.0
    deadline = time.monotonic() + HEALTHY_TIMEOUT_S
    while time.monotonic() < deadline:
        if answering is None:
            try:
                check("127.0.0.1", port, timeout=1.0)
                answering = time.monotonic() - started
                answering_at = time.time()
            except HealthCheckFailed:
                pass
        state = engine.container_state(container)
        if state["Status"] != "running":
            logs = engine.logs(container)
            pytest.fail(f"container {container} is {state['Status']}: {state}\n{logs}")
        health = state.get("Health")
        status = health.get("Status") if isinstance(health, dict) else None
        if status == "healthy":
            healthy = time.monotonic() - started
            if answering is None:  # healthy before the first probe from the host
                answering, answering_at = healthy, time.time()
            process_start = _docker_timestamp(str(state["StartedAt"]))
            return Startup(answering, healthy, answering_at - process_start)
        if status == "unhealthy":
            logs = engine.logs(container)
            pytest.fail(f"container {container} is unhealthy: {health}\n{logs}")
        time.sleep(POLL_INTERVAL_S)
    logs = engine.logs(container)
    pytest.fail(f"container {container} not healthy after {HEALTHY_TIMEOUT_S}s\n{logs}")


def _docker_timestamp(text: str) -> float:
    """Seconds since the epoch from Docker's RFC 3339 time with nanoseconds."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return seconds + float(f"0.{fraction or 0}")


@dataclass
class Containers:
    """Starts containers of the test image and removes them and their volumes afterwards."""

    image: str
    names: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def new_volume(self) -> str:
        name = f"minibroker-e2e-{uuid.uuid4().hex[:12]}"
        self.volumes.append(name)
        return name

    def run(self, volume: str, port: int, console_port: int = 0) -> tuple[str, Startup]:
        """A broker on 127.0.0.1:`port` (host network) with its data in `volume` and its web
        console on 127.0.0.1:`console_port` (0: a free port; the image's own 0.0.0.0:8080
        could clash with the host's services)."""
        name = f"minibroker-e2e-{uuid.uuid4().hex[:12]}"
        self.names.append(name)
        listener = f"PLAINTEXT://127.0.0.1:{port}"
        started = time.monotonic()
        engine.docker(
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            "--volume",
            f"{volume}:/var/lib/minibroker",
            "--env",
            f"MINIBROKER_LISTENERS={listener}",
            "--env",
            f"MINIBROKER_ADVERTISED_LISTENERS={listener}",
            self.image,
            "--console",
            f"127.0.0.1:{console_port or free_port()}",
        )
        return name, wait_healthy(name, port, started)

    def remove_all(self) -> None:
        for name in self.names:
            engine.docker("rm", "--force", "--volumes", name, check=False)
        for volume in self.volumes:
            engine.docker("volume", "rm", "--force", volume, check=False)


@pytest.fixture
def containers(image: str) -> Iterator[Containers]:
    started = Containers(image)
    try:
        yield started
    finally:
        started.remove_all()
