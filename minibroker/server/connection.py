"""The asyncio protocol for one client connection.

It only moves bytes: received bytes land in the frame decoder's own buffers (a
`BufferedProtocol`, so a request is copied once, from the kernel), frames go to `dispatch`,
run at once as far as they go without waiting (most are answered then); one that waits goes
on in its own task, so that a long-polling Fetch does not block the requests behind it (a
frame's buffer is reused once its request is answered). A native fast path's answer
(`dispatch.answer_natively`) needs no coroutine at all, and its waiting Fetch is held as a
task would be. Responses are written strictly in
request order (clients pair responses with their oldest in-flight request), those ready in
one loop iteration together, by a `ResponseWriter`, which follows the transport's flow
control. A bounded number of requests
may be in flight or answered but not yet written; past that, frames already received stay
buffered and reading pauses until responses drain; the same happens while the requests
being handled on all connections hold `queued.max.request.bytes`. A new connection first
claims a slot from the broker's `ConnectionQuotas` (closed at once, or not read from until a
slot frees); the broker closes connections idle for `connections.max.idle.ms`, where only
whole requests and responses count as activity. A client a quota throttles (its session's
`throttled_until`) gets its answer at once, then is not read from until the throttle time has
passed, as Kafka mutes the channel (KIP-219). The connection's principal comes from its TLS
client certificate (`ssl.principal.mapping.rules`) or SASL login, else User:ANONYMOUS.

Until a SASL client has authenticated, its requests are read one at a time (the next once the
last is answered), each frame at most `sasl.server.max.receive.size` by its size prefix, as
Kafka's SaslServerAuthenticator reads them: an unauthenticated client holds no more memory
than that. A larger size fails the authentication. A failed authentication's answer (if any)
and the close come after `connection.failed.authentication.delay.ms`, nothing being read
meanwhile, so that one connection cannot try passwords faster than that.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any, Protocol, cast

from minibroker.auth.principal import NoMatchingRule, tls_principal
from minibroker.protocol.codec import EncodedFrame, MalformedRequest
from minibroker.server.authenticator import SaslAuthenticator
from minibroker.server.context import Session
from minibroker.server.dispatch import UNHANDLED, answer_natively, dispatch_decoded
from minibroker.server.framing import DIRECT_FRAME_BYTES, FramingError, new_decoder
from minibroker.server.quotas import Admission, Slot
from minibroker.server.writer import ResponseWriter

if TYPE_CHECKING:
    from minibroker.config import Listener
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

MAX_IN_FLIGHT_REQUESTS = 64
# After a failed authentication's answer: how long the client may take to close before we do.
LINGER_SECONDS = 1.0
_DISCARDED = memoryview(bytearray(64 * 1024))  # what a lingering connection reads into

Answer = bytearray | EncodedFrame | None
Outcome = Answer | BaseException


class Waiting(Protocol):
    """What answers a request that waits: its task, or a native `PendingFetch`."""

    def done(self) -> bool: ...
    def cancelled(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def result(self) -> Answer: ...
    def cancel(self) -> bool: ...


InFlight = tuple[Waiting | None, Outcome, memoryview]
"""A request in flight: the task (or pending fetch) still answering it (None once answered at
once), its answer or the exception it raised (when answered at once), and its frame. No future
for a request answered at once: that is most of them, and a future costs more than they do."""


class _Resumed:
    """Awaiting it goes on with a coroutine that already ran until it yielded `waiting_on`
    (the future it waits for, or None): the task awaiting this runs the rest of it exactly
    as if it had run the coroutine from the start (cancellation is thrown into it)."""

    def __init__(self, work: Coroutine[Any, Any, Answer], waiting_on: Any) -> None:
        self._work = work
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Answer]:
        waiting_on = self._waiting_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                self._work.close()
                raise
            except BaseException as exc:
                try:
                    waiting_on = self._work.throw(exc)
                except StopIteration as done:
                    return cast(Answer, done.value)
            else:
                try:
                    waiting_on = self._work.send(sent)
                except StopIteration as done:
                    return cast(Answer, done.value)


async def _go_on(work: Coroutine[Any, Any, Answer], waiting_on: Any) -> Answer:
    return await _Resumed(work, waiting_on)


class BrokerConnection(asyncio.BufferedProtocol):
    def __init__(self, broker: Broker, listener: Listener) -> None:
        self._broker = broker
        self._listener = listener
        security = broker.security[listener.name]
        self._authenticator = (
            SaslAuthenticator(broker, listener, security) if security.sasl else None
        )
        # Requests in flight or answers unwritten before reading pauses: one at a time until a
        # SASL client has authenticated.
        self._max_unwritten = 1 if security.sasl else MAX_IN_FLIGHT_REQUESTS
        self._decoder = new_decoder(
            broker.config.get_int(
                "sasl.server.max.receive.size" if security.sasl else "socket.request.max.bytes"
            )
        )
        self._in_flight: deque[InFlight] = deque()
        self._write_scheduled = False
        self._transport: asyncio.Transport | None = None
        self._writer: ResponseWriter | None = None
        self._reading_paused = False
        self._closed = False
        self._session = Session()
        self._throttle_timer: asyncio.TimerHandle | None = None
        self._slot: Slot | None = None
        self._waiting_for_slot = False
        self._waiting_for_request_bytes = False
        self._last_active = time.monotonic()
        self._failed_authentication: asyncio.TimerHandle | None = None
        self._lingering = False
        # Made by the loop's protocol factory; kept, as each get_running_loop() is a getpid.
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self._transport = cast(asyncio.Transport, transport)
        self._writer = ResponseWriter(self._transport, self._start_buffered_frames, self.abort)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            self._session.client_host = f"/{peer[0]}"
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._broker.connections.add(self)
        if not self._set_tls_principal(transport):
            return
        address = peer[0] if isinstance(peer, tuple) and peer else ""
        self._slot = Slot(address, self._admitted, self._rejected)
        admission = self._broker.quotas.open(self._slot)
        if admission == Admission.REJECT:
            self._rejected()
        elif admission == Admission.WAIT:
            self._waiting_for_slot = True
            self._update_reading()

    def _set_tls_principal(self, transport: asyncio.BaseTransport) -> bool:
        """The client certificate's principal, on a TLS listener; False when no mapping rule
        applies to its DN (the connection is then closed, as Kafka fails its authentication)."""
        if transport.get_extra_info("ssl_object") is None:
            return True
        certificate = transport.get_extra_info("peercert") or {}
        try:
            self._session.principal = tls_principal(
                certificate.get("subject"), self._broker.principal_rules
            )
        except NoMatchingRule as exc:
            self.abort(f"TLS principal: {exc}")
            return False
        return True

    def _admitted(self) -> None:
        self._waiting_for_slot = False
        self._last_active = time.monotonic()
        self._update_reading()

    def _rejected(self) -> None:
        self.abort("connection limit reached")

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._broker.connections.discard(self)
        if self._slot is not None:
            self._broker.quotas.close(self._slot)
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        if self._failed_authentication is not None:
            self._failed_authentication.cancel()
        self._cancel_tasks()
        held = sum(len(frame) for _task, _outcome, frame in self._in_flight)
        self._in_flight.clear()
        self._broker.quotas.release_request_bytes(held)
        if self._writer is not None:
            self._writer.close()

    def pause_writing(self) -> None:
        if self._writer is not None:
            self._writer.pause()

    def resume_writing(self) -> None:
        if self._writer is not None:
            self._writer.resume()

    def get_buffer(self, sizehint: int) -> memoryview:
        return _DISCARDED if self._lingering else self._decoder.get_buffer()

    def _start_buffered_frames(self, nbytes: int = 0) -> None:
        """Start the requests buffered frames hold (room permitting); also `buffer_updated`:
        `nbytes` were received (dropped while lingering), one Python call per read."""
        # The checks (room for answers, throttling, `queued.max.request.bytes`) inline, their
        # methods called only when the cheap test fails: this loop runs once per request, and
        # each call is a measurable share of a small request's cost. Answers are written only
        # in a later callback, so the writer's queue stays put meanwhile.
        in_flight, decoder, quotas = self._in_flight, self._decoder, self._broker.quotas
        if nbytes:
            if self._lingering:
                return
            decoder.buffer_updated(nbytes)
        room = self._max_unwritten - (self._writer.queued_frames if self._writer else 0)
        started = False
        try:
            while (
                not self._closed
                and not self._lingering
                and self._failed_authentication is None
                and len(in_flight) < room
                and self._throttle_timer is None
                and (self._session.throttled_until <= 0 or not self._throttled())
                and (
                    self._slot is None
                    or quotas.max_queued_request_bytes < 0
                    or quotas.queued_request_bytes < quotas.max_queued_request_bytes
                    or self._may_start_request()
                )
                and (frame := decoder.next_frame()) is not None
            ):
                if not started:
                    self._last_active = time.monotonic()
                    started = True
                self._start(frame)
        except FramingError as exc:
            if self._authenticator is None:
                self.abort(str(exc))
            else:
                log.info("Failing SASL authentication due to invalid receive size: %s", exc)
                self._fail_authentication(None)
        if (
            in_flight
            and not self._write_scheduled
            and ((head := in_flight[0])[0] is None or head[0].done())
        ):
            # Answered at once: written in the next loop iteration, as a task's answer is
            # (callbacks and timers a handler scheduled run before its client sees it).
            self._write_scheduled = True
            self._loop.call_soon(self._request_done)
        if (  # `_update_reading` only when it may pause or resume reading
            self._reading_paused
            or len(in_flight) + (self._writer.queued_frames if self._writer else 0)
            >= self._max_unwritten
            or self._waiting_for_slot
            or self._waiting_for_request_bytes
            or self._throttle_timer is not None
            or self._failed_authentication is not None
        ):
            self._update_reading()

    buffer_updated = _start_buffered_frames

    def _may_start_request(self) -> bool:
        """Room in `queued.max.request.bytes`; otherwise wait (not reading) until freed."""
        if self._slot is None or self._broker.quotas.take_request_bytes(
            self._slot, self._request_bytes_freed
        ):
            return True
        self._waiting_for_request_bytes = True
        return False

    def _request_bytes_freed(self) -> None:
        self._waiting_for_request_bytes = False
        self._start_buffered_frames()

    def _update_reading(self) -> None:
        if self._transport is None or self._closed or self._lingering:
            return
        pause = (
            self._waiting_for_slot
            or self._waiting_for_request_bytes
            # `_unwritten`, inline: this runs twice per read
            or len(self._in_flight) + (self._writer.queued_frames if self._writer else 0)
            >= self._max_unwritten
            or self._throttle_timer is not None
            or self._failed_authentication is not None
        )
        if pause and not self._reading_paused:
            self._transport.pause_reading()
        elif not pause and self._reading_paused:
            self._transport.resume_reading()
        self._reading_paused = pause

    @property
    def _unwritten(self) -> int:
        """Requests in flight, and answers not yet handed to the transport."""
        queued = self._writer.queued_frames if self._writer is not None else 0
        return len(self._in_flight) + queued

    def _start(self, frame: memoryview) -> None:
        """Start answering the frame's request: it joins the requests in flight, answered at
        once or waiting (the native paths' answer taken here without another call, as this
        runs for every request)."""
        self._broker.quotas.queued_request_bytes += len(frame)
        if self._authenticator is not None:
            work = self._authenticator.receive(bytes(frame), self._session)
            self._in_flight.append((self._in_task(work), None, frame))
            return
        broker, listener, session = self._broker, self._listener, self._session
        try:
            answered = answer_natively(broker, frame, listener, session, self._loop)
        except Exception as exc:  # as `_run` keeps a request's exception: the connection closes
            self._in_flight.append((None, exc, frame))
            return
        if answered is UNHANDLED:
            waiting, outcome = self._run(dispatch_decoded(broker, frame, listener, session))
            self._in_flight.append((waiting, outcome, frame))
        elif answered is None or isinstance(answered, (bytearray, EncodedFrame)):
            self._in_flight.append((None, answered, frame))
        else:
            answered.add_done_callback(self._native_fetch_answered)  # a native fetch waiting
            self._in_flight.append((answered, None, frame))

    def _run(
        self, work: Coroutine[Any, Any, Answer]
    ) -> tuple[asyncio.Task[Answer], None] | tuple[None, Outcome]:
        """Run the request at once as far as it goes without waiting: most requests are
        answered then (their outcome, and no task or loop iteration). One that waits (a
        long-polling Fetch, a JoinGroup) goes on in a task from there."""
        try:
            waiting_on = work.send(None)
        except StopIteration as done:
            return None, done.value
        except Exception as exc:
            return None, exc
        return self._in_task(_go_on(work, waiting_on)), None

    def _in_task(self, work: Coroutine[Any, Any, Answer]) -> asyncio.Task[Answer]:
        task = self._loop.create_task(work)
        task.add_done_callback(self._schedule_write)
        return task

    def _native_fetch_answered(self, pending: Waiting) -> None:
        """A waiting native fetch has its answer (never called once it is cancelled): its
        entry becomes one answered at once, which the writer takes without asking the
        pending fetch again (each question a Python call)."""
        in_flight = self._in_flight
        for position, (waiting, _outcome, frame) in enumerate(in_flight):
            if waiting is pending:
                in_flight[position] = (None, pending.result(), frame)
                break
        self._schedule_write()

    def _schedule_write(self, _done: object = None) -> None:
        """Write in the next loop iteration, together with the answers of the other tasks that
        end in this one (long polls whose timeouts fire together): one send for all. Also the
        done callback of a task (`_done`)."""
        if not self._write_scheduled:
            self._write_scheduled = True
            self._loop.call_soon(self._request_done)

    def _request_done(self) -> None:
        """Write the answers ready at the head of the queue, together (one send for all), then
        start the frames held back while answers were unwritten. (One method, the checks
        inline: it runs for each read of one request.)"""
        self._write_scheduled = False
        ready: list[bytearray | EncodedFrame] = []
        in_flight, quotas = self._in_flight, self._broker.quotas
        released = 0
        try:
            while in_flight and ((head := in_flight[0])[0] is None or head[0].done()):
                task, response, frame = in_flight.popleft()
                released += len(frame)
                if task is not None:
                    if task.cancelled():
                        continue
                    response = task.exception() or task.result()
                if isinstance(response, BaseException):
                    self._write(ready)
                    self.abort(
                        str(response) if isinstance(response, MalformedRequest) else repr(response)
                    )
                    return
                if len(frame) > DIRECT_FRAME_BYTES:  # others are copies, never reused
                    self._decoder.recycle(frame)
                if self._authenticator is not None and self._authenticator.failed:
                    self._write(ready)
                    self._fail_authentication(response)
                    return
                if response is not None:
                    ready.append(response)
        finally:
            # once for all the answers; the call only when it may start other connections'
            # waiting requests
            quotas.queued_request_bytes -= released
            if quotas.waiting_for_bytes:
                quotas.release_request_bytes(0)
        if self._authenticator is not None and self._authenticator.complete:
            self._authenticated()
        # `_write`, inline, and the writer's own first case: one answer in one piece
        writer, transport = self._writer, self._transport
        if ready and writer is not None and transport is not None and not self._closed:
            if writer.direct and len(ready) == 1 and isinstance(ready[0], bytearray):
                transport.write(ready[0])
            else:
                writer.write(ready)
            self._last_active = time.monotonic()
        if self._session.throttled_until > 0:
            self._mute_while_throttled()
        if self._decoder.buffered:  # frames held back while answers were unwritten
            self._start_buffered_frames()
        elif self._reading_paused or (self._writer is not None and self._writer.queued_frames):
            # Fewer requests in flight may resume reading, answers queued behind a full socket
            # may pause it; otherwise nothing changed since the last `_update_reading` (every
            # other change of its conditions is followed by one).
            self._update_reading()

    def _authenticated(self) -> None:
        """Past SASL authentication: requests run in parallel again, each frame up to
        `socket.request.max.bytes`."""
        self._authenticator = None
        self._max_unwritten = MAX_IN_FLIGHT_REQUESTS
        self._decoder.max_frame_bytes = self._broker.config.get_int("socket.request.max.bytes")

    def _write(self, responses: list[bytearray | EncodedFrame]) -> None:
        if responses and self._writer is not None and not self._closed:
            self._writer.write(responses)
            self._last_active = time.monotonic()
        # Also after a request that has no answer (acks=0 Produce), as Kafka mutes then too.
        if self._session.throttled_until > 0:  # (else never throttled: no call)
            self._mute_while_throttled()

    def _throttled(self) -> bool:
        """Muted, or about to be once the throttled request's answer is written: requests
        already received wait in the buffer."""
        until = self._session.throttled_until
        return self._throttle_timer is not None or (until > 0 and until > time.monotonic())

    def _mute_while_throttled(self) -> None:
        until = self._session.throttled_until
        if until <= 0:  # never throttled: no clock to read
            return
        delay = until - time.monotonic()
        if delay <= 0 or self._throttle_timer is not None or self._closed:
            return
        self._throttle_timer = asyncio.get_running_loop().call_later(delay, self._unmute)
        self._update_reading()

    def _unmute(self) -> None:
        self._throttle_timer = None
        self._mute_while_throttled()
        self._start_buffered_frames()

    def _fail_authentication(self, answer: Answer) -> None:
        """Answer (if there is an answer) and close after the failed-authentication delay."""
        if self._closed:
            return
        delay = self._broker.config.get_int("connection.failed.authentication.delay.ms")
        self._failed_authentication = asyncio.get_running_loop().call_later(
            delay / 1000, self._answer_and_close, answer
        )
        self._update_reading()

    def _answer_and_close(self, answer: Answer) -> None:
        self._failed_authentication = None
        if answer is not None:
            self._write([answer])
        self._linger_and_close()

    def _linger_and_close(self) -> None:
        """Close once the client has the answer. Closing while bytes it sent during the delay
        are still unread would reset the connection, and a reset can discard the answer on
        the client's side before it reads it; ending our side right after the answer is no
        better, as kafka-python 3 drops the bytes it read together with an end of stream. So
        keep the connection open, read and drop whatever comes, and close when the client
        does or after LINGER_SECONDS."""
        if self._closed or self._transport is None:
            return
        self._lingering = True
        self._transport.resume_reading()
        self._reading_paused = False
        asyncio.get_running_loop().call_later(LINGER_SECONDS, self.close)

    def abort(self, reason: str) -> None:
        if self._closed:
            return
        log.info("closing connection: %s", reason)
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    @property
    def idle(self) -> bool:
        return not self._unwritten

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def idle_seconds(self, now: float) -> float:
        """Time since the last whole request or response; 0 while requests are in flight."""
        return 0.0 if self._unwritten else now - self._last_active

    def close(self) -> None:
        if self._transport is not None and not self._closed:
            self._closed = True
            self._transport.close()

    def terminate(self) -> None:
        """Abort the connection and cancel its requests now: a stopping broker must not let
        one append to its logs after they are closed (the transport reports the connection
        lost only later, once a client reads what is queued)."""
        self._cancel_tasks()
        self.abort("broker stopping")

    def _cancel_tasks(self) -> None:
        for task, _outcome, _frame in self._in_flight:
            if task is not None:
                task.cancel()
