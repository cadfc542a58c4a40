"""The asyncio protocol for one client connection.

It only moves bytes: frames go to `dispatch`, each in its own task so that a long-polling
Fetch does not block the requests behind it, and responses are written strictly in request
order (clients pair responses with their oldest in-flight request). A bounded number of
requests may be in flight; past that, reading pauses until responses drain.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from typing import TYPE_CHECKING

from minibroker.protocol.codec import MalformedRequest
from minibroker.server.dispatch import dispatch
from minibroker.server.framing import FrameDecoder, FramingError

if TYPE_CHECKING:
    from minibroker.config import Listener
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)

MAX_IN_FLIGHT_REQUESTS = 64


class BrokerConnection(asyncio.Protocol):
    def __init__(self, broker: Broker, listener: Listener) -> None:
        self._broker = broker
        self._listener = listener
        self._decoder = FrameDecoder(broker.config.get_int("socket.request.max.bytes"))
        self._in_flight: deque[asyncio.Task[bytearray | None]] = deque()
        self._transport: asyncio.Transport | None = None
        self._reading_paused = False
        self._closed = False
        self._client_host = ""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            self._client_host = f"/{peer[0]}"
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._broker.connections.discard(self)
        for task in self._in_flight:
            task.cancel()
        self._in_flight.clear()

    def data_received(self, data: bytes) -> None:
        self._decoder.feed(data)
        try:
            while not self._closed and (frame := self._decoder.next_frame()) is not None:
                self._start(frame)
        except FramingError as exc:
            self.abort(str(exc))

    def _start(self, frame: bytes) -> None:
        task = asyncio.get_running_loop().create_task(
            dispatch(self._broker, frame, self._listener, self._client_host)
        )
        self._in_flight.append(task)
        task.add_done_callback(self._write_ready_responses)
        if len(self._in_flight) >= MAX_IN_FLIGHT_REQUESTS and self._transport is not None:
            self._transport.pause_reading()
            self._reading_paused = True

    def _write_ready_responses(self, _: object) -> None:
        while self._in_flight and self._in_flight[0].done():
            task = self._in_flight.popleft()
            if task.cancelled():
                continue
            exc = task.exception()
            if exc is not None:
                reason = str(exc) if isinstance(exc, MalformedRequest) else repr(exc)
                self.abort(reason)
                return
            response = task.result()
            if response is not None and self._transport is not None and not self._closed:
                self._transport.write(response)
        if self._reading_paused and len(self._in_flight) < MAX_IN_FLIGHT_REQUESTS:
            self._reading_paused = False
            if self._transport is not None and not self._closed:
                self._transport.resume_reading()

    def abort(self, reason: str) -> None:
        if self._closed:
            return
        log.info("closing connection: %s", reason)
        self._closed = True
        if self._transport is not None:
            self._transport.abort()

    @property
    def idle(self) -> bool:
        return not self._in_flight

    def close(self) -> None:
        if self._transport is not None and not self._closed:
            self._closed = True
            self._transport.close()
