"""Fault and latency injection, request hooks and request recording, for tests.

`dispatch` hands every decoded request to `Faults.intercept` before its handler runs. In
order: the request is recorded; a pending disconnect closes the connection; latency for its
node and API is added; holds keep it until released or their condition holds (kfake's
SleepControl); hooks (`control`, kfake's ControlKey) may answer it, pass, or close the
connection; pushed errors (librdkafka's push_request_errors) answer it with an error code.
A broker with nothing configured only pays for the recording, and not even that when
recording is off. Only the last `max_recorded_requests` requests are kept (a ring buffer), so
a long-running test broker does not grow without bound.

Methods may be called from any thread: the configuration is guarded by a lock and holds
wake their waiters through the event loop they wait on.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, response_class
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)


class CloseConnection(Exception):
    """Raised to make the connection that sent the request close without an answer."""


CLOSE = CloseConnection("closed by a test hook")
"""Return this from a `control` hook to close the connection instead of answering."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as a node received it."""

    time: float
    node_id: int
    client_id: str
    client_host: str
    api_key: ApiKey
    api_version: int
    correlation_id: int
    body: Any

    @property
    def api_name(self) -> str:
        return self.api_key.name

    def partitions(self) -> set[tuple[str, int]]:
        """The (topic, partition) pairs the request names (Produce, Fetch, ListOffsets...)."""
        return set(_request_partitions(self.api_key, self.body))


@dataclass
class Call:
    """What a `control` hook sees: the decoded request and where it came from."""

    request: RecordedRequest
    body: Any

    @property
    def node_id(self) -> int:
        return self.request.node_id

    @property
    def api_key(self) -> ApiKey:
        return self.request.api_key

    @property
    def api_version(self) -> int:
        return self.request.api_version

    def respond(self, **fields: Any) -> Any:
        """A response of this request's API and version with these fields."""
        return new_response(self.api_key, self.api_version, **fields)

    def error(self, error: ErrorCode) -> Any:
        """This request answered with `error` (every partition it names, or top-level)."""
        return error_response(self.api_key, self.api_version, self.body, error)


HookResult = Any
Hook = Callable[[Call], HookResult | Awaitable[HookResult]]


@dataclass(frozen=True)
class _Match:
    api_key: int | None = None
    node_id: int | None = None
    topic: str | None = None
    partition: int | None = None

    def matches(self, request: RecordedRequest) -> bool:
        if self.api_key is not None and request.api_key != self.api_key:
            return False
        if self.node_id is not None and request.node_id != self.node_id:
            return False
        if not self.names_partitions:
            return True
        return any(self.covers(key) for key in request.partitions())

    @property
    def names_partitions(self) -> bool:
        return self.topic is not None or self.partition is not None

    def covers(self, key: PartitionKey) -> bool:
        topic, partition = key
        return (self.topic is None or topic == self.topic) and (
            self.partition is None or partition == self.partition
        )


@dataclass
class _PushedErrors:
    match: _Match
    errors: deque[ErrorCode]


@dataclass
class _Control:
    match: _Match
    hook: Hook
    keep: bool


@dataclass
class _Disconnect:
    match: _Match
    remaining: int


class Hold:
    """Requests held until `release()` or until `until()` is true (checked on every request
    any node receives and on `recheck()`). `held` counts the requests waiting now."""

    def __init__(self, match: _Match, until: Callable[[], bool] | None, count: int | None):
        self._match = match
        self._until = until
        self._remaining = count
        self._released = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()
        self.total_held = 0

    @property
    def held(self) -> int:
        with self._lock:
            return sum(1 for _, waiter in self._waiters if not waiter.done())

    def release(self) -> None:
        """Let every held request go on, and stop holding new ones."""
        with self._lock:
            self._released = True
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(_resolve, waiter)

    def recheck(self) -> None:
        if self._until is not None and self._until():
            self.release()

    def _claims(self, request: RecordedRequest) -> bool:
        with self._lock:
            if self._released or not self._match.matches(request):
                return False
            if self._remaining is not None:
                if self._remaining == 0:
                    return False
                self._remaining -= 1
            return True

    async def _wait(self) -> None:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._released:
                return
            self._waiters.append((loop, waiter))
            self.total_held += 1
        await waiter


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


DEFAULT_MAX_RECORDED_REQUESTS = 10_000


@dataclass
class Faults:
    record_requests: bool = False
    _recorded: deque[RecordedRequest] = field(
        default_factory=lambda: deque(maxlen=DEFAULT_MAX_RECORDED_REQUESTS)
    )
    _errors: list[_PushedErrors] = field(default_factory=list)
    _latency: dict[tuple[int | None, int | None], float] = field(default_factory=dict)
    _holds: list[Hold] = field(default_factory=list)
    _controls: list[_Control] = field(default_factory=list)
    _disconnects: list[_Disconnect] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def active(self) -> bool:
        return bool(
            self.record_requests
            or self._errors
            or self._latency
            or self._holds
            or self._controls
            or self._disconnects
        )

    # ---- configuration -------------------------------------------------------------------

    @property
    def max_recorded_requests(self) -> int:
        return self._recorded.maxlen or 0

    def set_recording(self, enabled: bool, max_recorded_requests: int) -> None:
        """Record requests or not; keep only the last `max_recorded_requests` (the oldest
        are dropped first)."""
        if max_recorded_requests < 1:
            raise ValueError("max_recorded_requests must be at least 1")
        with self._lock:
            self.record_requests = enabled
            self._recorded = deque(self._recorded, maxlen=max_recorded_requests)

    def push_errors(
        self,
        api_key: int,
        *errors: ErrorCode,
        topic: str | None = None,
        partition: int | None = None,
        node: int | None = None,
    ) -> None:
        """The next len(errors) matching requests are answered with these codes, in order.

        Without a topic or partition, the whole request gets the error and is not handled
        (nothing is written). With a topic and/or partition, only requests naming it match,
        and only the matching partitions get the error; the handler answers the others.
        """
        check_error_response(api_key)
        if (topic is not None or partition is not None) and api_key not in _PARTITIONED:
            raise ValueError(f"{ApiKey.name_of(api_key)} requests name no partitions")
        with self._lock:
            self._errors.append(
                _PushedErrors(_Match(api_key, node, topic, partition), deque(errors))
            )

    def set_latency(
        self, seconds: float, *, node: int | None = None, api_key: int | None = None
    ) -> None:
        """Delay every request to `node` (all nodes: None) of `api_key` (all: None) by
        `seconds` before handling it; the delays of every matching setting add up. 0 clears."""
        with self._lock:
            if seconds <= 0:
                self._latency.pop((node, api_key), None)
            else:
                self._latency[(node, api_key)] = seconds

    def hold(
        self,
        api_key: int | None = None,
        *,
        node: int | None = None,
        topic: str | None = None,
        until: Callable[[], bool] | None = None,
        count: int | None = None,
    ) -> Hold:
        """Hold matching requests (at most `count`, None: all) until `Hold.release()` or until
        `until()` returns true. The condition is checked whenever a node receives a request."""
        hold = Hold(_Match(api_key, node, topic), until, count)
        with self._lock:
            self._holds.append(hold)
        return hold

    def control(
        self, api_key: int | None, hook: Hook, *, node: int | None = None, keep: bool = False
    ) -> None:
        """Run `hook(call)` on every matching request before its handler.

        The hook returns None to pass the request on (the hook stays), a response object
        (`call.respond(...)`, `call.error(code)`) to answer with it, or `CLOSE` to close the
        connection. A hook that answered or closed is removed unless `keep` is true, like
        kfake's ControlKey/KeepControl. Hooks run on the broker's event loop, oldest first;
        they may be coroutines. A hook that raises is logged and closes the connection.
        """
        with self._lock:
            self._controls.append(_Control(_Match(api_key, node), hook, keep))

    def disconnect_after(
        self, count: int, *, node: int | None = None, api_key: int | None = None
    ) -> None:
        """After `count` more matching requests, the next one closes its connection (once)."""
        with self._lock:
            self._disconnects.append(_Disconnect(_Match(api_key, node), count))

    def clear(self) -> None:
        """Remove every pushed error, latency, hook and disconnect; release every hold."""
        with self._lock:
            holds, self._holds = self._holds, []
            self._errors.clear()
            self._latency.clear()
            self._controls.clear()
            self._disconnects.clear()
        for hold in holds:
            hold.release()

    def requests(
        self,
        api_key: int | None = None,
        *,
        node: int | None = None,
        client_id: str | None = None,
        topic: str | None = None,
    ) -> list[RecordedRequest]:
        match = _Match(api_key, node, topic)
        with self._lock:
            recorded = list(self._recorded)
        return [
            request
            for request in recorded
            if match.matches(request) and (client_id is None or request.client_id == client_id)
        ]

    def clear_requests(self) -> None:
        with self._lock:
            self._recorded.clear()

    # ---- the request path ----------------------------------------------------------------

    async def intercept(self, request: RecordedRequest) -> Any:
        """None to handle the request, the response to send instead of handling it, or
        `EntryErrors` for the partitions that get a pushed error (the rest is handled).

        Raises CloseConnection when the connection must close without an answer.
        """
        if self.record_requests:
            with self._lock:
                self._recorded.append(request)
        self._recheck_holds()
        if self._take_disconnect(request):
            raise CloseConnection(f"disconnect after N requests ({request.api_name})")
        delay = self._latency_for(request)
        if delay > 0:
            await asyncio.sleep(delay)
        for hold in self._claiming_holds(request):
            await hold._wait()
        answer = await self._run_controls(request)
        if answer is not None:
            return answer
        error = self._take_error(request)
        if isinstance(error, ErrorCode):
            return error_response(request.api_key, request.api_version, request.body, error)
        return error

    def _recheck_holds(self) -> None:
        with self._lock:
            holds = list(self._holds)
        for hold in holds:
            hold.recheck()

    def _take_disconnect(self, request: RecordedRequest) -> bool:
        with self._lock:
            for disconnect in self._disconnects:
                if disconnect.match.matches(request):
                    if disconnect.remaining == 0:
                        self._disconnects.remove(disconnect)
                        return True
                    disconnect.remaining -= 1
        return False

    def _latency_for(self, request: RecordedRequest) -> float:
        with self._lock:
            settings = list(self._latency.items())
        return sum(
            seconds
            for (node, api_key), seconds in settings
            if node in (None, request.node_id) and api_key in (None, request.api_key)
        )

    def _claiming_holds(self, request: RecordedRequest) -> list[Hold]:
        with self._lock:
            holds = list(self._holds)
        return [hold for hold in holds if hold._claims(request)]

    async def _run_controls(self, request: RecordedRequest) -> Any:
        with self._lock:
            controls = [c for c in self._controls if c.match.matches(request)]
        for control in controls:
            try:
                result = control.hook(Call(request, request.body))
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:
                log.exception("control hook %r failed on %s", control.hook, request.api_name)
                raise CloseConnection("control hook failed") from exc
            if result is None:
                continue
            if not control.keep:
                with self._lock:
                    if control in self._controls:
                        self._controls.remove(control)
            if result is CLOSE or isinstance(result, CloseConnection):
                raise CloseConnection("closed by a test hook")
            return result
        return None

    def _take_error(self, request: RecordedRequest) -> ErrorCode | EntryErrors | None:
        """The error for the whole request, or for the partitions that pushed errors with a
        topic/partition name (each such push gives its next code to every partition of the
        request it covers; a request with several takes one code from each)."""
        taken: dict[EntryKey, ErrorCode] = {}
        with self._lock:
            for pushed in list(self._errors):
                if not pushed.match.matches(request):
                    continue
                if not pushed.match.names_partitions:
                    if taken:
                        continue
                    return self._next_error(pushed)
                covered = [
                    key
                    for key in request.partitions()
                    if pushed.match.covers(key) and key not in taken
                ]
                if covered:
                    taken.update(dict.fromkeys(covered, self._next_error(pushed)))
        return EntryErrors(taken) if taken else None

    def _next_error(self, pushed: _PushedErrors) -> ErrorCode:
        error = pushed.errors.popleft()
        if not pushed.errors:
            self._errors.remove(pushed)
        return error


# ---- error responses built from the request ----------------------------------------------

PartitionKey = tuple[str, int]
EntryKey = PartitionKey | str
"""A partition (topic, index) of a partitioned request, or a group / transactional id."""


@dataclass(frozen=True)
class EntryErrors:
    """Errors for some entries of a request: these get the error, the handler answers the
    others (`without_entries`, `with_entry_errors`)."""

    errors: dict[EntryKey, ErrorCode]


@dataclass(frozen=True)
class _Shape:
    """Where a partitioned API keeps its topics and partitions, in request and response."""

    request_topics: str
    request_partitions: str
    request_index: str | None  # None: the partitions are the indexes themselves
    response_topics: str
    response_partitions: str
    response_index: str
    response_topic_name: str = "name"
    response_error: str = "error_code"


_PARTITIONED: dict[int, _Shape] = {
    ApiKey.Produce: _Shape(
        "topic_data", "partition_data", "index", "responses", "partition_responses", "index"
    ),
    ApiKey.Fetch: _Shape(
        "topics", "partitions", "partition", "responses", "partitions", "partition_index", "topic"
    ),
    ApiKey.ListOffsets: _Shape(
        "topics", "partitions", "partition_index", "topics", "partitions", "partition_index"
    ),
    ApiKey.OffsetCommit: _Shape(
        "topics", "partitions", "partition_index", "topics", "partitions", "partition_index"
    ),
    ApiKey.TxnOffsetCommit: _Shape(
        "topics", "partitions", "partition_index", "topics", "partitions", "partition_index"
    ),
    ApiKey.DeleteRecords: _Shape(
        "topics", "partitions", "partition_index", "topics", "partitions", "partition_index"
    ),
    ApiKey.OffsetForLeaderEpoch: _Shape(
        "topics", "partitions", "partition", "topics", "partitions", "partition", "topic"
    ),
    ApiKey.AddPartitionsToTxn: _Shape(  # v0-3, the versions served
        "v3_and_below_topics",
        "partitions",
        None,
        "results_by_topic_v3_and_below",
        "results_by_partition",
        "partition_index",
        response_error="partition_error_code",
    ),
}

# Fields Kafka sets on a partition answered with an error, where they differ from the defaults.
_ERROR_PARTITION_FIELDS: dict[int, dict[str, Any]] = {
    ApiKey.Produce: {"base_offset": -1},
    ApiKey.Fetch: {"high_watermark": -1},
}


@dataclass(frozen=True)
class _Keyed:
    """An API whose request lists several groups (or transactional ids), answered per key."""

    request_list: str
    request_key: str | None  # None: the items are the keys themselves
    response_list: str
    response_key: str
    min_version: int = 0


KEYED: dict[int, _Keyed] = {
    ApiKey.OffsetFetch: _Keyed("groups", "group_id", "groups", "group_id", min_version=8),
    ApiKey.DescribeGroups: _Keyed("groups", None, "groups", "group_id"),
    ApiKey.DeleteGroups: _Keyed("groups_names", None, "results", "group_id"),
    ApiKey.ConsumerGroupDescribe: _Keyed("group_ids", None, "groups", "group_id"),
    ApiKey.DescribeTransactions: _Keyed(
        "transactional_ids", None, "transaction_states", "transactional_id"
    ),
}


def _topic_name(topic: Any) -> str:
    name = getattr(topic, "name", None)
    return str(name if name is not None else getattr(topic, "topic", ""))


def name_topics(api_key: int, body: Any, names: Callable[[Any], str | None]) -> None:
    """Fill in the names of the topics a request gives by id only (Fetch v13+), as far as
    they are known, so that recording, pushed errors and hooks see them by name."""
    shape = _PARTITIONED.get(api_key)
    if shape is None:
        return
    for topic in getattr(body, shape.request_topics, None) or []:
        topic_id = getattr(topic, "topic_id", None)
        if topic_id is None or _topic_name(topic):
            continue
        name = names(topic_id)
        if name is not None:
            setattr(topic, "name" if hasattr(topic, "name") else "topic", name)


def _index(shape: _Shape, partition: Any) -> int:
    return int(
        partition if shape.request_index is None else getattr(partition, shape.request_index)
    )


def _request_partitions(api_key: int, body: Any) -> Iterable[PartitionKey]:
    shape = _PARTITIONED.get(api_key)
    if shape is None:
        return
    for topic in getattr(body, shape.request_topics, None) or []:
        for partition in getattr(topic, shape.request_partitions, None) or []:
            yield _topic_name(topic), _index(shape, partition)


def _keyed(api_key: int, api_version: int) -> _Keyed | None:
    keyed = KEYED.get(api_key)
    return keyed if keyed is not None and api_version >= keyed.min_version else None


def request_keys(api_key: int, api_version: int, body: Any) -> list[str]:
    """The groups (or transactional ids) of a request answered per key (`KEYED`)."""
    keyed = _keyed(api_key, api_version)
    if keyed is None:
        return []
    items = getattr(body, keyed.request_list, None) or []
    return [
        item if keyed.request_key is None else getattr(item, keyed.request_key) for item in items
    ]


def _struct_of(message: Any, field_name: str) -> Any:
    """The class of the items of array field `field_name` of a message class or struct."""
    return message.fields[field_name].data_class


def check_error_response(api_key: int) -> None:
    if api_key in _PARTITIONED or "error_code" in response_class(api_key).fields:
        return
    raise ValueError(
        f"{ApiKey.name_of(api_key)} responses have no error code to set; "
        "answer it from a control() hook instead"
    )


def error_response(api_key: int, api_version: int, body: Any, error: ErrorCode) -> Any:
    """The response to `body` with `error` for every partition it names, else top-level."""
    if api_key not in _PARTITIONED:
        return new_response(api_key, api_version, error_code=error)
    errors: dict[EntryKey, ErrorCode] = dict.fromkeys(_request_partitions(api_key, body), error)
    return with_entry_errors(api_key, api_version, body, None, errors)


