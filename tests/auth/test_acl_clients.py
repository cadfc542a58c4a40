"""ACLs through real admin clients, and what real clients see when ACLs refuse them.

Java 4.3 and 3.9 (AdminClient), confluent-kafka, kafka-python 3 and kafkajs create, describe
(ANY, MATCH, PREFIXED and LITERAL filters) and delete ACLs as the super user, each with
bindings of its own principal, and get exactly those bindings back (tests/clients/README.md,
the ACL ops). Over SASL/SCRAM, alice may write to topics prefixed `alice-` only and bob may
read a topic but not use a group: their clients report Kafka's TOPIC_AUTHORIZATION_FAILED,
GROUP_AUTHORIZATION_FAILED and TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from minibroker.testing.security import secured_config
from tests.clients.runner import run_client, run_ok
from tests.security.client_config import Security, client_config

pytestmark = pytest.mark.clients

ACL_CLIENTS = ["java-4.3", "java-3.9", "confluent-kafka", "kafka-python-3", "kafkajs"]
TIMEOUT_MS = 20_000
Binding = tuple[str, str, str, str, str, str, str]


def binding(
    resource_type: str,
    name: str,
    principal: str,
    operation: str,
    pattern: str = "LITERAL",
    permission: str = "ALLOW",
    host: str = "*",
) -> dict[str, str]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permission_type": permission,
    }


def key(found: dict[str, Any]) -> Binding:
    return (
        found["resource_type"],
        found["resource_name"],
        found["pattern_type"],
        found["principal"],
        found["host"],
        found["operation"],
        found["permission_type"],
    )


def keys(bindings: list[dict[str, Any]]) -> list[Binding]:
    return sorted(key(b) for b in bindings)


class AclRun:
    """One client's create, describe, delete and describe again, with its own principal and
    resource names; the results are kept for the test to check."""

    def __init__(self, client: str, bootstrap: str) -> None:
        self.client = client
        self.bootstrap = bootstrap
        name = client.replace(".", "_")
        self.principal = f"User:{name}-user"
        self.topic = f"{name}-orders-1"
        self.prefix = f"{name}-orders"
        self.bindings = {
            "literal": binding("TOPIC", self.topic, self.principal, "WRITE"),
            "prefixed": binding("TOPIC", self.prefix, self.principal, "READ", "PREFIXED"),
            "wildcard": binding("TOPIC", "*", self.principal, "DESCRIBE"),
            "group": binding(
                "GROUP", f"{name}-group", self.principal, "READ", permission="DENY", host="10.0.0.1"
            ),
            "cluster": binding("CLUSTER", "kafka-cluster", self.principal, "DESCRIBE"),
            "transactional_id": binding("TRANSACTIONAL_ID", f"{name}-tx", self.principal, "WRITE"),
        }
        self.results: dict[str, dict[str, Any]] = {}

    def job(self, op: str, **fields: Any) -> dict[str, Any]:
        job = {"op": op, "bootstrap": self.bootstrap, "timeout_ms": TIMEOUT_MS, **fields}
        return run_ok(self.client, job)

    def describe(self, **acl_filter: Any) -> dict[str, Any]:
        return self.job("describe_acls", filter={"principal": self.principal, **acl_filter})

    def __call__(self) -> AclRun:
        invalid = binding("CLUSTER", "not-the-cluster", self.principal, "ALTER")
        self.results["create"] = self.job("create_acls", acls=[*self.bindings.values(), invalid])
        self.results["any"] = self.describe()
        self.results["match"] = self.describe(
            resource_type="TOPIC", resource_name=self.topic, pattern_type="MATCH"
        )
        self.results["prefixed"] = self.describe(resource_type="TOPIC", pattern_type="PREFIXED")
        self.results["literal"] = self.describe(
            resource_type="TOPIC", resource_name=self.topic, pattern_type="LITERAL"
        )
        self.results["delete"] = self.job(
            "delete_acls",
            filters=[
                {"resource_type": "TOPIC", "pattern_type": "PREFIXED", "principal": self.principal},
                {"resource_type": "GROUP", "permission_type": "DENY", "principal": self.principal},
                {"resource_type": "TOPIC", "resource_name": "absent", "principal": self.principal},
            ],
        )
        self.results["after"] = self.describe()
        return self

    def expected(self, *names: str) -> list[Binding]:
        return sorted(key(self.bindings[name]) for name in names)


@pytest.fixture(scope="module")
def acl_broker() -> Iterator[KafkaBroker]:
    config = {**AUTHORIZER_CONFIG, "super.users": "User:ANONYMOUS"}  # PLAINTEXT's principal
    with KafkaBroker(config=config) as broker:
        yield broker


@pytest.fixture(scope="module")
def acl_runs(acl_broker: KafkaBroker) -> Iterator[dict[str, Future[AclRun]]]:
    """Every client's run, started at once (each on its own principal and names)."""
    with ThreadPoolExecutor(max_workers=len(ACL_CLIENTS)) as pool:
        yield {
            client: pool.submit(AclRun(client, acl_broker.bootstrap_servers))
            for client in ACL_CLIENTS
        }


