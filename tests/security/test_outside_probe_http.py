"""The HTTP surfaces probed from outside, as a security reviewer would: guessing basic-auth
passwords on the Schema Registry and the console (each failure answered late, the Kafka
listener answering throughout), every registry endpoint as a SASL user without ACLs
(refused with 40301 or answered with nothing of anybody's), and cross-site writes to both."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.error import HTTPError
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest
from confluent_kafka.admin import AdminClient

from minibroker.registry.app import make_app
from minibroker.registry.decode import running_registry
from minibroker.testing.cluster import KafkaBroker
from minibroker.testing.security import secured_config
from tests.registry.http import CONTENT_TYPE, Registry

ADMIN = ("admin", "admin-secret")
MALLORY = ("mallory", "mallory-secret")
TOPIC = "orders"
SUBJECT = f"{TOPIC}-value"
SCHEMA = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}]})
FAILED_DELAY_S = 0.09
GENEROUS_S = 15.0
# Answers holding nobody's subjects or schemas, the same for every authenticated user.
PUBLIC = {"/", "/contexts", "/schemas/types", "/v1/metadata/id"}
FILTERED = {"/subjects", "/schemas", "/schemas/ids/{id}/subjects", "/schemas/ids/{id}/versions"}
SETTINGS = {"/config": "compatibility", "/mode": "mode"}


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    """The admin registered SUBJECT; mallory is a SASL user without any ACL."""
    with KafkaBroker(
        schema_registry=True, console=True, storage="memory", config=secured_config()
    ) as started:
        started.add_user(*MALLORY)
        started.create_topic(TOPIC)
        path = f"/subjects/{SUBJECT}/versions"
        assert call(started.schema_registry_url, "POST", path, ADMIN, {"schema": SCHEMA})[0] == 200
        yield started


def call(
    base: str,
    method: str,
    path: str,
    user: tuple[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    sent = dict(headers or {})
    if user is not None:
        sent["Authorization"] = "Basic " + base64.b64encode(":".join(user).encode()).decode()
    data = body
    if body is not None and not isinstance(body, bytes):
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", CONTENT_TYPE)
    request = Request(base + path, data=data, method=method, headers=sent)
    try:
        with urlopen(request, timeout=GENEROUS_S) as response:
            return response.status, response.read()
    except HTTPError as error:
        with error:
            return error.code, error.read()


def registry_routes(broker: KafkaBroker) -> list[tuple[str, str]]:
    """(method, path template) of every route the registry serves (HEAD runs GET's handler)."""
    node = broker.node(broker.node_ids[0])
    registry = running_registry(node)
    assert registry is not None
    app = make_app(node, registry)
    return sorted(
        {
            (route.method, route.resource.canonical)
            for route in app.router.routes()
            if route.method != "HEAD" and route.resource is not None
        }
    )


def filled(template: str, schema_id: int) -> str:
    return (
        template.replace("{subject}", SUBJECT)
        .replace("{version}", "1")
        .replace("{id}", str(schema_id))
    )


def body_for(template: str) -> dict[str, str]:
    for prefix, field in SETTINGS.items():
        if template.startswith(prefix):
            return {field: "NONE" if field == "compatibility" else "READONLY"}
    return {"schema": SCHEMA}


def test_http_password_guesses_are_answered_late_and_kafka_keeps_answering(
    broker: KafkaBroker,
) -> None:
    targets = [(broker.schema_registry_url, "/subjects"), (broker.console_url, "/api/overview")]
    for base, path in targets:
        for user in (("admin", "guess"), ("no-such-user", "guess")):
            started = time.monotonic()
            assert call(base, "GET", path, user)[0] == 401
            assert time.monotonic() - started >= FAILED_DELAY_S
    stop = threading.Event()
    guesses = [0] * 6
    not_refused: list[int] = []

    def guess(index: int) -> None:
        base, path = targets[index % 2]
        while not stop.is_set():
            status = call(base, "GET", path, ("admin", f"guess-{guesses[index]}"))[0]
            if status != 401:
                not_refused.append(status)
            guesses[index] += 1

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(len(guesses))]
    for thread in threads:
        thread.start()
    admin = AdminClient(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": ADMIN[0],
            "sasl.password": ADMIN[1],
        }
    )
    try:
        time.sleep(0.3)
        for _ in range(3):
            assert TOPIC in admin.list_topics(timeout=GENEROUS_S).topics
    finally:
        stop.set()
        for thread in threads:
            thread.join(GENEROUS_S)
    assert min(guesses) >= 1 and not_refused == []


