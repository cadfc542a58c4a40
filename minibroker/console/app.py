"""The console's aiohttp application on the broker's event loop: routes, middlewares, the
sampler task. Handlers run on the loop between broker requests, so they read and change the
broker's state without locks, as request handlers do.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from importlib.resources import files
from typing import Any, NoReturn
from urllib.parse import urlencode

from aiohttp import web

from minibroker.console import actions, messages, pages, views
from minibroker.console.auth import ALLOWED_HOSTS_CONFIG, allowed_host_names, authorized
from minibroker.console.errors import (
    BAD_REQUEST,
    FORBIDDEN,
    UNSUPPORTED_MEDIA_TYPE,
    ConsoleError,
)
from minibroker.console.sampler import RATE_INTERVAL_S, Sampler
from minibroker.server.broker import Broker
from minibroker.server.http_auth import verifier_for
from minibroker.server.http_guard import (
    CONSOLE_HEADERS,
    READ_METHODS,
    allowed_host,
    cross_site,
    json_content_type,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 << 20  # above max.message.bytes: the produce check gives Kafka's error
STATIC_TYPES = {"console.js": "text/javascript", "console.css": "text/css"}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ConsoleState:
    def __init__(self, broker: Broker, read_only: bool, bound_host: str) -> None:
        self.broker = broker
        self.read_only = read_only
        self.bound_host = bound_host
        self.host_names = allowed_host_names(broker)
        self.started_s = time.monotonic()
        self.sampler = Sampler(broker)
        self.verifier = verifier_for(broker)
        self.static = {
            name: (files("minibroker.console") / "static" / name).read_bytes()
            for name in STATIC_TYPES
        }


CONSOLE_KEY = web.AppKey("console", ConsoleState)


def _state(request: web.Request) -> ConsoleState:
    return request.app[CONSOLE_KEY]


def _is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/")


def _json_error(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


def _error(request: web.Request, status: int, message: str, **headers: str) -> web.Response:
    if _is_api(request):
        return _json_error(status, message, **headers)
    html = pages.error_page(status, message, _state(request).read_only)
    return web.Response(text=html, status=status, content_type="text/html", headers=headers)


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bad input is a ConsoleError (4xx with its message); aiohttp's own refusals (unknown
    path, wrong method, body too large) keep their status; anything else is a bug: logged,
    answered 500."""
    try:
        return await handler(request)
    except ConsoleError as exc:
        return _error(request, exc.status, exc.message)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(request, exc.status, exc.reason)
    except Exception:
        log.exception("console: %s %s failed", request.method, request.path)
        return _error(request, 500, "internal error in the console (see the broker's log)")


@web.middleware
async def access_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = _state(request)
    if not allowed_host(request, state.bound_host, state.host_names):
        return _error(
            request,
            FORBIDDEN,
            f"Host {request.host!r} does not name this console "
            f"(add the name to {ALLOWED_HOSTS_CONFIG})",
        )
    principal = await state.verifier.principal(request.headers.get("Authorization"))
    if principal is None:
        return _error(
            request,
            401,
            "authentication required: the broker's SASL user name and password",
            **{"WWW-Authenticate": 'Basic realm="minibroker", charset="UTF-8"'},
        )
    host = request.remote or ""
    if not authorized(state.broker, principal, host):
        return _error(
            request, FORBIDDEN, f"{principal} may not use the console (needs ALTER on the cluster)"
        )
    if request.method not in READ_METHODS:
        if state.read_only:
            return _error(request, FORBIDDEN, "the console is read-only")
        if cross_site(request):
            return _error(request, FORBIDDEN, "cross-site request refused")
    return await handler(request)


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(CONSOLE_HEADERS)


# ---- request input ----------------------------------------------------------------------------


async def _form(request: web.Request) -> dict[str, str]:
    if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        raise ConsoleError(BAD_REQUEST, "expected a form (application/x-www-form-urlencoded)")
    data = await request.post()
    return {key: value for key, value in data.items() if isinstance(value, str)}


