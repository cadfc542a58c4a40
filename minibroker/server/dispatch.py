"""From a request frame to a response frame, with Kafka's answers to requests it won't serve.

- ApiVersions above the version we advertise: a v0 body with UNSUPPORTED_VERSION listing key 18.
- API keys and versions outside what this broker advertises (the handlers' ranges as the
  emulated Kafka release had them, `broker.api_gates`): close the connection, as Kafka does
  for a key or version it does not know. Versions the release advertised but refused (Kafka
  4's Produce v0-2) get UNSUPPORTED_VERSION in the request's own response.
- A handler bug: logged, answered with UNKNOWN_SERVER_ERROR where the response has a
  top-level error code, otherwise the connection is closed.

Common Produce and Fetch requests are answered by the native fast paths
(`handlers/produce_native.py`, `handlers/fetch_native.py`) before any decoding, where no
faults, quotas or authorizer are active (`answer_natively`); they hand back the rest. A
native Fetch that waits is a `PendingFetch`, which the connection holds instead of a task.
Test clusters' faults, hooks and recording (`server/faults.py`) see each decoded request
before its handler and may answer it instead. In an in-process cluster, group and
transaction requests sent to a node that does not coordinate their key are answered
NOT_COORDINATOR here (`server/nodes.py`), so no handler needs to know about nodes; requests
naming several groups (or transactional ids) get it for the keys of other coordinators only,
and their handler answers the rest, as pushed errors for some partitions are merged with the
handler's answer for the others (Fetch gets them in its context and answers them itself, to
keep its fetch sessions whole). Topics a request names by id only (Fetch v13+) are recorded
with their names filled in.

With client quotas set (`broker.client_quotas.enabled`, else nothing is measured), the handler's
running time and produce bytes are recorded and the answer carries the throttle time of the
quotas broken (`minibroker/auth/throttle.py`), the connection muted for it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import struct
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from minibroker.auth.throttle import RequestTimer, throttled
from minibroker.handlers.registry import Handler
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import (
    EncodedFrame,
    MalformedRequest,
    RequestHeader,
    decode_body,
    decode_header,
    encode_response,
    new_response,
    peek_key_version_correlation,
    response_class,
    struct_type,
)
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext, Session
from minibroker.server.faults import (
    EntryErrors,
    EntryKey,
    RecordedRequest,
    error_response,
    name_topics,
    with_entry_errors,
    without_entries,
)
from minibroker.server.nodes import COORDINATED, COORDINATED_PER_KEY

if TYPE_CHECKING:
    from minibroker.config import Listener
    from minibroker.handlers.fetch_native import PendingFetch
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

# APIs whose handler answers pushed partition errors itself (`RequestContext.entry_errors`)
# instead of being handed the request without those partitions: a fetch session must keep
# the partitions of its full fetch, or its incremental fetches would never read them again.
ANSWERS_ENTRY_ERRORS = frozenset({ApiKey.Fetch})


def unsupported_api_versions_frame(correlation_id: int, max_version: int) -> bytearray:
    api_version = struct_type(ApiKey.ApiVersions, "response", "ApiVersion")
    body = new_response(
        ApiKey.ApiVersions,
        0,
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[api_version(api_key=18, min_version=0, max_version=max_version)],
    )
    return encode_response(ApiKey.ApiVersions, 0, correlation_id, body)


def error_frame(api_key: int, api_version: int, correlation_id: int) -> bytearray:
    fields = response_class(api_key).fields
    if "error_code" not in fields:
        raise MalformedRequest(f"{ApiKey.name_of(api_key)} failed and has no top-level error")
    body = new_response(api_key, api_version, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
    return encode_response(api_key, api_version, correlation_id, body)


class Unhandled(enum.Enum):
    UNHANDLED = 0


UNHANDLED = Unhandled.UNHANDLED
Answer: TypeAlias = "bytearray | EncodedFrame | None"


async def dispatch(
    broker: Broker,
    frame: bytes | bytearray | memoryview,
    listener: Listener,
    session: Session,
) -> Answer:
    """The response frame, None when the request expects none (acks=0 Produce).

    Raises MalformedRequest when the connection must be closed.
    """
    view = memoryview(frame)
    answered = answer_natively(broker, view, listener, session, asyncio.get_running_loop())
    if answered is UNHANDLED:
        return await dispatch_decoded(broker, view, listener, session)
    if isinstance(answered, (bytearray, EncodedFrame)) or answered is None:
        return answered
    return await answered.outcome()


_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
# Enum members from the module: read from their class, each is a metaclass lookup (~0.3 µs).
_PRODUCE = ApiKey.Produce
_FETCH = ApiKey.Fetch


class _NativePaths:
    """The native paths' modules, imported on first use (an import statement per request
    costs more than this attribute)."""

    produce: ModuleType | None = None
    fetch: ModuleType | None = None

    def load_produce(self) -> ModuleType:
        import minibroker.handlers.produce_native as produce_native

        self.produce = produce_native
        return produce_native

    def load_fetch(self) -> ModuleType:
        import minibroker.handlers.fetch_native as fetch_native

        self.fetch = fetch_native
        return fetch_native


_native_paths = _NativePaths()


def answer_natively(
    broker: Broker,
    view: memoryview,
    listener: Listener,
    session: Session,
    loop: asyncio.AbstractEventLoop,
) -> Answer | PendingFetch | Unhandled:
    """The answer of a native fast path, a native Fetch still waiting, or UNHANDLED (the
    request is for `dispatch_decoded`)."""
    # (`_plain` and the header peek inline: this runs for every request)
    if (
        len(view) < _KEY_VERSION_CORRELATION.size
        or broker.faults.active
        or broker.client_quotas.enabled
        or broker.authorizer is not None
    ):
        return UNHANDLED
    api_key, api_version, correlation_id = _KEY_VERSION_CORRELATION.unpack_from(view)
    gate = broker.api_gates.get(api_key)
    if gate is None or not gate.accepted_min <= api_version <= gate.max_version:
        return UNHANDLED
    try:
        if api_key == _PRODUCE:
            produce_native = _native_paths.produce or _native_paths.load_produce()
            produced = produce_native.answer(broker, view)
            return UNHANDLED if produced is produce_native.UNHANDLED else produced
        if api_key == _FETCH:
            fetch_native = _native_paths.fetch or _native_paths.load_fetch()
            fetched = fetch_native.answer(broker, view, listener, session, loop)
            return UNHANDLED if fetched is None else fetched
    except Exception:
        log.exception("%s v%d failed", ApiKey.name_of(api_key), api_version)
        return error_frame(api_key, api_version, correlation_id)
    return UNHANDLED


async def dispatch_decoded(
    broker: Broker, view: memoryview, listener: Listener, session: Session
) -> Answer:
    """`dispatch` of a request no native path takes."""
    api_key, api_version, correlation_id = peek_key_version_correlation(view)
    gate = broker.api_gates.get(api_key)
    if gate is None:
        raise MalformedRequest(f"unknown API key {api_key}")
    if api_key == ApiKey.ApiVersions and api_version > gate.max_version:
        return unsupported_api_versions_frame(correlation_id, gate.max_version)
    if not gate.advertised_min <= api_version <= gate.max_version:
        raise MalformedRequest(f"{ApiKey.name_of(api_key)} v{api_version} is not enabled")
    spec = gate.spec
    header, body_pos = decode_header(view)
    # Recorded requests must keep the records as sent: only unrecorded ones are stamped in place.
    in_place = not broker.faults.active and not view.readonly
    request: Any = decode_body(api_key, api_version, view, body_pos, records_in_place=in_place)
    context = RequestContext(broker, header, listener, session)
    timer = RequestTimer() if broker.client_quotas.enabled else None
    response: Any = None
    entry_errors: dict[EntryKey, ErrorCode] = {}
    if broker.faults.active:
        response = await broker.faults.intercept(
            _recorded(broker, header, session.client_host, request)
        )
        if isinstance(response, EntryErrors):
            entry_errors, response = dict(response.errors), None
    if response is None and api_version < gate.accepted_min:
        response = error_response(api_key, api_version, request, ErrorCode.UNSUPPORTED_VERSION)
    if response is None and (api_key in COORDINATED or api_key in COORDINATED_PER_KEY):
        response = _not_coordinator_answer(broker, api_key, api_version, request, entry_errors)
    try:
        if response is None and timer is None and not entry_errors:
            response = await spec.handler(context, request)
        elif response is None:
            work = _handled(spec.handler, context, request, entry_errors)
            response = await (work if timer is None else timer.run(work))
    except MalformedRequest:
        raise
    except Exception:
        log.exception("%s v%d failed", ApiKey.name_of(api_key), api_version)
        return error_frame(api_key, api_version, correlation_id)
    if timer is not None:
        response = throttled(context, request, len(view), timer.nanos, response)
    if response is None or (api_key == ApiKey.Produce and request.acks == 0):
        return None
    if isinstance(response, EncodedFrame):
        return response
    return encode_response(api_key, api_version, correlation_id, response)


def _not_coordinator_answer(
    broker: Broker,
    api_key: int,
    api_version: int,
    request: Any,
    entry_errors: dict[EntryKey, ErrorCode],
) -> Any:
    """NOT_COORDINATOR for the whole request, or (added to `entry_errors`) for the groups or
    transactional ids of a batched request that this node does not coordinate."""
    nodes = broker.nodes
    not_coordinator = nodes.request_coordinator_error(api_key, api_version, request, broker.node_id)
    if not_coordinator is not None:
        return error_response(api_key, api_version, request, not_coordinator)
    entry_errors.update(
        nodes.keyed_coordinator_errors(api_key, api_version, request, broker.node_id)
    )
    return None


async def _handled(
    handler: Handler, context: RequestContext, request: Any, entry_errors: dict[EntryKey, ErrorCode]
) -> Any:
    """The handler's response; with entry errors, those entries are answered with their error
    and only the rest of the request is handled."""
    if not entry_errors:
        return await handler(context, request)
    api_key, api_version = context.header.api_key, context.api_version
    if api_key in ANSWERS_ENTRY_ERRORS:
        return await handler(context._replace(entry_errors=entry_errors), request)
    rest = without_entries(api_key, api_version, request, entry_errors)
    handled = None if rest is None else await handler(context, rest)
    if isinstance(handled, EncodedFrame):
        handled = handled.message()
    return with_entry_errors(api_key, api_version, request, handled, entry_errors)


def _recorded(
    broker: Broker, header: RequestHeader, client_host: str, request: Any
) -> RecordedRequest:
    topics_by_id = broker.cluster.topics_by_id
    name_topics(header.api_key, request, lambda id_: getattr(topics_by_id.get(id_), "name", None))
    return RecordedRequest(
        time=time.time(),
        node_id=broker.node_id,
        client_id=header.client_id,
        client_host=client_host,
        api_key=ApiKey(header.api_key),
        api_version=header.api_version,
        correlation_id=header.correlation_id,
        body=request,
    )