def test_every_registry_endpoint_refuses_or_filters_a_user_without_acls(
    broker: KafkaBroker,
) -> None:
    base = broker.schema_registry_url
    schema_id = json.loads(call(base, "GET", f"/subjects/{SUBJECT}/versions/latest", ADMIN)[1])[
        "id"
    ]
    routes = registry_routes(broker)
    assert len(routes) >= 30
    for method, template in routes:
        path = filled(template, schema_id)
        body = body_for(template) if method in ("POST", "PUT") else None
        status, answer = call(base, method, path, MALLORY, body)
        if template in PUBLIC:
            assert status == 200 and SUBJECT.encode() not in answer, (method, template)
        elif template in FILTERED:
            assert (status, json.loads(answer)) == (200, []), (method, template)
        else:
            assert status == 403, (method, template, answer)
            assert json.loads(answer)["error_code"] == 40301, (method, template)
            assert json.loads(answer)["message"].startswith("User is denied operation ")
    assert call(base, "GET", "/subjects", ADMIN)[1] == json.dumps([SUBJECT]).encode()
    assert json.loads(call(base, "GET", "/config", ADMIN)[1]) == {"compatibilityLevel": "BACKWARD"}
    assert json.loads(call(base, "GET", "/mode", ADMIN)[1]) == {"mode": "READWRITE"}


def test_cross_site_writes_are_refused_by_the_registry_and_the_console(
    broker: KafkaBroker,
) -> None:
    evil = {"Origin": "http://evil.example"}
    registry = broker.schema_registry_url
    schema = json.dumps({"schema": json.dumps("string")}).encode()
    planted = "/subjects/planted-value/versions"
    admin = {"Authorization": "Basic " + base64.b64encode(":".join(ADMIN).encode()).decode()}
    # What a page on another site can send without a preflight: text/plain, or no type at all.
    text = {"Content-Type": "text/plain"}
    assert call(registry, "POST", planted, ADMIN, schema, {**evil, **text})[0] == 403
    untyped = Registry(registry).without_content_type("POST", planted, schema, {**evil, **admin})
    assert untyped.status == 403
    assert call(registry, "DELETE", f"/subjects/{SUBJECT}", ADMIN, headers=evil)[0] == 403
    assert call(registry, "POST", planted, ADMIN, schema, text)[0] == 415
    assert Registry(registry).without_content_type("POST", planted, schema, admin).status == 415
    assert call(registry, "GET", "/subjects", ADMIN)[1] == json.dumps([SUBJECT]).encode()

    console = broker.console_url
    form = urlencode({"name": "planted"}).encode()
    form_type = {"Content-Type": "application/x-www-form-urlencoded"}
    assert call(console, "POST", "/topics", ADMIN, form, {**evil, **form_type})[0] == 403
    api = {"name": "planted"}
    assert call(console, "POST", "/api/topics", ADMIN, api, evil)[0] == 403
    assert call(console, "DELETE", f"/api/topics/{TOPIC}", ADMIN, headers=evil)[0] == 403
    rebound = {"Host": "attacker.example"}
    assert call(console, "GET", "/api/overview", ADMIN, headers=rebound)[0] == 403
    assert "planted" not in broker.topics() and TOPIC in broker.topics()
