"""Real clients on SASL listeners: PLAIN and SCRAM-SHA-256/512, over plain TCP and over TLS.

kafka-python 2 is tested with PLAIN and SCRAM-SHA-256 on SASL_PLAINTEXT only (its TLS is
the same code as kafka-python 3's, which the full matrix covers). Finding: with a wrong
password, kafka-python 2.3.3's producer logs SaslAuthenticationFailedError with Kafka's
message and then retries the login until it is killed instead of raising, so its case checks
the message in the output of the run that the harness stops.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import CAPABILITIES, ClientRunError, run_client
from tests.security.client_config import TLS_AND_SASL_CLIENTS, Security, client_config
from tests.security.conftest import USERS, sasl_listener_settings
from tests.security.jobs import produce_and_consume
from tests.security.pki import Pki

pytestmark = pytest.mark.clients

MODES = [
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]


CASES = [
    *[(client, *mode) for client in TLS_AND_SASL_CLIENTS for mode in MODES],
    ("kafka-python-2", "SASL_PLAINTEXT", "PLAIN"),
    ("kafka-python-2", "SASL_PLAINTEXT", "SCRAM-SHA-256"),
]


@pytest.mark.parametrize(("client", "protocol", "mechanism"), CASES)
def test_client_logs_in_and_produces_and_consumes(
    client: str, protocol: str, mechanism: str, pki: Pki, data_dir: Path
) -> None:
    security = Security(
        protocol, pki, mechanism=mechanism, username="alice", password=USERS["alice"]
    )
    with ThreadedBroker(
        data_dir=data_dir, settings=sasl_listener_settings(protocol, pki)
    ) as running:
        produce_and_consume(client, running.bootstrap_servers, security, f"{mechanism}-topic")


KAFKA_MESSAGES = {
    "PLAIN": "Authentication failed: Invalid username or password",
    "SCRAM-SHA-256": "Authentication failed during authentication due to invalid credentials "
    "with SASL mechanism SCRAM-SHA-256",
}


def failing_job(client: str, bootstrap: str, security: Security) -> dict[str, object]:
    config = client_config(client, security)
    if client == "kafka-python-3":
        # It retries a refused login until bootstrap_timeout_ms (default 30 s) is over.
        config["bootstrap_timeout_ms"] = 3000
    job: dict[str, object] = {"bootstrap": bootstrap, "config": config, "timeout_ms": 4000}
    if "metadata" in CAPABILITIES[client].ops:
        return {**job, "op": "metadata", "topics": None}
    return {**job, "op": "produce", "topic": "t", "records": [{"key": None, "value": "eA=="}]}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
@pytest.mark.parametrize("client", TLS_AND_SASL_CLIENTS)
def test_wrong_password_fails_with_sasl_authentication_failed(
    client: str, mechanism: str, pki: Pki
) -> None:
    security = Security("SASL_PLAINTEXT", mechanism=mechanism, username="alice", password="wrong")
    with ThreadedBroker(settings=sasl_listener_settings()) as running:
        result = run_client(client, failing_job(client, running.bootstrap_servers, security))
    assert not result["ok"]
    # Java maps the error code; the others show Kafka's message in their error or their log.
    assert KAFKA_MESSAGES[mechanism] in result["error"] + result["stderr"]
    if client.startswith("java-"):
        assert result["error_name"] == "SASL_AUTHENTICATION_FAILED"


def test_kafka_python_2_wrong_password_is_answered_sasl_authentication_failed() -> None:
    security = Security("SASL_PLAINTEXT", mechanism="PLAIN", username="alice", password="wrong")
    with ThreadedBroker(settings=sasl_listener_settings()) as running:
        job = failing_job("kafka-python-2", running.bootstrap_servers, security)
        with pytest.raises(ClientRunError) as stopped:  # it retries the login until stopped
            run_client("kafka-python-2", job, timeout_s=10)
    assert f"SaslAuthenticationFailedError: {KAFKA_MESSAGES['PLAIN']}" in str(stopped.value)
