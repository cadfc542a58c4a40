from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.testing.threaded import ThreadedBroker

# Short session timeouts keep expiry tests fast; a few partitions keep topic creation cheap.
GROUP_SETTINGS = {
    "group.min.session.timeout.ms": "100",
    "offsets.topic.num.partitions": "5",
}


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=GROUP_SETTINGS) as running:
        yield running


@pytest.fixture
def group_bootstrap(group_broker: ThreadedBroker) -> str:
    return group_broker.bootstrap_servers