@pytest.mark.parametrize("client", ACL_CLIENTS)
def test_client_creates_describes_and_deletes_acls(
    client: str, acl_runs: dict[str, Future[AclRun]], acl_broker: KafkaBroker
) -> None:
    run = acl_runs[client].result()
    created = run.results["create"]["acls"]
    assert [b["error_name"] for b in created] == [None] * 6 + ["INVALID_REQUEST"]
    assert keys(created[:6]) == run.expected(*run.bindings)

    for name in ("any", "match", "prefixed", "literal", "after"):
        assert run.results[name]["error_name"] is None, (name, run.results[name])
    assert keys(run.results["any"]["acls"]) == run.expected(*run.bindings)
    # MATCH: the literal binding of the name, the prefixed one above it, the wildcard.
    assert keys(run.results["match"]["acls"]) == run.expected("literal", "prefixed", "wildcard")
    assert keys(run.results["prefixed"]["acls"]) == run.expected("prefixed")
    assert keys(run.results["literal"]["acls"]) == run.expected("literal")

    deleted = run.results["delete"]["filters"]
    assert [f["error_name"] for f in deleted] == [None, None, None]
    assert [keys(f["acls"]) for f in deleted] == [
        run.expected("prefixed"),
        run.expected("group"),
        [],
    ]
    assert all(b["error_name"] is None for f in deleted for b in f["acls"])
    remaining = run.expected("literal", "wildcard", "cluster", "transactional_id")
    assert keys(run.results["after"]["acls"]) == remaining
    stored = [b for b in acl_broker.acls() if b.principal == run.principal]
    assert len(stored) == len(remaining)


# --- SASL/SCRAM users refused by ACLs ----------------------------------------------------

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret"}
REFUSAL_CLIENTS = ["java-4.3", "confluent-kafka", "kafka-python-3"]


@pytest.fixture(scope="module")
def secured_broker() -> Iterator[KafkaBroker]:
    """alice: WRITE and DESCRIBE on topics prefixed alice-; bob: READ on topic shared, no
    group; nobody: the transactional ids."""
    with KafkaBroker(config=secured_config()) as broker:
        for user, password in PASSWORDS.items():
            broker.add_user(user, password)
        for topic in ("alice-orders", "other", "shared"):
            broker.create_topic(topic)
        broker.add_acl("User:alice", "WRITE", topic="alice-", pattern="prefixed")
        broker.add_acl("User:alice", "DESCRIBE", topic="alice-", pattern="prefixed")
        broker.add_acl("User:bob", "READ", topic="shared")
        broker.produce("shared", b"for bob")
        yield broker


def as_user(client: str, bootstrap: str, user: str, op: str, **fields: Any) -> dict[str, Any]:
    security = Security(
        "SASL_PLAINTEXT", mechanism="SCRAM-SHA-256", username=user, password=PASSWORDS[user]
    )
    job = {"op": op, "bootstrap": bootstrap, "timeout_ms": 15_000, **fields}
    return run_client(client, {**job, "config": client_config(client, security)})


def records(*values: bytes) -> list[dict[str, Any]]:
    return [
        {"key": None, "value": base64.b64encode(v).decode(), "headers": [], "partition": 0}
        for v in values
    ]


def refusals(client: str, bootstrap: str) -> dict[str, dict[str, Any]]:
    return {
        "allowed": as_user(
            client, bootstrap, "alice", "produce", topic="alice-orders", records=records(b"a")
        ),
        "topic": as_user(
            client, bootstrap, "alice", "produce", topic="other", records=records(b"o")
        ),
        "group": as_user(
            client, bootstrap, "bob", "consume", topic="shared", group="bob-group", count=1
        ),
        "transactional_id": as_user(
            client,
            bootstrap,
            "alice",
            "produce",
            topic="alice-orders",
            records=records(b"t"),
            transactional_id=f"alice-tx-{client}",
        ),
    }


@pytest.fixture(scope="module")
def refusal_runs(secured_broker: KafkaBroker) -> Iterator[dict[str, Future[dict[str, Any]]]]:
    with ThreadPoolExecutor(max_workers=len(REFUSAL_CLIENTS)) as pool:
        yield {
            client: pool.submit(refusals, client, secured_broker.bootstrap_servers)
            for client in REFUSAL_CLIENTS
        }


@pytest.mark.parametrize("client", REFUSAL_CLIENTS)
def test_clients_see_kafkas_authorization_errors(
    client: str, refusal_runs: dict[str, Future[dict[str, Any]]]
) -> None:
    outcome = refusal_runs[client].result()
    assert outcome["allowed"]["ok"], outcome["allowed"]
    named = {case: (result["ok"], result.get("error_name")) for case, result in outcome.items()}
    assert named == {
        "allowed": (True, None),
        "topic": (False, "TOPIC_AUTHORIZATION_FAILED"),
        "group": (False, "GROUP_AUTHORIZATION_FAILED"),
        "transactional_id": (False, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
    }, {case: result.get("error") for case, result in outcome.items()}
