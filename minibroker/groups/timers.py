"""Deadlines on the event loop: session, rebalance, pending-member and sync timers.

A `Deadline` runs its action once when it expires unless it was cancelled or moved first;
nothing polls. Handlers move deadlines (a heartbeat pushes the session deadline back) while
mutating group state, without awaiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class Deadline:
    def __init__(self) -> None:
        self._handle: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return self._handle is not None

    def start(self, delay_ms: int, action: Callable[[], None]) -> None:
        """Expire `delay_ms` from now (replacing any earlier deadline) and then run `action`."""
        self.cancel()
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(max(delay_ms, 0) / 1000, self._expire, action)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _expire(self, action: Callable[[], None]) -> None:
        self._handle = None
        try:
            action()
        except Exception:
            log.exception("group coordinator timer failed")
