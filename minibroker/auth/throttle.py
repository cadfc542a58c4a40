"""Quotas on the request path: what `server/dispatch.py` and the handlers call when
`broker.client_quotas.enabled` (otherwise nothing here runs).

After a request is handled, `throttled` records its produce bytes (`producer_byte_rate`) and
the time its handler ran (`request_percentage`; not for acks=0 produce or follower fetches,
which Kafka exempts), puts the largest throttle time into the response's `throttle_time_ms`
(a hand-framed response is rebuilt as a codec message for that) and mutes the connection for
it after the answer (`Session.throttled_until`), as Kafka's KIP-219 channel muting does.
Fetch and ShareFetch (consumer bytes: `consumer_max_bytes`, `consumer_throttle`) and the topic
admin APIs (controller mutations) compute their own throttle and call `mute_for`.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import EncodedFrame

if TYPE_CHECKING:
    from minibroker.auth.quota_stats import MutationQuota
    from minibroker.server.context import RequestContext, Session

FIRST_REPLICA_STATE_VERSION = 15


class RequestTimer:
    """The time a handler spends running (not waiting), as Kafka counts request thread time."""

    def __init__(self) -> None:
        self.nanos = 0

    def run(self, work: Coroutine[Any, Any, Any]) -> _Timed:
        return _Timed(work, self)


class _Timed:
    def __init__(self, work: Coroutine[Any, Any, Any], timer: RequestTimer) -> None:
        self._work = work
        self._timer = timer

    def __await__(self) -> Generator[Any, Any, Any]:
        work = self._work
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = time.perf_counter_ns()
            try:
                waiting_on = work.send(sent) if thrown is None else work.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self._timer.nanos += time.perf_counter_ns() - started
            try:
                sent, thrown = (yield waiting_on), None
            except GeneratorExit:
                work.close()
                raise
            except BaseException as exc:
                sent, thrown = None, exc


def mute_for(session: Session, throttle_ms: int) -> None:
    """Mute the connection for `throttle_ms` after its answer is written."""
    if throttle_ms > 0:
        until = time.monotonic() + throttle_ms / 1000
        session.throttled_until = max(session.throttled_until, until)


def consumer_max_bytes(ctx: RequestContext, requested: int) -> int:
    """A consumer fetch's `max_bytes`, capped by its `consumer_byte_rate` at what one quota
    window allows (Kafka: larger fetches would be throttled whatever came before)."""
    cap = ctx.broker.client_quotas.max_fetch_bytes(ctx.principal, ctx.header.client_id)
    return requested if cap is None else min(requested, cap)


def consumer_throttle(ctx: RequestContext, response_size: int) -> int:
    """The `consumer_byte_rate` throttle of a consumer fetch answering `response_size` bytes.
    Throttled, the bytes are unrecorded (the answer goes out empty, Kafka's throttled fetch
    response) and the connection is muted for the throttle time."""
    quotas, now_ms = ctx.broker.client_quotas, ctx.now_ms()
    principal, client_id = ctx.principal, ctx.header.client_id
    throttle = quotas.record_fetch(principal, client_id, response_size, now_ms)
    if throttle > 0:
        quotas.unrecord_fetch(principal, client_id, response_size, now_ms)
        mute_for(ctx.session, throttle)
    return throttle


def is_follower_fetch(api_version: int, request: Any) -> bool:
    if api_version >= FIRST_REPLICA_STATE_VERSION:
        state = request.replica_state
        return state is not None and int(state.replica_id) >= 0
    return int(request.replica_id) >= 0


def _exempt_from_request_quota(ctx: RequestContext, request: Any) -> bool:
    api_key = ctx.header.api_key
    if api_key == ApiKey.Produce:
        return bool(request.acks == 0)
    return api_key == ApiKey.Fetch and is_follower_fetch(ctx.api_version, request)


def throttled(
    ctx: RequestContext, request: Any, request_size: int, handler_nanos: int, response: Any
) -> Any:
    """The response with the throttle time of the quotas it broke; the connection muted."""
    quotas = ctx.broker.client_quotas
    principal, client_id = ctx.session.principal, ctx.header.client_id
    throttle = 0
    if ctx.header.api_key == ApiKey.Produce:
        throttle = quotas.record_produce(principal, client_id, request_size)
    if not _exempt_from_request_quota(ctx, request):
        throttle = max(throttle, quotas.record_request_time(principal, client_id, handler_nanos))
    if throttle <= 0:
        return response
    mute_for(ctx.session, throttle)
    if isinstance(response, EncodedFrame):
        response = response.message()
    if response is not None and "throttle_time_ms" in type(response).fields:
        response.throttle_time_ms = max(response.throttle_time_ms, throttle)
    return response


THROTTLING_QUOTA_EXCEEDED_MESSAGE = "The throttling quota has been exceeded."


def mutation_quota(ctx: RequestContext, strict_from_version: int) -> MutationQuota | None:
    """The request's controller mutation quota (strict from `strict_from_version`, as Kafka's
    ControllerApis), None without any `controller_mutation_rate`."""
    quotas = ctx.broker.client_quotas
    if not quotas.controller_mutation.enabled:
        return None
    strict = ctx.api_version >= strict_from_version
    return quotas.mutation_quota(ctx.session.principal, ctx.header.client_id, strict)


def mutation_throttle(ctx: RequestContext, quota: MutationQuota | None) -> int:
    """The throttle time the request's mutations earned; the connection muted for it."""
    if quota is None:
        return 0
    throttle = quota.throttle_time_ms()
    mute_for(ctx.session, throttle)
    return throttle
