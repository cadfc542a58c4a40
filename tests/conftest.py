from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.quick import quick_loop, require_external

if TYPE_CHECKING:
    from minibroker.testing.threaded import ThreadedBroker

# Tests whose session fixtures start one costly thing (a Docker engine and image, a Spark JVM,
# a browser) run on one pytest-xdist worker (`--dist loadgroup`), which starts it once.
XDIST_GROUPS = {
    "tests/docker/": "docker",
    "tests/spark/": "spark",
    "tests/console/test_browser.py": "browser",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "uses_client(name): the test runs that real client (on a thread, say)"
    )


def clients_used(item: pytest.Item) -> list[str]:
    """The real clients a test names: parametrized with (`client="java-4.3"`, or in a tuple),
    or marked `uses_client(...)`."""
    from tests.clients.runner import CLIENTS

    callspec = getattr(item, "callspec", None)
    values = [] if callspec is None else list(callspec.params.values())
    values += [name for mark in item.iter_markers("uses_client") for name in mark.args]
    flat = [part for value in values for part in (value if isinstance(value, tuple) else (value,))]
    return [value for value in flat if isinstance(value, str) and value in CLIENTS]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In the quick loop a test that names a client is skipped before it starts (its client
    may run on a thread, where the runner's own skip would not end the test)."""
    if quick_loop():
        for client in clients_used(item):
            require_external(f"the {client} client")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        relative = item.path.relative_to(root).as_posix()
        for prefix, group in XDIST_GROUPS.items():
            if relative.startswith(prefix):
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    """A broker on 127.0.0.1 (free port) with its data in a temporary directory."""
    from minibroker.testing.threaded import ThreadedBroker

    with ThreadedBroker(data_dir=tmp_path / "data") as running:
        yield running


@pytest.fixture
def bootstrap(broker: ThreadedBroker) -> str:
    return broker.bootstrap_servers
