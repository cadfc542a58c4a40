"""Group administration through real admin clients (the harness's group admin ops): Java 4.3
AdminClient, confluent-kafka's AdminClient and kafka-python 3's KafkaAdminClient list,
describe and delete groups; list, alter and delete group offsets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.clients.runner import CAPABILITIES, run_ok

pytestmark = pytest.mark.clients
TIMEOUT_S = 15.0
# Java 3.9 runs the same program as 4.3; one JVM version keeps the test lean.
ADMIN_CLIENTS = ["java-4.3", "confluent-kafka", "kafka-python-3"]


@pytest.fixture
def active_consumer(group_bootstrap: str) -> Iterator[Consumer]:
    """A confluent-kafka consumer of topic "t" in group "active", once it has partitions."""
    admin = AdminClient({"bootstrap.servers": group_bootstrap})
    admin.create_topics([NewTopic("t", 2, 1)])["t"].result(TIMEOUT_S)
    consumer = Consumer(
        {
            "bootstrap.servers": group_bootstrap,
            "group.id": "active",
            "session.timeout.ms": 6000,
            "client.id": "active-client",
        }
    )
    consumer.subscribe(["t"])
    deadline = time.monotonic() + TIMEOUT_S
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer got no partitions"
        consumer.poll(0.05)
    yield consumer
    consumer.close()


def errors(items: list[dict[str, Any]], key: str) -> dict[Any, str | None]:
    return {item[key]: item["error_name"] for item in items}


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_group_offsets_and_groups(
    group_bootstrap: str, active_consumer: Consumer, client: str
) -> None:
    def admin(op: str, **fields: Any) -> dict[str, Any]:
        job = {"op": op, "bootstrap": group_bootstrap, "timeout_ms": 15_000, **fields}
        return run_ok(client, job)

    def offline_offsets() -> dict[int, tuple[int, str]]:
        listed = admin("list_group_offsets", group="offline")["offsets"]
        assert {o["topic"] for o in listed} == {"t"}
        return {o["partition"]: (o["offset"], o["metadata"]) for o in listed}

    altered = admin(
        "alter_group_offsets",
        group="offline",
        offsets=[
            {"topic": "t", "partition": 0, "offset": 5, "metadata": "note"},
            {"topic": "t", "partition": 1, "offset": 7, "metadata": ""},
        ],
    )["offsets"]
    assert errors(altered, "partition") == {0: None, 1: None}
    assert offline_offsets() == {0: (5, "note"), 1: (7, "")}

    listed = admin("list_groups")["groups"]
    assert {g["group"]: g["state"] for g in listed} == {"offline": "Empty", "active": "Stable"}
    [active] = admin("describe_groups", groups=["active"])["groups"]
    assert (active["error_name"], active["state"], active["protocol"]) == (None, "Stable", "range")
    [member] = active["members"]
    assert member["client_id"] == "active-client"
    assert sorted(member["partitions"]) == [["t", 0], ["t", 1]]

    if "delete_group_offsets" in CAPABILITIES[client].ops:
        deleted = admin(
            "delete_group_offsets", group="offline", partitions=[{"topic": "t", "partition": 0}]
        )
        assert errors(deleted["partitions"], "partition") == {0: None}
        assert offline_offsets() == {1: (7, "")}
        refused = admin(
            "delete_group_offsets", group="active", partitions=[{"topic": "t", "partition": 0}]
        )
        assert errors(refused["partitions"], "partition") == {0: "GROUP_SUBSCRIBED_TO_TOPIC"}

    deleted_groups = admin("delete_groups", groups=["offline", "active", "nope"])["groups"]
    assert errors(deleted_groups, "group") == {
        "offline": None,
        "active": "NON_EMPTY_GROUP",
        "nope": "GROUP_ID_NOT_FOUND",
    }
    assert [g["group"] for g in admin("list_groups")["groups"]] == ["active"]