async def _body(request: web.Request) -> dict[str, Any]:
    if not json_content_type(request):
        raise ConsoleError(
            UNSUPPORTED_MEDIA_TYPE, "the request body must be JSON (Content-Type: application/json)"
        )
    try:
        parsed = json.loads(await request.read() or b"{}")
    except ValueError as exc:
        raise ConsoleError(BAD_REQUEST, f"the request body is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ConsoleError(BAD_REQUEST, "the request body must be a JSON object")
    return parsed


def _optional_int(value: object, name: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ConsoleError(BAD_REQUEST, f"{name} must be an integer, not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ConsoleError(BAD_REQUEST, f"{name} must be an integer, not {value!r}")


def _int(value: object, name: str) -> int:
    parsed = _optional_int(value, name)
    if parsed is None:
        raise ConsoleError(BAD_REQUEST, f"{name} is required")
    return parsed


def _str(value: object, name: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConsoleError(BAD_REQUEST, f"{name} must be a string, not {value!r}")
    return value


def _configs_lines(text: str) -> dict[str, str]:
    """`key=value` lines (blank lines skipped)."""
    configs = {}
    for line in filter(None, (line.strip() for line in text.splitlines())):
        key, separator, value = line.partition("=")
        if not separator or not key.strip():
            raise ConsoleError(BAD_REQUEST, f"configs are key=value lines, not {line!r}")
        configs[key.strip()] = value.strip()
    return configs


def _string_map(value: object, name: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConsoleError(BAD_REQUEST, f"{name} must be an object of string values")
    return dict(value)


def _string_list(value: object, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConsoleError(BAD_REQUEST, f"{name} must be a list of strings")
    return list(value)


def _bytes_or_null(value: object, name: str) -> bytes | None:
    if value is None:
        return None
    return _str(value, name).encode()


def _partition_or_all(value: object) -> int | None:
    if value is None or value == "all" or value == "":
        return None
    return _int(value, "partition")


# ---- responses --------------------------------------------------------------------------------


def _flash(request: web.Request) -> tuple[str, str] | None:
    message = request.query.get("flash")
    if not message:
        return None
    return ("error" if request.query.get("kind") == "error" else "ok", message)


def _page(
    request: web.Request,
    title: str,
    active: str,
    body: str,
    *,
    status: int = 200,
    flash: tuple[str, str] | None = None,
) -> web.Response:
    html = pages.layout(
        title, active, body, flash=flash or _flash(request), read_only=_state(request).read_only
    )
    return web.Response(text=html, status=status, content_type="text/html")


def _redirect(location: str, message: str) -> NoReturn:
    raise web.HTTPSeeOther(f"{location}?{urlencode({'flash': message})}")


# ---- pages and API ----------------------------------------------------------------------------


def _rates(state: ConsoleState) -> list[dict[str, float]]:
    return [
        {
            "time": rate.time,
            "produce_bytes_per_s": round(rate.produce_bytes_per_s, 1),
            "produce_records_per_s": round(rate.produce_records_per_s, 1),
            "consume_records_per_s": round(rate.consume_records_per_s, 1),
        }
        for rate in state.sampler.rates
    ]


async def overview_page(request: web.Request) -> web.Response:
    state = _state(request)
    data = views.overview(state.broker, state.started_s)
    return _page(request, "Overview", "overview", pages.overview_page(data))


async def overview_api(request: web.Request) -> web.Response:
    state = _state(request)
    return web.json_response(
        {**views.overview(state.broker, state.started_s), "throughput": _rates(state)}
    )


async def throughput_api(request: web.Request) -> web.Response:
    return web.json_response({"throughput": _rates(_state(request))})


def _topics_html(
    request: web.Request, form: Mapping[str, str], status: int = 200, flash: Any = None
) -> web.Response:
    state = _state(request)
    topics = views.topics_view(state.broker, state.sampler.topic_rates)
    body = pages.topics_page(topics, state.read_only, form)
    return _page(request, "Topics", "topics", body, status=status, flash=flash)


async def topics_page(request: web.Request) -> web.Response:
    return _topics_html(request, {})


async def topics_api(request: web.Request) -> web.Response:
    state = _state(request)
    return web.json_response({"topics": views.topics_view(state.broker, state.sampler.topic_rates)})


async def create_topic_form(request: web.Request) -> web.Response:
    form = await _form(request)
    try:
        name = form.get("name", "").strip()
        actions.create_topic(
            _state(request).broker,
            name,
            _optional_int(form.get("partitions"), "partitions"),
            _optional_int(form.get("replication_factor"), "replication factor"),
            _configs_lines(form.get("configs", "")),
        )
    except ConsoleError as exc:
        return _topics_html(request, form, exc.status, ("error", exc.message))
    _redirect(pages.topic_url(name), f"Topic {name} created.")


async def create_topic_api(request: web.Request) -> web.Response:
    body = await _body(request)
    name = _str(body.get("name"), "name")
    actions.create_topic(
        _state(request).broker,
        name,
        _optional_int(body.get("partitions"), "partitions"),
        _optional_int(body.get("replication_factor"), "replication_factor"),
        _string_map(body.get("configs"), "configs"),
    )
    topic = views.topic_view(_state(request).broker, name, {})
    return web.json_response(topic, status=201)


def _topic_html(
    request: web.Request, name: str, status: int = 200, flash: Any = None
) -> web.Response:
    state = _state(request)
    topic = views.topic_view(state.broker, name, state.sampler.topic_rates)
    body = pages.topic_page(topic, state.read_only)
    return _page(request, f"Topic {name}", "topics", body, status=status, flash=flash)


async def topic_page(request: web.Request) -> web.Response:
    return _topic_html(request, request.match_info["name"])


async def topic_api(request: web.Request) -> web.Response:
    state = _state(request)
    name = request.match_info["name"]
    return web.json_response(views.topic_view(state.broker, name, state.sampler.topic_rates))


async def _topic_form(
    request: web.Request, change: Callable[[Broker, str, dict[str, str]], str]
) -> web.Response:
    """A form on the topic page: back to it with the outcome (the topics list once deleted)."""
    name = request.match_info["name"]
    form = await _form(request)
    try:
        message = change(_state(request).broker, name, form)
    except ConsoleError as exc:
        if name not in _state(request).broker.cluster.topics:
            raise
        return _topic_html(request, name, exc.status, ("error", exc.message))
    target = pages.topic_url(name) if name in _state(request).broker.cluster.topics else "/topics"
    _redirect(target, message)


def _delete_topic(broker: Broker, name: str, _form: dict[str, str]) -> str:
    actions.delete_topic(broker, name)
    return f"Topic {name} deleted."


def _add_partitions(broker: Broker, name: str, form: dict[str, str]) -> str:
    count = _int(form.get("count"), "count")
    actions.add_partitions(broker, name, count)
    return f"Topic {name} now has {count} partitions."


def _alter_configs(broker: Broker, name: str, form: dict[str, str]) -> str:
    deletions = [item.strip() for item in form.get("delete", "").split(",") if item.strip()]
    actions.alter_configs(broker, name, _configs_lines(form.get("set", "")), deletions)
    return f"Configs of {name} changed."


def _delete_records(broker: Broker, name: str, form: dict[str, str]) -> str:
    partition = _partition_or_all(form.get("partition"))
    offset = _optional_int(form.get("offset"), "offset")
    starts = actions.delete_records(broker, name, partition, -1 if offset is None else offset)
    summary = ", ".join(f"{index}: {start}" for index, start in sorted(starts.items()))
    return f"Records deleted; log start offsets now {summary}."


async def delete_topic_form(request: web.Request) -> web.Response:
    return await _topic_form(request, _delete_topic)


async def add_partitions_form(request: web.Request) -> web.Response:
    return await _topic_form(request, _add_partitions)


async def alter_configs_form(request: web.Request) -> web.Response:
    return await _topic_form(request, _alter_configs)


async def delete_records_form(request: web.Request) -> web.Response:
    return await _topic_form(request, _delete_records)


async def delete_topic_api(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    actions.delete_topic(_state(request).broker, name)
    return web.json_response({"deleted": name})


async def add_partitions_api(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await _body(request)
    actions.add_partitions(_state(request).broker, name, _int(body.get("count"), "count"))
    return web.json_response(views.topic_view(_state(request).broker, name, {}))


async def alter_configs_api(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await _body(request)
    actions.alter_configs(
        _state(request).broker,
        name,
        _string_map(body.get("set"), "set"),
        _string_list(body.get("delete"), "delete"),
    )
    return web.json_response(views.topic_view(_state(request).broker, name, {}))


async def delete_records_api(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await _body(request)
    offset = _optional_int(body.get("offset"), "offset")
    starts = actions.delete_records(
        _state(request).broker,
        name,
        _partition_or_all(body.get("partition")),
        -1 if offset is None else offset,
    )
    return web.json_response({"log_start_offsets": {str(k): v for k, v in starts.items()}})


# ---- messages ---------------------------------------------------------------------------------


def _messages_html(
    request: web.Request,
    name: str,
    produce_values: Mapping[str, str],
    status: int = 200,
    flash: Any = None,
) -> web.Response:
    broker = _state(request).broker
    topic = views.existing_topic(broker, name)
    try:
        browse = messages.parse_browse(request.query)
        result = messages.browse(broker, name, browse)
    except ConsoleError as exc:
        if flash is not None:
            raise
        browse = messages.parse_browse({})
        result = messages.browse(broker, name, browse)
        status, flash = exc.status, ("error", exc.message)
    body = pages.messages_page(
        name,
        len(topic.partitions),
        result,
        messages.describe_request(browse),
        _state(request).read_only,
        produce_values,
    )
    return _page(request, f"Messages of {name}", "topics", body, status=status, flash=flash)


async def messages_page(request: web.Request) -> web.Response:
    return _messages_html(request, request.match_info["name"], {})


async def messages_api(request: web.Request) -> web.Response:
    browse = messages.parse_browse(request.query)
    result = messages.browse(_state(request).broker, request.match_info["name"], browse)
    for key in ("next_offsets", "end_offsets"):
        result[key] = {str(k): v for k, v in result[key].items()}
    return web.json_response(result)


def _produce(broker: Broker, name: str, values: Mapping[str, Any], form: bool) -> int:
    key = values.get("key")
    if form and key == "":
        key = None
    headers = values.get("headers")
    if isinstance(headers, dict):
        headers = json.dumps(headers)
    return actions.produce(
        broker,
        name,
        _optional_int(values.get("partition"), "partition") or 0,
        _bytes_or_null(key, "key"),
        _bytes_or_null(values.get("value"), "value"),
        actions.parse_headers(_str(headers, "headers")),
    )


async def produce_form(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    form = await _form(request)
    broker = _state(request).broker
    try:
        offset = _produce(broker, name, form, form=True)
    except ConsoleError as exc:
        if name not in broker.cluster.topics:
            raise
        return _messages_html(request, name, form, exc.status, ("error", exc.message))
    partition = form.get("partition") or "0"
    location = pages.topic_url(name, "/messages")
    message = f"Produced to partition {partition} at offset {offset}."
    raise web.HTTPSeeOther(
        f"{location}?{urlencode({'partition': partition, 'from': 'end', 'flash': message})}"
    )


async def produce_api(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await _body(request)
    offset = _produce(_state(request).broker, name, body, form=False)
    partition = _optional_int(body.get("partition"), "partition") or 0
    return web.json_response({"topic": name, "partition": partition, "offset": offset}, status=201)


# ---- groups -----------------------------------------------------------------------------------


async def groups_page(request: web.Request) -> web.Response:
    body = pages.groups_page(views.groups_view(_state(request).broker))
    return _page(request, "Consumer, share and streams groups", "groups", body)


async def groups_api(request: web.Request) -> web.Response:
    return web.json_response({"groups": views.groups_view(_state(request).broker)})


def _group_data(request: web.Request, group_id: str) -> dict[str, Any]:
    state = _state(request)
    return views.group_view(state.broker, group_id, state.sampler.group_history(group_id))


def _group_html(
    request: web.Request, group_id: str, status: int = 200, flash: Any = None
) -> web.Response:
    body = pages.group_page(_group_data(request, group_id), _state(request).read_only)
    return _page(request, f"Group {group_id}", "groups", body, status=status, flash=flash)


async def group_page(request: web.Request) -> web.Response:
    return _group_html(request, request.match_info["group_id"])


async def group_api(request: web.Request) -> web.Response:
    return web.json_response(_group_data(request, request.match_info["group_id"]))


def _reset_spec(values: Mapping[str, Any]) -> actions.ResetSpec:
    value = values.get("value")
    topic = _str(values.get("topic"), "topic").strip() or None
    return actions.ResetSpec(
        target=_str(values.get("target"), "target"),
        value="" if value is None else str(value),
        topic=topic,
        partition=_optional_int(values.get("partition"), "partition"),
    )


async def reset_offsets_form(request: web.Request) -> web.Response:
    group_id = request.match_info["group_id"]
    form = await _form(request)
    broker = _state(request).broker
    try:
        reset = actions.reset_offsets(broker, group_id, _reset_spec(form))
    except ConsoleError as exc:
        if group_id not in broker.groups.groups:
            raise
        return _group_html(request, group_id, exc.status, ("error", exc.message))
    summary = ", ".join(f"{key}: {offset}" for key, offset in reset.items())
    _redirect(pages.group_url(group_id), f"Offsets reset ({summary}).")


async def reset_offsets_api(request: web.Request) -> web.Response:
    body = await _body(request)
    reset = actions.reset_offsets(
        _state(request).broker, request.match_info["group_id"], _reset_spec(body)
    )
    return web.json_response({"offsets": reset})


async def delete_group_form(request: web.Request) -> web.Response:
    group_id = request.match_info["group_id"]
    await _form(request)
    try:
        actions.delete_group(_state(request).broker, group_id)
    except ConsoleError as exc:
        if group_id not in _state(request).broker.groups.groups:
            raise
        return _group_html(request, group_id, exc.status, ("error", exc.message))
    _redirect("/groups", f"Group {group_id} deleted.")


async def delete_group_api(request: web.Request) -> web.Response:
    group_id = request.match_info["group_id"]
    actions.delete_group(_state(request).broker, group_id)
    return web.json_response({"deleted": group_id})


# ---- transactions and static files ------------------------------------------------------------


async def transactions_page(request: web.Request) -> web.Response:
    body = pages.transactions_page(views.transactions_view(_state(request).broker))
    return _page(request, "Transactions and producers", "transactions", body)


async def transactions_api(request: web.Request) -> web.Response:
    return web.json_response(views.transactions_view(_state(request).broker))


async def static_file(request: web.Request) -> web.Response:
    name = request.match_info["file"]
    if name not in STATIC_TYPES:
        raise ConsoleError(404, f"no static file {name!r}")
    return web.Response(
        body=_state(request).static[name],
        content_type=STATIC_TYPES[name],
        headers={"Cache-Control": "no-cache"},
    )


def routes() -> list[web.RouteDef]:
    return [
        web.get("/", overview_page),
        web.get("/api/overview", overview_api),
        web.get("/api/throughput", throughput_api),
        web.get("/topics", topics_page),
        web.post("/topics", create_topic_form),
        web.get("/api/topics", topics_api),
        web.post("/api/topics", create_topic_api),
        web.get("/topics/{name}", topic_page),
        web.get("/api/topics/{name}", topic_api),
        web.delete("/api/topics/{name}", delete_topic_api),
        web.post("/topics/{name}/delete", delete_topic_form),
        web.post("/topics/{name}/partitions", add_partitions_form),
        web.post("/api/topics/{name}/partitions", add_partitions_api),
        web.post("/topics/{name}/configs", alter_configs_form),
        web.post("/api/topics/{name}/configs", alter_configs_api),
        web.post("/topics/{name}/delete-records", delete_records_form),
        web.post("/api/topics/{name}/delete-records", delete_records_api),
        web.get("/topics/{name}/messages", messages_page),
        web.post("/topics/{name}/messages", produce_form),
        web.get("/api/topics/{name}/messages", messages_api),
        web.post("/api/topics/{name}/messages", produce_api),
        web.get("/groups", groups_page),
        web.get("/api/groups", groups_api),
        web.get("/groups/{group_id}", group_page),
        web.get("/api/groups/{group_id}", group_api),
        web.post("/groups/{group_id}/reset", reset_offsets_form),
        web.post("/api/groups/{group_id}/reset", reset_offsets_api),
        web.post("/groups/{group_id}/delete", delete_group_form),
        web.delete("/api/groups/{group_id}", delete_group_api),
        web.get("/transactions", transactions_page),
        web.get("/api/transactions", transactions_api),
        web.get("/static/{file}", static_file),
    ]


def make_app(broker: Broker, read_only: bool, bound_host: str) -> web.Application:
    app = web.Application(
        middlewares=[errors_middleware, access_middleware], client_max_size=MAX_BODY_BYTES
    )
    app[CONSOLE_KEY] = ConsoleState(broker, read_only, bound_host)
    app.on_response_prepare.append(_security_headers)
    app.add_routes(routes())
    return app


class Console:
    """A running console: `url`, and `stop()`."""

    def __init__(self, runner: web.AppRunner, state: ConsoleState) -> None:
        self._runner = runner
        self._state = state
        host, port = runner.addresses[0][:2]
        self.host, self.port = host, port
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{port}"
        self._sampling = asyncio.get_running_loop().create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            try:
                self._state.sampler.sample()
            except Exception:
                log.exception("console: sampling failed")
            await asyncio.sleep(RATE_INTERVAL_S)

    async def stop(self) -> None:
        self._sampling.cancel()
        await self._runner.cleanup()


async def start_console(
    broker: Broker, host: str, port: int, *, read_only: bool = False
) -> Console:
    """Serve the console for `broker` (the state owner of a cluster) on host:port (0: any)."""
    runner = web.AppRunner(make_app(broker, read_only, host), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    console = Console(runner, runner.app[CONSOLE_KEY])
    log.info("console on %s%s", console.url, " (read-only)" if read_only else "")
    return console
