"""`minibroker acl list|add|remove` and the CLI's SASL login (`--user`, `--password`,
MINIBROKER_USER/MINIBROKER_PASSWORD) as a user runs them: the real `python -m minibroker`
against a broker with a SASL/SCRAM listener and the StandardAuthorizer (`secured_config()`),
the super user managing bindings and a plain user's commands allowed and refused by them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from minibroker.testing import KafkaBroker, secured_config

RUN_TIMEOUT_S = 60
ADMIN = ("--user", "admin", "--password", "admin-secret")


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory", config=secured_config()) as running:
        running.add_user("alice", "alice-secret")
        running.create_topic("orders-eu")
        running.create_topic("payments")
        yield running


def cli(
    kafka: KafkaBroker, *args: str, stdin: str = "", login: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MINIBROKER_BOOTSTRAP": kafka.bootstrap_servers, **(login or {})}
    return subprocess.run(
        [sys.executable, "-m", "minibroker", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=RUN_TIMEOUT_S,
    )


def rows(text: str) -> list[list[str]]:
    lines = [line.split() for line in text.splitlines() if line.strip()]
    assert lines[0] == [
        "PRINCIPAL",
        "HOST",
        "OPERATION",
        "PERMISSION",
        "RESOURCE",
        "NAME",
        "PATTERN",
    ]
    return lines[1:]


def test_add_list_use_and_remove_bindings(kafka: KafkaBroker) -> None:
    added = cli(
        kafka, "acl", "add", *ADMIN, "--principal", "User:alice", "--operation", "write",
        "--operation", "DESCRIBE", "--topic", "orders-", "--pattern", "prefixed",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "added 2 ACL binding(s)" in added.stderr
    listed = cli(kafka, "acl", "list", *ADMIN, "--principal", "User:alice")
    assert listed.returncode == 0, listed.stderr
    assert rows(listed.stdout) == [
        ["User:alice", "*", "DESCRIBE", "ALLOW", "TOPIC", "orders-", "PREFIXED"],
        ["User:alice", "*", "WRITE", "ALLOW", "TOPIC", "orders-", "PREFIXED"],
    ]
    matched = cli(kafka, "acl", "list", *ADMIN, "--topic", "orders-eu", "--pattern", "match")
    assert len(rows(matched.stdout)) == 2

    alice = {"MINIBROKER_USER": "alice", "MINIBROKER_PASSWORD": "alice-secret"}
    produced = cli(kafka, "produce", "orders-eu", stdin="hello\n", login=alice)
    refused = cli(kafka, "produce", "payments", stdin="nope\n", login=alice)
    assert produced.returncode == 0, produced.stderr
    assert kafka.values("orders-eu") == [b"hello"]
    assert refused.returncode == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in refused.stderr
    assert kafka.values("payments") == []

    removed = cli(
        kafka, "acl", "remove", *ADMIN, "--principal", "User:alice", "--topic", "orders-",
        "--pattern", "prefixed",
    )  # fmt: skip
    assert removed.returncode == 0, removed.stderr
    assert len(rows(removed.stdout)) == 2
    assert kafka.acls() == []


def test_a_user_without_alter_on_the_cluster_cannot_add_bindings(kafka: KafkaBroker) -> None:
    result = cli(
        kafka, "acl", "add", "--user", "alice", "--password", "alice-secret",
        "--principal", "User:alice", "--operation", "ALL", "--cluster",
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("minibroker: CLUSTER_AUTHORIZATION_FAILED: ")
    assert kafka.acls() == []


def test_acl_usage_errors_exit_2(kafka: KafkaBroker) -> None:
    no_resource = cli(kafka, "acl", "add", *ADMIN, "--principal", "User:x", "--operation", "READ")
    assert no_resource.returncode == 2
    assert "name a resource" in no_resource.stderr
    nothing_named = cli(kafka, "acl", "remove", *ADMIN)
    assert nothing_named.returncode == 2
    assert "--help" not in cli(kafka, "acl", "add", "--help").stderr
    assert "examples:\n  minibroker acl add" in cli(kafka, "acl", "add", "--help").stdout
