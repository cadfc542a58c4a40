"""What a handler gets besides its request: the broker, the header and the listener."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minibroker.protocol.codec import RequestHeader
from minibroker.protocol.errors import ErrorCode
from minibroker.server.nodes import GROUP_KEY_TYPE

if TYPE_CHECKING:
    from minibroker.cluster.state import Partition
    from minibroker.config import Listener
    from minibroker.server.broker import Broker
    from minibroker.server.faults import EntryKey


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    listener: Listener
    client_host: str = ""
    """The peer's address as Kafka shows it in DescribeGroups ("/127.0.0.1")."""
    entry_errors: Mapping[EntryKey, ErrorCode] = field(default_factory=dict)
    """Errors pushed by a test for some partitions, for a handler that answers them itself
    (Fetch: `dispatch.ANSWERS_ENTRY_ERRORS`)."""

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    def leader_error(self, partition: Partition) -> ErrorCode | None:
        """NOT_LEADER_OR_FOLLOWER when this node does not lead `partition` (in a cluster)."""
        return self.broker.nodes.leader_error(partition, self.broker.node_id)

    def coordinator_error(self, key: str, key_type: int = GROUP_KEY_TYPE) -> ErrorCode | None:
        """NOT_COORDINATOR when this node does not coordinate the group (or transactional
        id, key type 1) `key` (in a cluster)."""
        return self.broker.nodes.coordinator_error(key_type, key, self.broker.node_id)
