"""What a handler gets besides its request: the broker, the header and the listener."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minibroker.protocol.codec import RequestHeader

if TYPE_CHECKING:
    from minibroker.config import Listener
    from minibroker.server.broker import Broker


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    listener: Listener
    client_host: str = ""
    """The peer's address as Kafka shows it in DescribeGroups ("/127.0.0.1")."""

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000
