"""pytest plugin (entry point `pytest11`): Kafka brokers and clusters as fixtures.

- `kafka_broker`: a fresh broker per test (a cluster when the marker asks for nodes > 1);
- `kafka_cluster`: a fresh 3-node cluster per test (nodes from the marker otherwise);
- `kafka_session_broker`: one broker for the whole session (per xdist worker);
- `kafka_broker_factory` / `kafka_cluster_factory`: start brokers with any options, all
  stopped at the end of the test;
- `@pytest.mark.minibroker(nodes=3, config={...}, storage="memory")` configures
  `kafka_broker` and `kafka_cluster` for one test (or a module, through `pytestmark`);
  `console=True` serves the web console too, at `kafka_broker.console_url`
  (`console_read_only=True`: without its writes); `schema_registry=True` starts the Schema
  Registry with the broker, at `kafka_broker.schema_registry_url` (reading that property
  starts it otherwise).

The brokers run on a background thread, so they serve plain tests and pytest-asyncio tests
alike. Ports are ephemeral and disk storage goes under the test's `tmp_path` (per xdist
worker), so parallel runs never collide. `minibroker` is the older name of `kafka_broker`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from minibroker.testing.cluster import KafkaCluster

MARKER = "minibroker"
DEFAULT_CLUSTER_NODES = 3


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(nodes=1, config=None, storage='disk', record_requests=True, "
        "max_recorded_requests=10000, console=False, console_read_only=False, "
        "schema_registry=False, kafka_version=None): "
        "options of the kafka_broker / kafka_cluster fixtures for this test",
    )


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers(MARKER))):
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only")
        options.update(marker.kwargs)
    return options


def _started(options: dict[str, Any], directory: Path) -> KafkaCluster:
    from minibroker.testing.cluster import KafkaBroker, KafkaCluster

    options = dict(options)
    nodes = options.pop("nodes", 1)
    if options.get("storage", "disk") == "disk" and options.get("data_dir") is None:
        options["data_dir"] = directory
    if nodes == 1:
        return KafkaBroker(**options).start()
    return KafkaCluster(nodes, **options).start()


class _Factory:
    def __init__(self, tmp_path: Path, default_nodes: int) -> None:
        self._tmp_path = tmp_path
        self._default_nodes = default_nodes
        self._started: list[KafkaCluster] = []

    def __call__(self, **options: Any) -> KafkaCluster:
        options.setdefault("nodes", self._default_nodes)
        directory = self._tmp_path / f"kafka-{len(self._started)}"
        cluster = _started(options, directory)
        self._started.append(cluster)
        return cluster

    def stop_all(self) -> None:
        while self._started:
            self._started.pop().stop()


@pytest.fixture
def kafka_broker_factory(tmp_path: Path) -> Iterator[Callable[..., KafkaCluster]]:
    """`kafka_broker_factory(config={...}, storage="memory")` -> a started broker."""
    factory = _Factory(tmp_path, default_nodes=1)
    yield factory
    factory.stop_all()


@pytest.fixture
def kafka_cluster_factory(tmp_path: Path) -> Iterator[Callable[..., KafkaCluster]]:
    """`kafka_cluster_factory(nodes=3, ...)` -> a started cluster."""
    factory = _Factory(tmp_path, default_nodes=DEFAULT_CLUSTER_NODES)
    yield factory
    factory.stop_all()


@pytest.fixture
def kafka_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KafkaCluster]:
    """A broker for this test only; `@pytest.mark.minibroker(...)` sets its options."""
    cluster = _started(_marker_options(request), tmp_path / "kafka")
    yield cluster
    cluster.stop()


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KafkaCluster]:
    """A cluster (3 nodes unless the marker says otherwise) for this test only."""
    options = {"nodes": DEFAULT_CLUSTER_NODES, **_marker_options(request)}
    cluster = _started(options, tmp_path / "kafka")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def kafka_session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker shared by every test of the session: use distinct topic and group names."""
    cluster = _started({}, tmp_path_factory.mktemp("kafka-session"))
    yield cluster
    cluster.stop()


@pytest.fixture
def minibroker(kafka_broker: KafkaCluster) -> KafkaCluster:
    """The former name of `kafka_broker`."""
    return kafka_broker
