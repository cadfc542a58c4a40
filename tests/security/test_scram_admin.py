"""DescribeUserScramCredentials / AlterUserScramCredentials: over the wire, through
confluent-kafka's admin client, persisted across restarts, and usable to log in."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.security.credentials import CREDENTIALS_FILE
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.security.client_config import Security, client_config
from tests.security.conftest import sasl_listener_settings
from tests.security.pki import Pki
from tests.security.scram_client import ScramClient
from tests.wire import WireClient


def plain_and_sasl_settings() -> dict[str, str]:
    """A PLAINTEXT listener for admin requests and a SASL_PLAINTEXT one to log in on."""
    settings = sasl_listener_settings()
    settings["listeners"] = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
    return settings


def sasl_port(running: ThreadedBroker) -> int:
    assert running.broker is not None
    return next(b.port for b in running.broker.bound if b.listener.name == "SASL_PLAINTEXT")


def upsertion(name: str, password: str, mechanism: int = 1, iterations: int = 4096) -> dict:
    salt = os.urandom(16)
    hash_name = {1: "sha256", 2: "sha512"}.get(mechanism, "sha256")
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }


def scram_login(bootstrap: str, mechanism: str, user: str, password: str) -> int:
    scram = ScramClient(mechanism, user, password)
    with WireClient(bootstrap) as client:
        client.call(ApiKey.SaslHandshake, 1, mechanism=mechanism)
        first = client.call(ApiKey.SaslAuthenticate, 2, auth_bytes=scram.first())
        if first.error_code:
            return int(first.error_code)
        final = client.call(ApiKey.SaslAuthenticate, 2, auth_bytes=scram.final(first.auth_bytes))
        return int(final.error_code)


def describe(client: WireClient, users: list[str] | None) -> dict[str, tuple[int, object]]:
    response = client.call(
        ApiKey.DescribeUserScramCredentials,
        0,
        users=None if users is None else [{"name": u} for u in users],
    )
    assert response.error_code == ErrorCode.NO_ERROR
    return {
        r.user: (
            r.error_code,
            r.error_message or sorted((i.mechanism, i.iterations) for i in r.credential_infos),
        )
        for r in response.results
    }


def test_describe_lists_configured_users_without_secrets() -> None:
    with (
        ThreadedBroker(settings=plain_and_sasl_settings()) as running,
        WireClient(running.bootstrap_servers.split(",")[0]) as client,
    ):
        assert describe(client, None) == {
            "alice": (0, [(1, 4096), (2, 4096)]),
            "bob": (0, [(1, 8192)]),
        }
        assert describe(client, ["bob", "carol", "bob"]) == {
            "bob": (
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single "
                "request: bob",
            ),
            "carol": (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to describe a user credential that does not exist: carol",
            ),
        }


def test_alter_creates_users_that_log_in_and_survive_a_restart(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=plain_and_sasl_settings()) as running:
        plain = running.bootstrap_servers.split(",")[0]
        sasl = f"127.0.0.1:{sasl_port(running)}"
        with WireClient(plain) as client:
            response = client.call(
                ApiKey.AlterUserScramCredentials,
                0,
                deletions=[],
                upsertions=[upsertion("carol", "carol-secret", 2, 8192)],
            )
            assert [(r.user, r.error_code) for r in response.results] == [("carol", 0)]
        assert scram_login(sasl, "SCRAM-SHA-512", "carol", "carol-secret") == 0
        assert scram_login(sasl, "SCRAM-SHA-512", "carol", "wrong") == (
            ErrorCode.SASL_AUTHENTICATION_FAILED
        )
        stored = (tmp_path / "data" / CREDENTIALS_FILE).read_text()
        assert "carol-secret" not in stored
        assert set(json.loads(stored)["credentials"]["carol"]) == {"SCRAM-SHA-512"}
        running.restart()
        assert (
            scram_login(f"127.0.0.1:{sasl_port(running)}", "SCRAM-SHA-512", "carol", "carol-secret")
            == 0
        )


@pytest.mark.parametrize(
    ("deletions", "upsertions", "expected"),
    [
        (
            [],
            [upsertion("", "x")],
            {"": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")},
        ),
        (
            [],
            [upsertion("dan", "x", mechanism=3)],
            {"dan": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")},
        ),
        (
            [],
            [upsertion("dan", "x", iterations=1000)],
            {"dan": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")},
        ),
        (
            [],
            [upsertion("dan", "x", iterations=20000)],
            {"dan": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")},
        ),
        (
            [{"name": "bob", "mechanism": 2}],
            [],
            {
                "bob": (
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist",
                )
            },
        ),
        (
            [{"name": "alice", "mechanism": 1}],
            [upsertion("alice", "new", mechanism=2)],
            {
                "alice": (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                )
            },
        ),
        (
            [{"name": "bob", "mechanism": 1}],
            [upsertion("erin", "x")],
            {"bob": (0, None), "erin": (0, None)},
        ),
    ],
)
def test_alter_checks_as_kafka(deletions: list, upsertions: list, expected: dict) -> None:
    with (
        ThreadedBroker(settings=plain_and_sasl_settings()) as running,
        WireClient(running.bootstrap_servers.split(",")[0]) as client,
    ):
        response = client.call(
            ApiKey.AlterUserScramCredentials, 0, deletions=deletions, upsertions=upsertions
        )
        results = {r.user: (r.error_code, r.error_message) for r in response.results}
        assert results == expected
        if "alice" in expected:  # a refused request changes nothing
            assert describe(client, ["alice"])["alice"] == (0, [(1, 4096), (2, 4096)])
        if "erin" in expected:
            assert set(describe(client, None)) == {"alice", "erin"}


@pytest.mark.clients
def test_users_created_with_confluent_admin_log_in_with_java_and_kcat(
    pki: Pki, tmp_path: Path
) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=plain_and_sasl_settings()) as running:
        admin = AdminClient({"bootstrap.servers": running.bootstrap_servers.split(",")[0]})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
        futures = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("frank", info, b"frank-secret"),
                UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256),
            ]
        )
        for future in futures.values():
            future.result(timeout=10)
        described = admin.describe_user_scram_credentials(["frank"])["frank"].result(timeout=10)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_256, 8192)
        ]
        sasl = f"127.0.0.1:{sasl_port(running)}"
        security = Security(
            "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", username="frank", password="frank-secret"
        )
        for client in ("java-4.3", "kcat"):
            result = run_ok(
                client,
                {
                    "op": "produce",
                    "bootstrap": sasl,
                    "topic": f"created-{client}",
                    "config": client_config(client, security),
                    "records": [{"key": None, "value": "eA==", "headers": [], "partition": 0}],
                },
            )
            assert result["results"][0]["offset"] == 0
        assert scram_login(sasl, "SCRAM-SHA-256", "bob", "bob-secret") == (
            ErrorCode.SASL_AUTHENTICATION_FAILED
        )
