"""The Schema Registry's REST API over real HTTP against a real broker: Confluent's paths,
answers, error codes and messages, soft and hard deletes, references, config and mode, the
compatibility levels (Avro here; each format's own rules are in test_format_*), what is
stored in `_schemas` (read back by a real Kafka client), and bad input answered 4xx."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.security import secured_config
from tests.registry.http import CONTENT_TYPE, Registry


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(schema_registry=True) as started:
        yield started


@pytest.fixture(scope="module")
def registry(broker: KafkaBroker) -> Registry:
    return Registry(broker.schema_registry_url)


@pytest.fixture
def subject() -> str:
    return f"subject-{uuid.uuid4().hex[:10]}"


def record(*fields: dict[str, Any], name: str = "User") -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


NAME = {"name": "name", "type": "string"}
AGE = {"name": "age", "type": "int"}
AGE_DEFAULT = {"name": "age", "type": "int", "default": 0}
EMAIL_DEFAULT = {"name": "email", "type": ["null", "string"], "default": None}


def test_register_then_read_by_id_subject_and_version(registry: Registry, subject: str) -> None:
    registered = registry.register(subject, record(NAME))
    assert registered.status == 200
    assert registered.content_type == CONTENT_TYPE
    schema_id = registered.json["id"]
    canonical = '{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}'
    assert registry.get(f"/schemas/ids/{schema_id}").json == {"schema": canonical}
    assert registry.get(f"/schemas/ids/{schema_id}/schema").json == record(NAME)
    assert registry.get(f"/subjects/{subject}/versions").json == [1]
    for version in ("1", "latest", "-1"):
        assert registry.get(f"/subjects/{subject}/versions/{version}").json == {
            "subject": subject,
            "version": 1,
            "id": schema_id,
            "schema": canonical,
        }
    assert subject in registry.get("/subjects").json
    assert registry.get(f"/schemas/ids/{schema_id}/versions").json == [
        {"subject": subject, "version": 1}
    ]
    assert registry.get("/schemas/types").json == ["JSON", "PROTOBUF", "AVRO"]


def test_the_same_schema_keeps_its_id_and_version_across_layouts_and_subjects(
    registry: Registry, subject: str
) -> None:
    name = f"Only{uuid.uuid4().hex}"
    first = registry.register(subject, record(NAME, name=name)).json["id"]
    reformatted = json.dumps({"fields": [{"type": "string", "name": "name"}], "name": name,
                              "type": "record"}, indent=4)  # fmt: skip
    assert registry.register(subject, reformatted).json["id"] == first
    assert registry.get(f"/subjects/{subject}/versions").json == [1]
    assert registry.register(subject + "-other", record(NAME, name=name)).json["id"] == first
    assert registry.get(f"/schemas/ids/{first}/subjects").json == sorted(
        [subject, subject + "-other"]
    )
    looked_up = registry.post(f"/subjects/{subject}", {"schema": reformatted})
    assert looked_up.status == 200
    assert (looked_up.json["id"], looked_up.json["version"]) == (first, 1)


def test_a_new_schema_gets_a_new_id_and_the_next_version(registry: Registry, subject: str) -> None:
    first = registry.register(subject, record(NAME)).json["id"]
    second = registry.register(subject, record(NAME, AGE_DEFAULT)).json["id"]
    assert second > first
    assert registry.get(f"/subjects/{subject}/versions").json == [1, 2]
    assert registry.get(f"/subjects/{subject}/versions/latest").json["id"] == second


def test_not_found_answers(registry: Registry, subject: str) -> None:
    missing = registry.get(f"/subjects/{subject}/versions")
    assert (missing.status, missing.error_code) == (404, 40401)
    assert missing.message == f"Subject '{subject}' not found."
    assert missing.content_type == CONTENT_TYPE
    registry.register(subject, record(NAME))
    version = registry.get(f"/subjects/{subject}/versions/7")
    assert (version.status, version.error_code, version.message) == (
        404,
        40402,
        "Version 7 not found.",
    )
    schema = registry.get("/schemas/ids/987654")
    assert (schema.status, schema.error_code, schema.message) == (
        404,
        40403,
        "Schema 987654 not found",
    )
    lookup = registry.post(f"/subjects/{subject}", {"schema": json.dumps(record(AGE))})
    assert (lookup.status, lookup.error_code) == (404, 40403)


@pytest.mark.parametrize("version", ["0", "-2", "x", "2147483648"])
def test_an_invalid_version_is_42202(registry: Registry, subject: str, version: str) -> None:
    registry.register(subject, record(NAME))
    answer = registry.get(f"/subjects/{subject}/versions/{version}")
    assert (answer.status, answer.error_code) == (422, 42202)
    assert f"'{version}' is not a valid version id" in answer.message


@pytest.mark.parametrize(
    "body",
    [
        {"schema": "{not json"},
        {"schema": json.dumps({"type": "record", "name": "R"})},
        {"schema": json.dumps({"type": "nonsense"})},
        {"schema": json.dumps(record({"name": "a", "type": "Undefined"}))},
        {"schema": ""},
        {},
        {"schema": 5},
        {"schema": json.dumps(record(NAME)), "schemaType": "XML"},
        {"schema": json.dumps(record(NAME)), "references": "no"},
        {"schema": json.dumps(record(NAME)), "references": [{"name": "x", "subject": "s"}]},
    ],
)
def test_an_invalid_schema_is_42201(registry: Registry, subject: str, body: Any) -> None:
    answer = registry.post(f"/subjects/{subject}/versions", body)
    assert (answer.status, answer.error_code) == (422, 42201)
    assert answer.message
    assert registry.get(f"/subjects/{subject}/versions").error_code == 40401


def test_an_unknown_reference_is_42201(registry: Registry, subject: str) -> None:
    answer = registry.register(
        subject,
        record({"name": "address", "type": "Address"}),
        references=[{"name": "Address", "subject": subject + "-address", "version": 1}],
    )
    assert (answer.status, answer.error_code) == (422, 42201)
    assert "not found" in answer.message


def test_references_resolve_and_protect_what_they_reference(
    registry: Registry, subject: str
) -> None:
    address_subject = subject + "-address"
    address = record({"name": "street", "type": "string"}, name="Address")
    address_id = registry.register(address_subject, address).json["id"]
    reference = {"name": "Address", "subject": address_subject, "version": 1}
    user = registry.register(
        subject, record(NAME, {"name": "address", "type": "Address"}), references=[reference]
    )
    assert user.status == 200, user.json
    got = registry.get(f"/subjects/{subject}/versions/1").json
    assert got["references"] == [reference]
    assert registry.get(f"/schemas/ids/{user.json['id']}").json["references"] == [reference]
    assert registry.get(f"/subjects/{address_subject}/versions/1/referencedby").json == [
        user.json["id"]
    ]
    refused = registry.delete(f"/subjects/{address_subject}/versions/1")
    assert (refused.status, refused.error_code) == (422, 42206)
    assert registry.delete(f"/subjects/{address_subject}").error_code == 42206
    assert registry.delete(f"/subjects/{subject}").json == [1]
    assert registry.delete(f"/subjects/{address_subject}").json == [1]
    assert registry.get(f"/schemas/ids/{address_id}").status == 200


def test_soft_then_permanent_delete_of_a_version(registry: Registry, subject: str) -> None:
    registry.register(subject, record(NAME))
    registry.register(subject, record(NAME, AGE_DEFAULT))
    early = registry.delete(f"/subjects/{subject}/versions/1?permanent=true")
    assert (early.status, early.error_code) == (404, 40407)
    assert registry.delete(f"/subjects/{subject}/versions/1").json == 1
    again = registry.delete(f"/subjects/{subject}/versions/1")
    assert (again.status, again.error_code) == (404, 40406)
    assert registry.get(f"/subjects/{subject}/versions").json == [2]
    assert registry.get(f"/subjects/{subject}/versions?deleted=true").json == [1, 2]
    assert registry.get(f"/subjects/{subject}/versions?deletedOnly=true").json == [1]
    assert registry.get(f"/subjects/{subject}/versions/1").error_code == 40402
    assert registry.get(f"/subjects/{subject}/versions/1?deleted=true").json["version"] == 1
    assert registry.delete(f"/subjects/{subject}/versions/1?permanent=true").json == 1
    assert registry.get(f"/subjects/{subject}/versions?deleted=true").json == [2]


def test_soft_then_permanent_delete_of_a_subject(registry: Registry, subject: str) -> None:
    schema_id = registry.register(subject, record(NAME)).json["id"]
    registry.register(subject, record(NAME, AGE_DEFAULT))
    early = registry.delete(f"/subjects/{subject}?permanent=true")
    assert (early.status, early.error_code) == (404, 40405)
    assert registry.delete(f"/subjects/{subject}").json == [1, 2]
    again = registry.delete(f"/subjects/{subject}")
    assert (again.status, again.error_code) == (404, 40404)
    assert subject not in registry.get("/subjects").json
    assert subject in registry.get("/subjects?deleted=true").json
    assert subject in registry.get("/subjects?deletedOnly=true").json
    assert registry.get(f"/schemas/ids/{schema_id}").status == 200
    assert registry.delete(f"/subjects/{subject}?permanent=true").json == [1, 2]
    assert subject not in registry.get("/subjects?deleted=true").json
    assert registry.delete(f"/subjects/{subject}").error_code == 40401
    registered = registry.register(subject, record(NAME))
    assert registry.get(f"/subjects/{subject}/versions").json == [1]
    assert registered.json["id"] == schema_id


def test_global_and_subject_compatibility(registry: Registry, subject: str) -> None:
    assert registry.get("/config").json == {"compatibilityLevel": "BACKWARD"}
    unset = registry.get(f"/config/{subject}")
    assert (unset.status, unset.error_code) == (404, 40408)
    fallback = registry.get(f"/config/{subject}?defaultToGlobal=true")
    assert fallback.json == {"compatibilityLevel": "BACKWARD"}
    assert registry.put(f"/config/{subject}", {"compatibility": "full"}).json == {
        "compatibility": "FULL"
    }
    assert registry.get(f"/config/{subject}").json == {"compatibilityLevel": "FULL"}
    bad = registry.put(f"/config/{subject}", {"compatibility": "SIDEWAYS"})
    assert (bad.status, bad.error_code) == (422, 42203)
    assert registry.delete(f"/config/{subject}").json == {"compatibilityLevel": "FULL"}
    assert registry.get(f"/config/{subject}").error_code == 40408


def test_subject_and_global_mode(registry: Registry, subject: str) -> None:
    assert registry.get("/mode").json == {"mode": "READWRITE"}
    assert registry.get(f"/mode/{subject}").error_code == 40409
    registry.register(subject, record(NAME))
    assert registry.put(f"/mode/{subject}", {"mode": "READONLY"}).json == {"mode": "READONLY"}
    refused = registry.register(subject, record(NAME, AGE_DEFAULT))
    assert (refused.status, refused.error_code) == (422, 42205)
    assert refused.message == f"Subject {subject} is in read-only mode"
    assert registry.delete(f"/subjects/{subject}").error_code == 42205
    bad = registry.put(f"/mode/{subject}", {"mode": "SOMETIMES"})
    assert (bad.status, bad.error_code) == (422, 42204)
    assert registry.delete(f"/mode/{subject}").json == {"mode": "READONLY"}
    assert registry.register(subject, record(NAME, AGE_DEFAULT)).status == 200


def test_import_mode_keeps_given_ids(broker: KafkaBroker, tmp_path: Any) -> None:
    with KafkaBroker(schema_registry=True) as fresh:
        registry = Registry(fresh.schema_registry_url)
        assert registry.register("s", record(NAME), id=40).error_code == 42205
        assert registry.put("/mode", {"mode": "IMPORT"}).json == {"mode": "IMPORT"}
        imported = registry.register("s", record(NAME), id=40, version=3)
        assert imported.json == {"id": 40}
        assert registry.get("/subjects/s/versions").json == [3]
        clash = registry.register("t", record(AGE), id=40)
        assert (clash.status, clash.error_code) == (422, 42205)
        registry.put("/mode", {"mode": "READWRITE"})
        refused = registry.put("/mode", {"mode": "IMPORT"})
        assert refused.error_code == 42205
        assert registry.put("/mode?force=true", {"mode": "IMPORT"}).status == 200


def test_backward_refuses_a_field_without_default_and_none_accepts_it(
    registry: Registry, subject: str
) -> None:
    registry.register(subject, record(NAME))
    refused = registry.register(subject, record(NAME, AGE))
    assert (refused.status, refused.error_code) == (409, 409)
    assert refused.message.startswith(
        f'Schema being registered is incompatible with an earlier schema for subject "{subject}"'
    )
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in refused.message
    assert "{compatibility: 'BACKWARD'}" in refused.message
    assert registry.register(subject, record(NAME, AGE_DEFAULT)).status == 200
    registry.put(f"/config/{subject}", {"compatibility": "NONE"})
    assert registry.register(subject, record(NAME, AGE, name="User")).status == 200
    assert registry.get(f"/subjects/{subject}/versions").json == [1, 2, 3]


@pytest.mark.parametrize(
    ("level", "old", "new", "compatible"),
    [
        ("BACKWARD", record(NAME, AGE), record(NAME), True),
        ("FORWARD", record(NAME, AGE), record(NAME), False),
        ("FORWARD", record(NAME), record(NAME, AGE), True),
        ("FULL", record(NAME), record(NAME, AGE), False),
        ("FULL", record(NAME), record(NAME, EMAIL_DEFAULT), True),
        ("NONE", record(NAME), {"type": "string"}, True),
        ("BACKWARD", record(NAME), {"type": "string"}, False),
    ],
)
def test_compatibility_levels(
    registry: Registry,
    subject: str,
    level: str,
    old: dict[str, Any],
    new: dict[str, Any],
    compatible: bool,
) -> None:
    registry.put(f"/config/{subject}", {"compatibility": level})
    registry.register(subject, old)
    check = registry.post(
        f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
        {"schema": json.dumps(new)},
    )
    assert check.json["is_compatible"] is compatible
    assert bool(check.json["messages"]) is not compatible
    assert (registry.register(subject, new).status == 200) is compatible


def test_transitive_levels_check_every_live_version(registry: Registry, subject: str) -> None:
    registry.put(f"/config/{subject}", {"compatibility": "BACKWARD_TRANSITIVE"})
    registry.register(subject, record(NAME))
    registry.register(subject, record(NAME, AGE_DEFAULT))
    # Reads v2's data (age present) but not v1's (no age, and none by default here).
    third = record(NAME, AGE)
    all_versions = registry.post(f"/compatibility/subjects/{subject}/versions", {
        "schema": json.dumps(third)})  # fmt: skip
    assert all_versions.json == {"is_compatible": False}
    latest = registry.post(f"/compatibility/subjects/{subject}/versions/latest", {
        "schema": json.dumps(third)})  # fmt: skip
    assert latest.json == {"is_compatible": True}
    assert registry.register(subject, third).error_code == 409
    registry.put(f"/config/{subject}", {"compatibility": "BACKWARD"})
    assert registry.register(subject, third).status == 200


def test_compatibility_against_unknown_subject_or_version(registry: Registry, subject: str) -> None:
    body = {"schema": json.dumps(record(NAME))}
    missing = registry.post(f"/compatibility/subjects/{subject}/versions/latest", body)
    assert missing.error_code == 40401
    registry.register(subject, record(NAME))
    assert registry.post(f"/compatibility/subjects/{subject}/versions/9", body).error_code == 40402


def test_list_schemas(registry: Registry, subject: str) -> None:
    registry.register(subject, record(NAME))
    registry.register(subject, record(NAME, AGE_DEFAULT))
    listed = registry.get(f"/schemas?subjectPrefix={subject}").json
    assert [(item["subject"], item["version"]) for item in listed] == [(subject, 1), (subject, 2)]
    latest = registry.get(f"/schemas?subjectPrefix={subject}&latestOnly=true").json
    assert [item["version"] for item in latest] == [2]


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/vnd.schemaregistry.v1+json", 200),
        ("application/vnd.schemaregistry+json", 200),
        ("application/json", 200),
        ("application/octet-stream", 200),
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        (None, 415),
    ],
)
def test_request_content_types(
    registry: Registry, subject: str, content_type: str | None, status: int
) -> None:
    body = json.dumps({"schema": json.dumps(record(NAME))}).encode()
    path = f"/subjects/{subject}/versions"
    if content_type is None:
        answer = registry.without_content_type("POST", path, body)
    else:
        answer = registry.call("POST", path, raw=body, content_type=content_type)
    assert answer.status == status
    if status == 415:
        assert answer.json == {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}


def test_writes_from_another_sites_page_are_refused(
    broker: KafkaBroker, registry: Registry, subject: str
) -> None:
    body = json.dumps({"schema": json.dumps(record(NAME))}).encode()
    path = f"/subjects/{subject}/versions"
    evil = {"Origin": "http://evil.example"}
    answers = [registry.without_content_type("POST", path, body, evil)]
    for content_type in ("text/plain", CONTENT_TYPE):
        answers.append(
            registry.call("POST", path, raw=body, content_type=content_type, headers=evil)
        )
    for answer in answers:
        assert (answer.status, answer.json) == (
            403,
            {"error_code": 403, "message": "cross-site request refused"},
        )
    fetched = {"Sec-Fetch-Site": "cross-site"}
    assert registry.call("POST", path, raw=body, headers=fetched).status == 403
    assert registry.call("PUT", "/config", {"compatibility": "NONE"}, headers=evil).status == 403
    assert registry.get(f"/subjects/{subject}/versions").error_code == 40401
    own = {"Origin": broker.schema_registry_url}
    registered = registry.call("POST", path, raw=body, headers=own)
    assert registered.status == 200 and set(registered.json) == {"id"}
    assert registry.call("DELETE", f"/subjects/{subject}", headers=evil).status == 403
    assert registry.get(f"/subjects/{subject}/versions").json == [1]
    assert registry.call("GET", f"/subjects/{subject}/versions", headers=evil).status == 200


def test_malformed_bodies_paths_and_methods(registry: Registry, subject: str) -> None:
    malformed = registry.call("POST", f"/subjects/{subject}/versions", raw=b"{nope")
    assert (malformed.status, malformed.error_code) == (400, 400)
    not_object = registry.call("POST", f"/subjects/{subject}/versions", raw=b"[1]")
    assert not_object.status == 422
    unknown = registry.get("/no/such/path")
    assert unknown.json == {"error_code": 404, "message": "HTTP 404 Not Found"}
    method = registry.call("PATCH", "/config")
    assert (method.status, method.error_code) == (405, 405)
    bad_id = registry.get("/schemas/ids/abc")
    assert bad_id.status == 404


def test_a_huge_body_is_413_and_the_registry_keeps_serving(
    registry: Registry, subject: str
) -> None:
    huge = b'{"schema": "' + b"x" * (17 << 20) + b'"}'
    answer = registry.call("POST", f"/subjects/{subject}/versions", raw=huge)
    assert (answer.status, answer.error_code) == (413, 413)
    assert registry.register(subject, record(NAME)).status == 200


def test_schemas_topic_holds_confluents_records(broker: KafkaBroker, registry: Registry) -> None:
    subject = f"stored-{uuid.uuid4().hex[:8]}"
    schema_id = registry.register(subject, record(NAME)).json["id"]
    registry.put(f"/config/{subject}", {"compatibility": "FULL"})
    records = _read_schemas_topic(broker)
    assert records[
        json.dumps({"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1})
    ] == {
        "subject": subject,
        "version": 1,
        "id": schema_id,
        "schema": '{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}',
        "deleted": False,
    }
    assert records[json.dumps({"keytype": "CONFIG", "subject": subject, "magic": 0})] == {
        "compatibilityLevel": "FULL"
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "_schemas")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["cleanup.policy"].value == "compact"


def _read_schemas_topic(broker: KafkaBroker) -> dict[str, Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    consumer.subscribe(["_schemas"])
    found: dict[str, Any] = {}
    try:
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of _schemas within 10 s"
            if message.error():
                break
            key = json.dumps(json.loads(message.key()))
            found[key] = None if message.value() is None else json.loads(message.value())
    finally:
        consumer.close()
    return found


def test_with_sasl_the_registry_asks_for_a_sasl_users_credentials() -> None:
    with KafkaBroker(schema_registry=True, storage="memory", config=secured_config()) as broker:
        anonymous = Registry(broker.schema_registry_url)
        refused = anonymous.get("/subjects")
        assert (refused.status, refused.error_code) == (401, 401)
        wrong = anonymous.call("GET", "/subjects", headers={"Authorization": _basic("admin", "x")})
        assert wrong.status == 401
        admin = {"Authorization": _basic("admin", "admin-secret")}
        assert anonymous.call("GET", "/subjects", headers=admin).json == []
        client = SchemaRegistryClient(
            {"url": broker.schema_registry_url, "basic.auth.user.info": "admin:admin-secret"}
        )
        assert client.register_schema("secured", Schema('"string"', "AVRO")) == 1


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
