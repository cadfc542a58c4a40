"""The registry's REST API (aiohttp, on the broker's event loop), in Confluent's shapes.

Bodies are JSON with any of Confluent's request content types; every answer is
`application/vnd.schemaregistry.v1+json`; errors are `{"error_code", "message"}` (errors.py),
including 404/405/413/415 for unknown paths, methods, oversized bodies and other content types.
With SASL on the broker's listeners every request needs HTTP basic credentials of a SASL user.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from minibroker.console.auth import Credentials, basic_credentials, sasl_required
from minibroker.registry import errors
from minibroker.registry.formats import SCHEMA_TYPES
from minibroker.registry.records import SchemaRecord
from minibroker.registry.service import SchemaRegistry
from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
REQUEST_CONTENT_TYPES = frozenset(
    {
        "application/vnd.schemaregistry.v1+json",
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    }
)
MAX_BODY_BYTES = 16 << 20
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RegistryState:
    def __init__(self, broker: Broker, registry: SchemaRegistry) -> None:
        self.broker = broker
        self.registry = registry
        self.credentials = Credentials(broker)


STATE_KEY = web.AppKey("registry", RegistryState)


def _registry(request: web.Request) -> SchemaRegistry:
    return request.app[STATE_KEY].registry


def reply(document: Any, status: int = 200) -> web.Response:
    return raw_reply(json.dumps(document), status)


def raw_reply(text: str, status: int = 200) -> web.Response:
    return web.Response(body=text.encode(), status=status, headers={"Content-Type": CONTENT_TYPE})


def _error_reply(error_code: int, message: str, **headers: str) -> web.Response:
    response = reply({"error_code": error_code, "message": message}, int(str(error_code)[:3]))
    response.headers.update(headers)
    return response


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.RegistryError as exc:
        return _error_reply(exc.error_code, exc.message)
    except web.HTTPException as exc:
        return _error_reply(exc.status, f"HTTP {exc.status} {exc.reason}")
    except Exception:
        log.exception("schema registry: %s %s failed", request.method, request.path)
        return _error_reply(50001, "Error in the backend datastore")


@web.middleware
async def _authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    if sasl_required(state.broker):
        credentials = basic_credentials(request.headers.get("Authorization"))
        if credentials is None or not state.credentials.valid(*credentials):
            return _error_reply(401, "Unauthorized", **{"WWW-Authenticate": 'Basic realm="SR"'})
    return await handler(request)


async def _body(request: web.Request) -> dict[str, Any]:
    if request.content_type not in REQUEST_CONTENT_TYPES and request.headers.get("Content-Type"):
        raise errors.RegistryError(415, "HTTP 415 Unsupported Media Type")
    raw = await request.read()
    try:
        document = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"Unrecognized request body: {exc}") from exc
    if not isinstance(document, dict):
        raise errors.RegistryError(422, "Unprocessable Entity: a JSON object is expected")
    return document


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


def _schema_id(request: web.Request) -> int:
    text = request.match_info["id"]
    try:
        return int(text)
    except ValueError:
        raise errors.RegistryError(404, f"HTTP 404 Not Found: schema id {text!r}") from None


def _schema_json(record: SchemaRecord, schema: str) -> dict[str, Any]:
    document: dict[str, Any] = {}
    if record.schema_type != "AVRO":
        document["schemaType"] = record.schema_type
    if record.references:
        document["references"] = [reference.to_json() for reference in record.references]
    document["schema"] = schema
    return document


def _version_json(record: SchemaRecord, schema: str) -> dict[str, Any]:
    return {
        "subject": record.subject,
        "version": record.version,
        "id": record.schema_id,
        **_schema_json(record, schema),
    }


# Schemas by id.


async def schema_types(request: web.Request) -> web.Response:
    return reply(list(SCHEMA_TYPES))


async def schema_by_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = registry.schema_by_id(_schema_id(request))
    return reply(
        _schema_json(record, await registry.formatted(record, request.query.get("format")))
    )


async def raw_schema_by_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = registry.schema_by_id(_schema_id(request))
    text = await registry.formatted(record, request.query.get("format"))
    return raw_reply(text)


async def subjects_of_id(request: web.Request) -> web.Response:
    records = _registry(request).versions_of_id(_schema_id(request), _flag(request, "deleted"))
    return reply(sorted({record.subject for record in records}))


async def versions_of_id(request: web.Request) -> web.Response:
    records = _registry(request).versions_of_id(_schema_id(request), _flag(request, "deleted"))
    return reply([{"subject": r.subject, "version": r.version} for r in records])


async def list_schemas(request: web.Request) -> web.Response:
    registry = _registry(request)
    prefix = request.query.get("subjectPrefix", "")
    deleted, latest_only = _flag(request, "deleted"), _flag(request, "latestOnly")
    found = []
    for subject in registry.subjects(prefix, deleted, False):
        records = registry.store.versions(subject, deleted)
        found += [_version_json(r, r.schema) for r in (records[-1:] if latest_only else records)]
    return reply(found)


# Subjects and versions.


async def list_subjects(request: web.Request) -> web.Response:
    return reply(
        _registry(request).subjects(
            request.query.get("subjectPrefix", ""),
            _flag(request, "deleted"),
            _flag(request, "deletedOnly"),
        )
    )


async def list_versions(request: web.Request) -> web.Response:
    return reply(
        _registry(request).version_numbers(
            request.match_info["subject"], _flag(request, "deleted"), _flag(request, "deletedOnly")
        )
    )


async def get_version(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = registry.version(
        request.match_info["subject"], request.match_info["version"], _flag(request, "deleted")
    )
    schema = await registry.formatted(record, request.query.get("format"))
    return reply(_version_json(record, schema))


async def get_raw_version(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = registry.version(
        request.match_info["subject"], request.match_info["version"], _flag(request, "deleted")
    )
    text = await registry.formatted(record, request.query.get("format"))
    return raw_reply(text)


async def referenced_by(request: web.Request) -> web.Response:
    return reply(
        _registry(request).referenced_by(
            request.match_info["subject"], request.match_info["version"]
        )
    )


async def register(request: web.Request) -> web.Response:
    body = await _body(request)
    result = await _registry(request).register(
        request.match_info["subject"], body, _flag(request, "normalize")
    )
    return reply(result)


async def lookup(request: web.Request) -> web.Response:
    body = await _body(request)
    registry = _registry(request)
    record = await registry.lookup(
        request.match_info["subject"], body, _flag(request, "normalize"), _flag(request, "deleted")
    )
    return reply(
        _version_json(record, await registry.formatted(record, request.query.get("format")))
    )


async def delete_subject(request: web.Request) -> web.Response:
    return reply(
        _registry(request).delete_subject(
            request.match_info["subject"], _flag(request, "permanent")
        )
    )


async def delete_version(request: web.Request) -> web.Response:
    return reply(
        _registry(request).delete_version(
            request.match_info["subject"],
            request.match_info["version"],
            _flag(request, "permanent"),
        )
    )


# Compatibility.


async def check_version(request: web.Request) -> web.Response:
    return await _compatibility(request, request.match_info["version"])


async def check_versions(request: web.Request) -> web.Response:
    return await _compatibility(request, None)


async def _compatibility(request: web.Request, version: str | None) -> web.Response:
    body = await _body(request)
    problems = await _registry(request).check_compatibility(
        request.match_info["subject"], version, body, _flag(request, "normalize")
    )
    document: dict[str, Any] = {"is_compatible": not problems}
    if _flag(request, "verbose"):
        document["messages"] = problems
    return reply(document)


# Settings.


def _subject_or_global(request: web.Request) -> str | None:
    return request.match_info.get("subject")


async def get_config(request: web.Request) -> web.Response:
    level = _registry(request).compatibility(
        _subject_or_global(request), _flag(request, "defaultToGlobal")
    )
    return reply({"compatibilityLevel": level})


async def put_config(request: web.Request) -> web.Response:
    body = await _body(request)
    level = _registry(request).set_compatibility(_subject_or_global(request), body)
    return reply({"compatibility": level})


async def delete_config(request: web.Request) -> web.Response:
    return reply(
        {"compatibilityLevel": _registry(request).delete_compatibility(_subject_or_global(request))}
    )


async def get_mode(request: web.Request) -> web.Response:
    mode = _registry(request).mode(_subject_or_global(request), _flag(request, "defaultToGlobal"))
    return reply({"mode": mode})


async def put_mode(request: web.Request) -> web.Response:
    body = await _body(request)
    mode = _registry(request).set_mode(_subject_or_global(request), body, _flag(request, "force"))
    return reply({"mode": mode})


async def delete_mode(request: web.Request) -> web.Response:
    return reply({"mode": _registry(request).delete_mode(request.match_info["subject"])})


async def root(request: web.Request) -> web.Response:
    return reply({})


async def contexts(request: web.Request) -> web.Response:
    return reply(["."])


async def cluster_metadata(request: web.Request) -> web.Response:
    cluster_id = request.app[STATE_KEY].broker.cluster_id
    clusters = {"kafka-cluster": [cluster_id], "schema-registry-cluster": ["schema-registry"]}
    return reply({"scope": {"path": [], "clusters": clusters}})


def make_app(broker: Broker, registry: SchemaRegistry) -> web.Application:
    app = web.Application(middlewares=[_errors, _authenticated], client_max_size=MAX_BODY_BYTES)
    app[STATE_KEY] = RegistryState(broker, registry)
    subject = "/subjects/{subject}"
    version = subject + "/versions/{version}"
    app.router.add_routes(
        [
            web.get("/", root),
            web.get("/contexts", contexts),
            web.get("/v1/metadata/id", cluster_metadata),
            web.get("/schemas", list_schemas),
            web.get("/schemas/types", schema_types),
            web.get("/schemas/ids/{id}", schema_by_id),
            web.get("/schemas/ids/{id}/schema", raw_schema_by_id),
            web.get("/schemas/ids/{id}/subjects", subjects_of_id),
            web.get("/schemas/ids/{id}/versions", versions_of_id),
            web.get("/subjects", list_subjects),
            web.post(subject, lookup),
            web.delete(subject, delete_subject),
            web.get(subject + "/versions", list_versions),
            web.post(subject + "/versions", register),
            web.get(version, get_version),
            web.delete(version, delete_version),
            web.get(version + "/schema", get_raw_version),
            web.get(version + "/referencedby", referenced_by),
            web.post("/compatibility" + version, check_version),
            web.post("/compatibility" + subject + "/versions", check_versions),
            web.get("/config", get_config),
            web.put("/config", put_config),
            web.delete("/config", delete_config),
            web.get("/config/{subject}", get_config),
            web.put("/config/{subject}", put_config),
            web.delete("/config/{subject}", delete_config),
            web.get("/mode", get_mode),
            web.put("/mode", put_mode),
            web.get("/mode/{subject}", get_mode),
            web.put("/mode/{subject}", put_mode),
            web.delete("/mode/{subject}", delete_mode),
        ]
    )
    return app