def without_entries(api_key: int, api_version: int, body: Any, keys: Iterable[EntryKey]) -> Any:
    """A copy of the request without these partitions or keys; None when nothing remains.
    The request as sent (which recording keeps) is not changed."""
    dropped = set(keys)
    remaining = copy.copy(body)
    shape = _PARTITIONED.get(api_key)
    keyed = _keyed(api_key, api_version)
    if shape is not None:
        topics = []
        for topic in getattr(body, shape.request_topics, None) or []:
            name = _topic_name(topic)
            kept = [
                partition
                for partition in getattr(topic, shape.request_partitions, None) or []
                if (name, _index(shape, partition)) not in dropped
            ]
            if kept:
                topics.append(copy.copy(topic))
                setattr(topics[-1], shape.request_partitions, kept)
        setattr(remaining, shape.request_topics, topics)
        if api_key == ApiKey.Fetch:
            remaining.max_wait_ms = 0  # a partition in error answers the fetch at once (Kafka)
        return remaining if topics else None
    if keyed is not None:
        items = getattr(body, keyed.request_list, None) or []
        keys_of = request_keys(api_key, api_version, body)
        kept = [item for item, key in zip(items, keys_of, strict=True) if key not in dropped]
        setattr(remaining, keyed.request_list, kept)
        return remaining if kept else None
    raise ValueError(f"{ApiKey.name_of(api_key)} requests have no entries to answer apart")


def with_entry_errors(
    api_key: int,
    api_version: int,
    body: Any,
    handled: Any,
    errors: dict[EntryKey, ErrorCode],
) -> Any:
    """The handler's response to the rest of the request (`handled`, None when nothing was
    left to handle) with `errors` answered for their entries, in the request's order."""
    if handled is None:
        handled = new_response(api_key, api_version)
    shape = _PARTITIONED.get(api_key)
    if shape is not None:
        _merge_partitions(api_key, shape, body, handled, errors)
    else:
        keyed = _keyed(api_key, api_version)
        assert keyed is not None, f"{ApiKey.name_of(api_key)} is not answered per entry"
        _merge_keys(api_key, api_version, keyed, body, handled, errors)
    return handled


def _merge_partitions(
    api_key: int, shape: _Shape, body: Any, handled: Any, errors: dict[EntryKey, ErrorCode]
) -> None:
    topic_type = _struct_of(response_class(api_key), shape.response_topics)
    partition_type = _struct_of(topic_type, shape.response_partitions)
    error_fields = _ERROR_PARTITION_FIELDS.get(api_key, {})
    handled_topics: dict[str, Any] = {}
    answered: dict[PartitionKey, Any] = {}
    for topic in getattr(handled, shape.response_topics, None) or []:
        name = str(getattr(topic, shape.response_topic_name))
        handled_topics.setdefault(name, topic)
        for partition in getattr(topic, shape.response_partitions, None) or []:
            answered[(name, getattr(partition, shape.response_index))] = partition
    topics = []
    for request_topic in getattr(body, shape.request_topics, None) or []:
        name = _topic_name(request_topic)
        partitions = []
        for request_partition in getattr(request_topic, shape.request_partitions, None) or []:
            key = (name, _index(shape, request_partition))
            if key in errors:
                fields = {shape.response_index: key[1], shape.response_error: errors[key]}
                partitions.append(partition_type(**fields, **error_fields))
            elif key in answered:
                partitions.append(answered[key])
        if name in handled_topics:
            topic = handled_topics[name]
        else:
            topic = topic_type(**{shape.response_topic_name: name})
            if getattr(request_topic, "topic_id", None) is not None and "topic_id" in topic.fields:
                topic.topic_id = request_topic.topic_id
        setattr(topic, shape.response_partitions, partitions)
        topics.append(topic)
    setattr(handled, shape.response_topics, topics)


def _merge_keys(
    api_key: int,
    api_version: int,
    keyed: _Keyed,
    body: Any,
    handled: Any,
    errors: dict[EntryKey, ErrorCode],
) -> None:
    entry_type = _struct_of(response_class(api_key), keyed.response_list)
    answered = {
        getattr(entry, keyed.response_key): entry
        for entry in getattr(handled, keyed.response_list, None) or []
    }
    entries = []
    for key in request_keys(api_key, api_version, body):
        if key in errors:
            entries.append(entry_type(**{keyed.response_key: key}, error_code=errors[key]))
        elif key in answered:
            entries.append(answered[key])
    setattr(handled, keyed.response_list, entries)
