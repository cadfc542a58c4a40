"""The registry's REST API (aiohttp, on the broker's event loop), in Confluent's shapes.

Bodies are JSON with any of Confluent's request content types; every answer is
`application/vnd.schemaregistry.v1+json`; errors are `{"error_code", "message"}` (errors.py),
including 404/405/413/415 for unknown paths, methods, oversized bodies and other content types.
With SASL on the broker's listeners every request needs HTTP basic credentials of a SASL user
(minibroker/server/http_auth.py); with an authorizer, what the user may do is access.py's rule.
Writes a browser sends from another site's page (`Origin` not the registry's own) are refused
403, and POST/PUT bodies need a content type no page can send without a CORS preflight: JSON
(`application/json`, `application/vnd.schemaregistry[.v1]+json`) or, as Confluent's registry
also takes it, `application/octet-stream`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from minibroker.auth.acls import AclOperation
from minibroker.registry import errors
from minibroker.registry.access import Access, denied
from minibroker.registry.formats import SCHEMA_TYPES
from minibroker.registry.records import SchemaRecord
from minibroker.registry.service import SchemaRegistry
from minibroker.server.broker import Broker
from minibroker.server.http_auth import verifier_for
from minibroker.server.http_guard import (
    READ_METHODS,
    cross_site,
    declared_content_type,
    json_content_type,
)

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
GENERIC_CONTENT_TYPE = "application/octet-stream"
MAX_BODY_BYTES = 16 << 20
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class RegistryState:
    def __init__(self, broker: Broker, registry: SchemaRegistry) -> None:
        self.broker = broker
        self.registry = registry
        self.verifier = verifier_for(broker)


STATE_KEY = web.AppKey("registry", RegistryState)
ACCESS_KEY = web.RequestKey("access", Access)


def _registry(request: web.Request) -> SchemaRegistry:
    return request.app[STATE_KEY].registry


def _access(request: web.Request) -> Access:
    return request[ACCESS_KEY]


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
async def _same_site_writes(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method not in READ_METHODS and cross_site(request):
        return _error_reply(403, "cross-site request refused")
    return await handler(request)


@web.middleware
async def _authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    principal = await state.verifier.principal(request.headers.get("Authorization"))
    if principal is None:
        return _error_reply(401, "Unauthorized", **{"WWW-Authenticate": 'Basic realm="SR"'})
    request[ACCESS_KEY] = Access(state.broker.authorizer, principal, request.remote or "")
    return await handler(request)


async def _body(request: web.Request) -> dict[str, Any]:
    if not json_content_type(request) and declared_content_type(request) != GENERIC_CONTENT_TYPE:
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


def _readable_schema(request: web.Request) -> SchemaRecord:
    """The schema of the path's id, if some subject using it may be described."""
    registry, schema_id = _registry(request), _schema_id(request)
    record = registry.schema_by_id(schema_id)
    users = registry.versions_of_id(schema_id, True)
    if not _access(request).describable({user.subject for user in users}):
        raise denied(AclOperation.DESCRIBE, f"Schema: {schema_id}")
    return record


def _describable_versions(request: web.Request) -> list[SchemaRecord]:
    records = _registry(request).versions_of_id(_schema_id(request), _flag(request, "deleted"))
    access = _access(request)
    return [record for record in records if access.may(record.subject, AclOperation.DESCRIBE)]


async def schema_by_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = _readable_schema(request)
    return reply(
        _schema_json(record, await registry.formatted(record, request.query.get("format")))
    )


async def raw_schema_by_id(request: web.Request) -> web.Response:
    registry = _registry(request)
    record = _readable_schema(request)
    text = await registry.formatted(record, request.query.get("format"))
    return raw_reply(text)


async def subjects_of_id(request: web.Request) -> web.Response:
    return reply(sorted({record.subject for record in _describable_versions(request)}))


async def versions_of_id(request: web.Request) -> web.Response:
    records = _describable_versions(request)
    return reply([{"subject": r.subject, "version": r.version} for r in records])


async def list_schemas(request: web.Request) -> web.Response:
    registry = _registry(request)
    prefix = request.query.get("subjectPrefix", "")
    deleted, latest_only = _flag(request, "deleted"), _flag(request, "latestOnly")
    found = []
    for subject in _access(request).describable(registry.subjects(prefix, deleted, False)):
        records = registry.store.versions(subject, deleted)
        found += [_version_json(r, r.schema) for r in (records[-1:] if latest_only else records)]
    return reply(found)


# Subjects and versions.


def _subject(request: web.Request, operation: AclOperation) -> str:
    """The path's subject, once the request may do `operation` on it."""
    subject = request.match_info["subject"]
    _access(request).require(subject, operation)
    return subject


async def list_subjects(request: web.Request) -> web.Response:
    subjects = _registry(request).subjects(
        request.query.get("subjectPrefix", ""),
        _flag(request, "deleted"),
        _flag(request, "deletedOnly"),
    )
    return reply(_access(request).describable(subjects))


