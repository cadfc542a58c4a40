"""Deadlines on the event loop: session, rebalance, pending-member and sync timers.

A `Deadline` runs its action once when it expires unless it was cancelled or moved first;
nothing polls. Handlers move deadlines (a heartbeat pushes the session deadline back) while
mutating group state, without awaiting.

State loaded late (a `__consumer_offsets` partition replayed on first use rather than when its
coordinator took it over, groups/loading.py) arms its timers inside `armed_late`: they count
from the moment they would have been armed, and those already past run before the load
returns, earliest first, as they would have run had the state been loaded then.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
        late = _late_arming()
        remaining_ms = delay_ms if late is None else delay_ms - late.elapsed_ms
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(max(remaining_ms, 0) / 1000, self._expire, action)
        if late is not None and remaining_ms <= 0:
            late.overdue(remaining_ms, self, self._handle, action)

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

    def _expire_now(self, handle: asyncio.TimerHandle, action: Callable[[], None]) -> None:
        """Run the action of the deadline armed as `handle`, unless it was moved since."""
        if self._handle is handle:
            handle.cancel()
            self._expire(action)


OverdueDeadline = tuple[int, int, Deadline, asyncio.TimerHandle, Callable[[], None]]


class _LateArming:
    def __init__(self, elapsed_ms: int) -> None:
        self.elapsed_ms = elapsed_ms
        self._overdue: list[OverdueDeadline] = []
        self._order = itertools.count()

    def overdue(
        self,
        remaining_ms: int,
        deadline: Deadline,
        handle: asyncio.TimerHandle,
        action: Callable[[], None],
    ) -> None:
        entry = (remaining_ms, next(self._order), deadline, handle, action)
        heapq.heappush(self._overdue, entry)

    def run_overdue(self) -> None:
        """Each deadline already past, earliest first; what it arms counts from its expiry."""
        while self._overdue:
            remaining_ms, _, deadline, handle, action = heapq.heappop(self._overdue)
            self.elapsed_ms = -remaining_ms
            deadline._expire_now(handle, action)


# Per thread: brokers on other threads' event loops (tests run several) arm theirs as usual.
_loading = threading.local()


def _late_arming() -> _LateArming | None:
    late: _LateArming | None = getattr(_loading, "late", None)
    return late


@contextmanager
def armed_late(elapsed_ms: int) -> Iterator[None]:
    """Deadlines started inside count from `elapsed_ms` ago; those past run on leaving."""
    previous = _late_arming()
    late = _loading.late = _LateArming(max(elapsed_ms, 0))
    try:
        yield
        late.run_overdue()
    finally:
        _loading.late = previous
