"""pytest plugin (entry point `pytest11`): a `minibroker` fixture with a broker on disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from minibroker.testing.threaded import ThreadedBroker


@pytest.fixture
def minibroker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    """A broker on 127.0.0.1 (free port), data in a temporary directory."""
    from minibroker.testing.threaded import ThreadedBroker

    with ThreadedBroker(data_dir=tmp_path / "data") as broker:
        yield broker
