"""The Schema Registry under the broker's authorizer, through confluent-kafka's
SchemaRegistryClient as two SASL users with different ACLs: a subject `<topic>-key|value` is
read with DESCRIBE on its topic, registered with WRITE, deleted with DELETE, configured with
DESCRIBE_CONFIGS / ALTER_CONFIGS; subjects naming no topic and the global config and mode take
the cluster's rights; listings show only what the user may describe; refusals are 403 with
Confluent's 40301."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.security import secured_config
from tests.registry.http import Registry

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
BOB = ("bob", "bob-secret")


def avro(name: str, *fields: str) -> Schema:
    document = {
        "type": "record",
        "name": name,
        "fields": [{"name": field, "type": "string"} for field in fields],
    }
    return Schema(json.dumps(document), "AVRO")


SHARED = avro("Shared", "id")


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    """Admin (super user) set the global compatibility NONE and registered `orders-value`,
    `payments-value` (both also holding the SHARED schema), `secrets-key` and
    `com.example.Event` (a subject naming no topic). Alice may write and describe `orders`;
    Bob may describe `payments`."""
    with KafkaBroker(schema_registry=True, storage="memory", config=secured_config()) as started:
        started.add_user(*ALICE)
        started.add_user(*BOB)
        started.add_acl("User:alice", "WRITE", topic="orders")
        started.add_acl("User:bob", "DESCRIBE", topic="payments")
        admin = client(started, ADMIN)
        admin.set_compatibility(level="NONE")
        admin.register_schema("orders-value", avro("Order", "id"))
        admin.register_schema("payments-value", avro("Payment", "id"))
        admin.register_schema("secrets-key", avro("Secret", "id"))
        admin.register_schema("com.example.Event", avro("Event", "id"))
        for subject in ("orders-value", "payments-value"):
            admin.register_schema(subject, SHARED)
        yield started


def client(broker: KafkaBroker, user: tuple[str, str]) -> SchemaRegistryClient:
    return SchemaRegistryClient(
        {"url": broker.schema_registry_url, "basic.auth.user.info": ":".join(user)}
    )


def http(broker: KafkaBroker, user: tuple[str, str]) -> Callable[..., Any]:
    """A raw call as `user`: (method, path[, body]) -> Answer."""
    token = base64.b64encode(":".join(user).encode()).decode()
    registry = Registry(broker.schema_registry_url)

    def call(method: str, path: str, body: Any = None) -> Any:
        return registry.call(method, path, body, headers={"Authorization": f"Basic {token}"})

    return call


def refused(action: Callable[[], object], message: str) -> None:
    with pytest.raises(SchemaRegistryError) as raised:
        action()
    assert (raised.value.http_status_code, raised.value.error_code) == (403, 40301)
    assert raised.value.error_message == message


def test_listings_show_only_what_the_user_may_describe(broker: KafkaBroker) -> None:
    assert client(broker, ALICE).get_subjects() == ["orders-value"]
    assert client(broker, BOB).get_subjects() == ["payments-value"]
    assert client(broker, ADMIN).get_subjects() == [
        "com.example.Event",
        "orders-value",
        "payments-value",
        "secrets-key",
    ]
    bob = http(broker, BOB)
    assert {item["subject"] for item in bob("GET", "/schemas").json} == {"payments-value"}
    shared_id = client(broker, ADMIN).get_latest_version("orders-value").schema_id
    assert bob("GET", f"/schemas/ids/{shared_id}/subjects").json == ["payments-value"]
    assert bob("GET", f"/schemas/ids/{shared_id}/versions").json == [
        {"subject": "payments-value", "version": 2}
    ]


def test_reading_a_subject_needs_describe_on_its_topic(broker: KafkaBroker) -> None:
    bob = client(broker, BOB)
    assert bob.get_latest_version("payments-value").version == 2
    assert bob.get_versions("payments-value") == [1, 2]
    denied = "User is denied operation Describe on Subject: orders-value"
    refused(lambda: bob.get_latest_version("orders-value"), denied)
    refused(lambda: bob.get_versions("orders-value"), denied)
    refused(lambda: bob.lookup_schema("orders-value", SHARED), denied)
    refused(lambda: bob.test_compatibility("orders-value", SHARED), denied)
    refused(
        lambda: bob.get_latest_version("no-such-topic-value"),
        "User is denied operation Describe on Subject: no-such-topic-value",
    )


def test_a_schema_id_is_readable_through_any_subject_the_user_may_describe(
    broker: KafkaBroker,
) -> None:
    admin = client(broker, ADMIN)
    shared_id = admin.get_latest_version("payments-value").schema_id
    orders_only = admin.get_version("orders-value", 1).schema_id
    assert shared_id is not None and orders_only is not None
    shared = client(broker, BOB).get_schema(shared_id).schema_str
    assert shared is not None and json.loads(shared)["name"] == "Shared"
    refused(
        lambda: client(broker, BOB).get_schema(orders_only),
        f"User is denied operation Describe on Schema: {orders_only}",
    )
    assert http(broker, BOB)("GET", f"/schemas/ids/{orders_only}/schema").status == 403
    assert http(broker, BOB)("GET", "/schemas/ids/999").error_code == 40403


def test_registering_needs_write_and_deleting_needs_delete(broker: KafkaBroker) -> None:
    alice, bob = client(broker, ALICE), client(broker, BOB)
    assert alice.register_schema("orders-key", avro("OrderKey", "id")) > 0
    refused(
        lambda: bob.register_schema("payments-key", avro("PaymentKey", "id")),
        "User is denied operation Write on Subject: payments-key",
    )
    refused(
        lambda: alice.delete_subject("orders-key"),
        "User is denied operation Delete on Subject: orders-key",
    )
    refused(
        lambda: alice.delete_version("orders-key", 1),
        "User is denied operation Delete on Subject: orders-key",
    )
    broker.add_acl("User:alice", "DELETE", topic="orders")
    assert alice.delete_subject("orders-key") == [1]
    assert alice.delete_subject("orders-key", permanent=True) == [1]
    assert "payments-key" not in client(broker, ADMIN).get_subjects()


def test_subjects_naming_no_topic_need_the_clusters_rights(broker: KafkaBroker) -> None:
    alice = client(broker, ALICE)
    refused(
        lambda: alice.get_latest_version("com.example.Event"),
        "User is denied operation Describe on Subject: com.example.Event",
    )
    refused(
        lambda: alice.register_schema("com.example.Other", avro("Other", "id")),
        "User is denied operation Write on Subject: com.example.Other",
    )
    broker.add_acl("User:bob", "ALTER", cluster=True)
    try:
        bob = client(broker, BOB)
        assert bob.get_latest_version("com.example.Event").version == 1
        assert bob.register_schema("com.example.Other", avro("Other", "id")) > 0
        assert "com.example.Event" in bob.get_subjects()
        assert "orders-value" not in bob.get_subjects()
    finally:
        broker.remove_acls(principal="User:bob", cluster=True)


def test_config_and_mode_need_the_config_rights(broker: KafkaBroker) -> None:
    alice = client(broker, ALICE)
    on_cluster = "on Cluster: kafka-cluster"
    refused(
        lambda: alice.get_compatibility(), f"User is denied operation DescribeConfigs {on_cluster}"
    )
    refused(
        lambda: alice.set_compatibility(level="NONE"),
        f"User is denied operation AlterConfigs {on_cluster}",
    )
    refused(
        lambda: alice.get_global_mode(), f"User is denied operation DescribeConfigs {on_cluster}"
    )
    refused(
        lambda: alice.update_global_mode("READONLY"),
        f"User is denied operation AlterConfigs {on_cluster}",
    )
    refused(
        lambda: alice.set_compatibility("orders-value", "NONE"),
        "User is denied operation AlterConfigs on Subject: orders-value",
    )
    refused(
        lambda: alice.get_mode("orders-value"),
        "User is denied operation DescribeConfigs on Subject: orders-value",
    )
    broker.add_acl("User:alice", "ALTER_CONFIGS", topic="orders")
    alice.set_compatibility("orders-value", "FULL")
    assert alice.get_compatibility("orders-value") == "FULL"
    removed = alice.delete_config("orders-value").compatibility_level
    assert removed is not None and removed.value == "FULL"
    assert alice.update_mode("orders-value", "READWRITE") == "READWRITE"
    assert http(broker, ALICE)("DELETE", "/mode/orders-value").status == 200
    refused(
        lambda: alice.delete_config(),
        f"User is denied operation AlterConfigs {on_cluster}",
    )
    broker.add_acl("User:alice", "DESCRIBE_CONFIGS", cluster=True)
    assert alice.get_compatibility() == "NONE"
    assert client(broker, ADMIN).get_compatibility() == "NONE"
    assert client(broker, ADMIN).get_global_mode() == "READWRITE"


def test_referenced_by_lists_only_describable_referrers(broker: KafkaBroker) -> None:
    admin = client(broker, ADMIN)
    admin.register_schema("common-value", avro("Base", "id"))
    reference = [SchemaReference("Base", "common-value", 1)]
    ids = {}
    for topic in ("invoices", "receipts"):
        document = {"type": "record", "name": topic, "fields": [{"name": "b", "type": "Base"}]}
        schema = Schema(json.dumps(document), "AVRO", reference)
        ids[topic] = admin.register_schema(f"{topic}-value", schema)
    assert admin.get_referenced_by("common-value", 1) == sorted(ids.values())
    for topic in ("common", "receipts"):
        broker.add_acl("User:bob", "DESCRIBE", topic=topic)
    try:
        assert client(broker, BOB).get_referenced_by("common-value", 1) == [ids["receipts"]]
    finally:
        for topic in ("common", "receipts"):
            broker.remove_acls(principal="User:bob", topic=topic)
    refused(
        lambda: client(broker, BOB).get_referenced_by("common-value", 1),
        "User is denied operation Describe on Subject: common-value",
    )


def test_allow_all_acls_and_super_users_see_everything(broker: KafkaBroker) -> None:
    broker.add_user("carol", "carol-secret")
    broker.add_acl("User:carol", "ALL", topic="*")
    broker.add_acl("User:carol", "ALL", cluster=True)
    carol = client(broker, ("carol", "carol-secret"))
    assert carol.get_subjects() == client(broker, ADMIN).get_subjects()
    carol.set_compatibility(level="BACKWARD")
    assert carol.get_compatibility() == "BACKWARD"


def test_without_acls_allow_everyone_if_no_acl_found_lets_everyone_in() -> None:
    config = {**secured_config(), "allow.everyone.if.no.acl.found": "true"}
    with KafkaBroker(schema_registry=True, storage="memory", config=config) as broker:
        broker.add_user(*BOB)
        bob = client(broker, BOB)
        assert bob.register_schema("anything-value", avro("A", "id")) == 1
        assert bob.get_subjects() == ["anything-value"]
        bob.set_compatibility(level="NONE")
        assert bob.get_compatibility() == "NONE"


def test_without_an_authorizer_nothing_is_checked() -> None:
    with KafkaBroker(schema_registry=True, storage="memory") as broker:
        anonymous = SchemaRegistryClient({"url": broker.schema_registry_url})
        assert anonymous.register_schema("com.example.Free", avro("Free", "id")) == 1
        assert anonymous.update_global_mode("READONLY") == "READONLY"
