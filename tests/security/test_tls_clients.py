"""Real clients over TLS, with a client certificate that the broker requires."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_client
from tests.security.client_config import TLS_AND_SASL_CLIENTS, Security, client_config
from tests.security.conftest import ssl_listener_settings
from tests.security.jobs import produce_and_consume
from tests.security.pki import Pki

pytestmark = pytest.mark.clients


@pytest.mark.parametrize("client", TLS_AND_SASL_CLIENTS)
def test_client_over_tls_with_required_client_certificate(
    client: str, pki: Pki, data_dir: Path
) -> None:
    security = Security("SSL", pki, client_certificate=True)
    settings = ssl_listener_settings(pki, client_auth="required")
    with ThreadedBroker(data_dir=data_dir, settings=settings) as running:
        produce_and_consume(client, running.bootstrap_servers, security, "tls-topic")


@pytest.mark.parametrize("client", ["java-4.3", "confluent-kafka"])
def test_client_without_certificate_is_refused_when_required(
    client: str, pki: Pki, data_dir: Path
) -> None:
    security = Security("SSL", pki, client_certificate=False)
    settings = ssl_listener_settings(pki, client_auth="required")
    with ThreadedBroker(data_dir=data_dir, settings=settings) as running:
        result = run_client(
            client,
            {
                "op": "metadata",
                "bootstrap": running.bootstrap_servers,
                "topics": None,
                "config": client_config(client, security),
                "timeout_ms": 5000,
            },
        )
    assert not result["ok"], result
