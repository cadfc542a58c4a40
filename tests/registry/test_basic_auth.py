"""HTTP basic authentication of the Schema Registry and the web console (one verifier per
broker): failed credentials are answered after `connection.failed.authentication.delay.ms`,
unknown users go through the same SCRAM derivations as known ones, verified passwords are
remembered only while their credential lasts, and guesses hammering the registry from
threads leave the broker's Kafka listener answering."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from minibroker.security.scram import SCRAM_MECHANISMS
from minibroker.server.http_auth import BasicAuthVerifier, verifier_for
from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.security import secured_config
from tests.registry.http import Answer, Registry

FAILED_DELAY_S = 0.09  # connection.failed.authentication.delay.ms is 100 by default
GENEROUS_S = 15.0


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(
        schema_registry=True, console=True, storage="memory", config=secured_config()
    ) as started:
        started.add_user("carol", "carol-secret")
        yield started


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def get(base: str, user: str, password: str, path: str = "/subjects") -> Answer:
    return Registry(base).call("GET", path, headers=basic(user, password))


def verifier(broker: KafkaBroker) -> BasicAuthVerifier:
    return verifier_for(broker.node(broker.node_ids[0]))


def test_failed_credentials_are_answered_after_the_delay(broker: KafkaBroker) -> None:
    for base, path in (
        (broker.schema_registry_url, "/subjects"),
        (broker.console_url, "/api/overview"),
    ):
        for user, password in (("carol", "wrong"), ("nobody", "x")):
            started = time.monotonic()
            answer = get(base, user, password, path)
            assert answer.status == 401
            assert time.monotonic() - started >= FAILED_DELAY_S
        assert get(base, "admin", "admin-secret", path).status == 200


def test_unknown_and_known_users_cost_the_same_derivations(broker: KafkaBroker) -> None:
    checks = verifier(broker)
    counted = []
    for user in ("nobody", "carol", "admin"):
        before = checks.derivations
        assert get(broker.schema_registry_url, user, "wrong").status == 401
        counted.append(checks.derivations - before)
    assert counted == [len(SCRAM_MECHANISMS)] * 3


def test_a_verified_password_is_remembered_while_its_credential_lasts(
    broker: KafkaBroker,
) -> None:
    checks = verifier(broker)
    broker.add_user("dave", "first")
    assert get(broker.schema_registry_url, "dave", "first").status == 200
    before = checks.derivations
    assert get(broker.schema_registry_url, "dave", "first").status == 200
    refused = get(broker.console_url, "dave", "first", "/api/overview")
    assert refused.status == 403  # authenticated, but not a cluster administrator
    assert checks.derivations == before  # the registry and the console share what passed
    broker.add_user("dave", "second")
    assert get(broker.schema_registry_url, "dave", "first").status == 401
    assert get(broker.schema_registry_url, "dave", "second").status == 200
    broker.remove_user("dave")
    assert get(broker.schema_registry_url, "dave", "second").status == 401


def test_guessing_passwords_leaves_the_kafka_listener_answering(broker: KafkaBroker) -> None:
    broker.create_topic("still-served")
    stop = threading.Event()
    refused = [0] * 8

    def guess(index: int) -> None:
        while not stop.is_set():
            if get(broker.schema_registry_url, "admin", f"guess-{index}").status == 401:
                refused[index] += 1

    guessers = [threading.Thread(target=guess, args=(i,)) for i in range(len(refused))]
    for thread in guessers:
        thread.start()
    admin = AdminClient(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )
    try:
        time.sleep(0.5)
        for _ in range(5):
            metadata = admin.list_topics(timeout=GENEROUS_S)
            assert "still-served" in metadata.topics
    finally:
        stop.set()
        for thread in guessers:
            thread.join(GENEROUS_S)
    assert sum(refused) >= len(refused)
