from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from tests.wire import WireClient


@pytest.fixture
def broker() -> Iterator[KafkaBroker]:
    """A broker running the StandardAuthorizer with no ACL: its PLAINTEXT clients are
    User:ANONYMOUS and may do nothing until a test grants it."""
    with KafkaBroker(config=AUTHORIZER_CONFIG) as running:
        yield running


@pytest.fixture
def client(broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire
