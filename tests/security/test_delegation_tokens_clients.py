"""Delegation tokens with real clients: Java 4.3's AdminClient creates, renews, expires and
describes them, and its SCRAM login with `tokenauth=true` produces as the token's owner.
librdkafka (confluent-kafka 2.16) has no token API and its SCRAM client sends no extensions
(its client-first message is always `n,,n=<user>,r=<nonce>`), so it cannot log in with a
token: the broker takes the token id for a SCRAM user name, as Kafka does, and refuses it."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_client, run_ok
from tests.security.client_config import Security, client_config
from tests.security.conftest import ssl_listener_settings
from tests.security.pki import Pki
from tests.security.test_delegation_tokens import (
    acl_settings,
    address,
    grant,
    kafka_hmac,
    token_settings,
)

pytestmark = pytest.mark.clients

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def java_config(user: str, password: str, tokenauth: bool = False) -> dict[str, Any]:
    extension = ' tokenauth="true"' if tokenauth else ""
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": (
            f'{SCRAM} required username="{user}" password="{password}"{extension};'
        ),
    }


def as_user(user: str) -> dict[str, Any]:
    return java_config(user, f"{user}-secret")


@pytest.fixture
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=acl_settings()) as running:
        yield running


def token_job(bootstrap: str, op: str, config: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"op": op, "bootstrap": bootstrap, "config": config, "timeout_ms": 15_000, **fields}


def produce_job(bootstrap: str, topic: str, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "op": "produce",
        "bootstrap": bootstrap,
        "topic": topic,
        "config": config,
        "timeout_ms": 15_000,
        "records": [{"key": None, "value": "eA==", "headers": [], "partition": 0}],
    }


def test_java_admin_manages_tokens_and_logs_in_with_one(broker: ThreadedBroker) -> None:
    sasl = address(broker, "SASL_PLAINTEXT")
    grant(broker, "User:alice", "ALL", topic="alices-topic")
    before = int(time.time() * 1000)
    created = run_ok(
        "java-4.3",
        token_job(
            sasl,
            "create_delegation_token",
            as_user("alice"),
            renewers=["User:bob"],
            max_lifetime_ms=3_600_000,
        ),
    )["token"]
    assert (created["owner"], created["requester"], created["renewers"]) == (
        "User:alice",
        "User:alice",
        ["User:bob"],
    )
    assert base64.b64decode(created["hmac"]) == kafka_hmac(created["token_id"])
    assert before <= created["issue"] and created["max"] - created["issue"] == 3_600_000
    assert created["expiry"] == created["max"]  # 24 hours, clamped to the max lifetime

    described = run_ok(
        "java-4.3",
        token_job(sasl, "describe_delegation_token", as_user("bob"), owners=["User:alice"]),
    )["tokens"]
    assert [token["token_id"] for token in described] == [created["token_id"]]
    assert described[0]["hmac"] == created["hmac"]

    renewed = run_ok(
        "java-4.3",
        token_job(
            sasl, "renew_delegation_token", as_user("bob"), hmac=created["hmac"], period_ms=60_000
        ),
    )
    assert 0 < renewed["expiry"] - int(time.time() * 1000) <= 60_000
    refused = run_client(
        "java-4.3",
        token_job(sasl, "renew_delegation_token", as_user("carol"), hmac=created["hmac"]),
    )
    assert (refused["ok"], refused["error_name"]) == (False, "DELEGATION_TOKEN_OWNER_MISMATCH")

    token_login = java_config(created["token_id"], created["hmac"], tokenauth=True)
    produced = run_ok("java-4.3", produce_job(sasl, "alices-topic", token_login))
    assert produced["results"][0]["offset"] == 0
    # the token authenticates alice: her ACLs, not more
    denied = run_client("java-4.3", produce_job(sasl, "bobs-topic", token_login))
    assert (denied["ok"], denied["error_name"]) == (False, "TOPIC_AUTHORIZATION_FAILED")
    over_token = run_client("java-4.3", token_job(sasl, "create_delegation_token", token_login))
    assert (over_token["ok"], over_token["error_name"]) == (
        False,
        "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    )

    expired = run_ok(
        "java-4.3",
        token_job(sasl, "expire_delegation_token", as_user("alice"), hmac=created["hmac"]),
    )
    assert abs(expired["expiry"] - int(time.time() * 1000)) < 10_000
    assert (
        run_ok("java-4.3", token_job(sasl, "describe_delegation_token", as_user("alice")))["tokens"]
        == []
    )
    after = run_client("java-4.3", produce_job(sasl, "alices-topic", token_login))
    assert (after["ok"], after["error_name"]) == (False, "SASL_AUTHENTICATION_FAILED")


def test_java_admin_gets_kafkas_errors(broker: ThreadedBroker) -> None:
    sasl = address(broker, "SASL_PLAINTEXT")
    for_alice = run_client(
        "java-4.3", token_job(sasl, "create_delegation_token", as_user("bob"), owner="User:alice")
    )
    assert (for_alice["ok"], for_alice["error_name"]) == (
        False,
        "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    )
    unknown = run_client(
        "java-4.3",
        token_job(
            sasl,
            "renew_delegation_token",
            as_user("bob"),
            hmac=base64.b64encode(kafka_hmac("none")).decode(),
        ),
    )
    assert (unknown["ok"], unknown["error_name"]) == (False, "DELEGATION_TOKEN_NOT_FOUND")
    plaintext = run_client(
        "java-4.3",
        token_job(address(broker, "PLAINTEXT"), "describe_delegation_token", {}),
    )
    assert (plaintext["ok"], plaintext["error_name"]) == (
        False,
        "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    )


def test_confluent_kafka_cannot_log_in_with_a_token(
    broker: ThreadedBroker, caplog: pytest.LogCaptureFixture
) -> None:
    sasl = address(broker, "SASL_PLAINTEXT")
    grant(broker, "User:alice", "ALL", topic="tokens-topic")
    created = run_ok("java-4.3", token_job(sasl, "create_delegation_token", as_user("alice")))[
        "token"
    ]
    security = Security(
        "SASL_PLAINTEXT",
        mechanism="SCRAM-SHA-512",
        username=created["token_id"],
        password=created["hmac"],
    )
    job = produce_job(sasl, "tokens-topic", client_config("confluent-kafka", security))
    job["timeout_ms"] = 5_000
    with caplog.at_level(logging.INFO, logger="minibroker.server.authenticator"):
        refused = run_client("confluent-kafka", job)
    assert refused["ok"] is False
    assert (
        "SASL authentication error: Authentication failed during authentication due to invalid "
        "credentials with SASL mechanism SCRAM-SHA-512"
    ) in refused["stderr"]
    # no tokenauth extension came: the token id was looked up as a SCRAM user
    failures = [r.getMessage() for r in caplog.records if "authentication failed" in r.getMessage()]
    assert failures
    assert all("Invalid user credentials" in message for message in failures)
    # the same credentials with Java's tokenauth=true extension log in
    java = java_config(created["token_id"], created["hmac"], tokenauth=True)
    assert run_ok("java-4.3", produce_job(sasl, "tokens-topic", java))["results"][0]["offset"] == 0


def test_ssl_needs_a_client_certificate(pki: Pki) -> None:
    """Kafka refuses token requests from SSL connections without a client certificate
    (User:ANONYMOUS); a certificate's principal may create its own tokens."""
    settings = token_settings()
    settings.update(ssl_listener_settings(pki, client_auth="requested"))
    with ThreadedBroker(settings=settings) as running:
        ssl = address(running, "SSL")
        anonymous = client_config("java-4.3", Security("SSL", pki=pki))
        refused = run_client("java-4.3", token_job(ssl, "create_delegation_token", anonymous))
        assert (refused["ok"], refused["error_name"]) == (
            False,
            "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        )
        certified = client_config("java-4.3", Security("SSL", pki=pki, client_certificate=True))
        created = run_ok("java-4.3", token_job(ssl, "create_delegation_token", certified))
        assert created["token"]["owner"].startswith("User:CN=")
