"""Connection limits, as Kafka's `SocketServer.ConnectionQuotas` applies them.

- `max.connections.per.ip` (with `max.connections.per.ip.overrides`, `host:count,...`):
  a new connection from an address that already has its maximum is closed at once
  ("Rejected connection from ..., address already has the configured maximum").
- `max.connections`: at the broker-wide maximum Kafka's acceptor stops accepting until a
  connection closes, so new clients wait in the listen backlog. Here they are accepted
  but not read from (their requests wait, unanswered) until a slot frees, in arrival
  order; at most `socket.listen.backlog.size` wait, beyond that a new one is closed.
- `queued.max.request.bytes`: the bytes of requests being handled, over all connections. As
  Kafka's memory pool, a request is taken while any room is left (so one larger than the
  bound still passes alone); once the total is at the bound, connections stop starting
  requests and stop reading, and resume in arrival order as handled requests free bytes.
"""

from __future__ import annotations

import logging
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minibroker.config import BrokerConfig

log = logging.getLogger(__name__)


class Admission(Enum):
    OPEN = "open"
    WAIT = "wait"
    REJECT = "reject"


@dataclass(eq=False)
class Slot:
    """One accepted connection's claim on the quotas; `admit` runs when it may be read."""

    address: str
    admit: Callable[[], None]
    reject: Callable[[], None]
    counted: bool = False


def parse_overrides(text: str) -> dict[str, int]:
    """`max.connections.per.ip.overrides`: `hostOrIp:count` pairs, comma separated; host
    names are resolved to their addresses as Kafka does."""
    overrides: dict[str, int] = {}
    for item in text.split(","):
        host, sep, count = item.strip().rpartition(":")
        if not item.strip():
            continue
        if not sep or not host:
            raise ValueError(f"max.connections.per.ip.overrides entry {item!r} is not host:count")
        overrides[_address_of(host.strip("[]"))] = int(count)
    return overrides


def _address_of(host: str) -> str:
    try:
        return str(socket.getaddrinfo(host, None)[0][4][0])
    except (OSError, IndexError):
        return host


@dataclass
class ConnectionQuotas:
    max_connections: int
    max_per_ip: int
    per_ip_overrides: dict[str, int]
    backlog: int
    max_queued_request_bytes: int = -1
    counts: dict[str, int] = field(default_factory=dict)
    total: int = 0
    waiting: deque[Slot] = field(default_factory=deque)
    queued_request_bytes: int = 0
    # Connections waiting for request bytes, in arrival order, with how each resumes.
    waiting_for_bytes: dict[Slot, Callable[[], None]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConnectionQuotas:
        return cls(
            max_connections=config.get_int("max.connections"),
            max_per_ip=config.get_int("max.connections.per.ip"),
            per_ip_overrides=parse_overrides(config.get_str("max.connections.per.ip.overrides")),
            backlog=config.get_int("socket.listen.backlog.size"),
            max_queued_request_bytes=config.get_int("queued.max.request.bytes"),
        )

    def take_request_bytes(self, slot: Slot, resume: Callable[[], None]) -> bool:
        """Whether the connection may start a request now; if not, `resume` runs once it may
        (the caller then adds the request's size to `queued_request_bytes`)."""
        if self._room_for_requests():
            return True
        self.waiting_for_bytes[slot] = resume
        return False

    def release_request_bytes(self, size: int) -> None:
        self.queued_request_bytes -= size
        while self.waiting_for_bytes and self._room_for_requests():
            slot = next(iter(self.waiting_for_bytes))
            self.waiting_for_bytes.pop(slot)()

    def _room_for_requests(self) -> bool:
        limit = self.max_queued_request_bytes
        return limit < 0 or self.queued_request_bytes < limit

    def max_for(self, address: str) -> int:
        return self.per_ip_overrides.get(address, self.max_per_ip)

    def open(self, slot: Slot) -> Admission:
        """Decide on a just-accepted connection."""
        if self.total >= self.max_connections:
            if len(self.waiting) >= self.backlog:
                log.info("Rejected connection from %s: max.connections reached", slot.address)
                return Admission.REJECT
            self.waiting.append(slot)
            return Admission.WAIT
        return self._count(slot)

    def _count(self, slot: Slot) -> Admission:
        count = self.counts.get(slot.address, 0)
        limit = self.max_for(slot.address)
        if count >= limit:
            log.info(
                "Rejected connection from %s, address already has the configured maximum of "
                "%d connections.",
                slot.address,
                limit,
            )
            return Admission.REJECT
        self.counts[slot.address] = count + 1
        self.total += 1
        slot.counted = True
        return Admission.OPEN

    def close(self, slot: Slot) -> None:
        """The connection is gone: free its slot and admit whoever waits for one."""
        self.waiting_for_bytes.pop(slot, None)
        if not slot.counted:
            if slot in self.waiting:
                self.waiting.remove(slot)
            return
        slot.counted = False
        self.total -= 1
        remaining = self.counts[slot.address] - 1
        if remaining:
            self.counts[slot.address] = remaining
        else:
            del self.counts[slot.address]
        while self.waiting and self.total < self.max_connections:
            waiter = self.waiting.popleft()
            if self._count(waiter) == Admission.OPEN:
                waiter.admit()
            else:
                waiter.reject()