async def list_versions(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.DESCRIBE)
    return reply(
        _registry(request).version_numbers(
            subject, _flag(request, "deleted"), _flag(request, "deletedOnly")
        )
    )


async def get_version(request: web.Request) -> web.Response:
    registry = _registry(request)
    subject = _subject(request, AclOperation.DESCRIBE)
    record = registry.version(subject, request.match_info["version"], _flag(request, "deleted"))
    schema = await registry.formatted(record, request.query.get("format"))
    return reply(_version_json(record, schema))


async def get_raw_version(request: web.Request) -> web.Response:
    registry = _registry(request)
    subject = _subject(request, AclOperation.DESCRIBE)
    record = registry.version(subject, request.match_info["version"], _flag(request, "deleted"))
    text = await registry.formatted(record, request.query.get("format"))
    return raw_reply(text)


async def referenced_by(request: web.Request) -> web.Response:
    registry, access = _registry(request), _access(request)
    subject = _subject(request, AclOperation.DESCRIBE)
    ids = registry.referenced_by(subject, request.match_info["version"])
    return reply(
        [
            schema_id
            for schema_id in ids
            if access.describable({r.subject for r in registry.versions_of_id(schema_id, False)})
        ]
    )


async def register(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.WRITE)
    body = await _body(request)
    result = await _registry(request).register(subject, body, _flag(request, "normalize"))
    return reply(result)


async def lookup(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.DESCRIBE)
    body = await _body(request)
    registry = _registry(request)
    record = await registry.lookup(
        subject, body, _flag(request, "normalize"), _flag(request, "deleted")
    )
    return reply(
        _version_json(record, await registry.formatted(record, request.query.get("format")))
    )


async def delete_subject(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.DELETE)
    return reply(_registry(request).delete_subject(subject, _flag(request, "permanent")))


async def delete_version(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.DELETE)
    return reply(
        _registry(request).delete_version(
            subject, request.match_info["version"], _flag(request, "permanent")
        )
    )


# Compatibility.


async def check_version(request: web.Request) -> web.Response:
    return await _compatibility(request, request.match_info["version"])


async def check_versions(request: web.Request) -> web.Response:
    return await _compatibility(request, None)


async def _compatibility(request: web.Request, version: str | None) -> web.Response:
    subject = _subject(request, AclOperation.DESCRIBE)
    body = await _body(request)
    problems = await _registry(request).check_compatibility(
        subject, version, body, _flag(request, "normalize")
    )
    document: dict[str, Any] = {"is_compatible": not problems}
    if _flag(request, "verbose"):
        document["messages"] = problems
    return reply(document)


# Settings.


def _subject_or_global(request: web.Request, operation: AclOperation) -> str | None:
    """The path's subject (None: the global setting), once the request may do `operation`
    (DESCRIBE_CONFIGS or ALTER_CONFIGS) on it."""
    subject = request.match_info.get("subject")
    if subject is None:
        _access(request).require_global(operation)
    else:
        _access(request).require(subject, operation)
    return subject


async def get_config(request: web.Request) -> web.Response:
    level = _registry(request).compatibility(
        _subject_or_global(request, AclOperation.DESCRIBE_CONFIGS),
        _flag(request, "defaultToGlobal"),
    )
    return reply({"compatibilityLevel": level})


async def put_config(request: web.Request) -> web.Response:
    subject = _subject_or_global(request, AclOperation.ALTER_CONFIGS)
    body = await _body(request)
    level = _registry(request).set_compatibility(subject, body)
    return reply({"compatibility": level})


async def delete_config(request: web.Request) -> web.Response:
    subject = _subject_or_global(request, AclOperation.ALTER_CONFIGS)
    return reply({"compatibilityLevel": _registry(request).delete_compatibility(subject)})


async def get_mode(request: web.Request) -> web.Response:
    subject = _subject_or_global(request, AclOperation.DESCRIBE_CONFIGS)
    return reply({"mode": _registry(request).mode(subject, _flag(request, "defaultToGlobal"))})


async def put_mode(request: web.Request) -> web.Response:
    subject = _subject_or_global(request, AclOperation.ALTER_CONFIGS)
    body = await _body(request)
    mode = _registry(request).set_mode(subject, body, _flag(request, "force"))
    return reply({"mode": mode})


async def delete_mode(request: web.Request) -> web.Response:
    subject = _subject(request, AclOperation.ALTER_CONFIGS)
    return reply({"mode": _registry(request).delete_mode(subject)})


async def root(request: web.Request) -> web.Response:
    return reply({})


async def contexts(request: web.Request) -> web.Response:
    return reply(["."])


async def cluster_metadata(request: web.Request) -> web.Response:
    cluster_id = request.app[STATE_KEY].broker.cluster_id
    clusters = {"kafka-cluster": [cluster_id], "schema-registry-cluster": ["schema-registry"]}
    return reply({"scope": {"path": [], "clusters": clusters}})


def make_app(broker: Broker, registry: SchemaRegistry) -> web.Application:
    app = web.Application(
        middlewares=[_errors, _same_site_writes, _authenticated], client_max_size=MAX_BODY_BYTES
    )
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
