"""What a handler gets besides its request: the broker, the header, the listener and the
connection's session (its principal and peer); and the authorization checks handlers make,
which allow everything when no authorizer is configured (`minibroker/auth/authorizer.py`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from minibroker.auth.acls import (
    ANONYMOUS,
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
)
from minibroker.protocol.codec import RequestHeader
from minibroker.protocol.errors import ErrorCode
from minibroker.server.nodes import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE

if TYPE_CHECKING:
    from minibroker.cluster.state import Partition
    from minibroker.config import Listener
    from minibroker.internal.topic import InternalTopic
    from minibroker.server.broker import Broker
    from minibroker.server.faults import EntryKey


NO_ENTRY_ERRORS: Mapping[EntryKey, ErrorCode] = MappingProxyType({})


@dataclass(slots=True)
class Session:
    """One connection's identity, and until when its client is throttled (a quota)."""

    principal: str = ANONYMOUS
    client_host: str = ""
    """The peer's address as Kafka shows it in DescribeGroups ("/127.0.0.1")."""
    throttled_until: float = 0.0
    """`time.monotonic()` until which the connection is muted after a throttled answer."""
    token_authenticated: bool = False
    """Authenticated with a delegation token (SCRAM `tokenauth=true`)."""
    inter_broker: bool = False
    """Another node of an in-process cluster (a follower's fetches): allowed everything, as
    Kafka's inter-broker principal is when it is a super user."""

    @property
    def host(self) -> str:
        """The peer's address as ACLs name hosts ("127.0.0.1")."""
        return self.client_host.removeprefix("/")


class RequestContext(NamedTuple):
    """A tuple, not a dataclass: one is built per request, and a tuple is the cheapest."""

    broker: Broker
    header: RequestHeader
    listener: Listener
    session: Session
    entry_errors: Mapping[EntryKey, ErrorCode] = NO_ENTRY_ERRORS
    """Errors pushed by a test for some partitions, for a handler that answers them itself
    (Fetch: `dispatch.ANSWERS_ENTRY_ERRORS`)."""

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_host(self) -> str:
        return self.session.client_host

    @property
    def principal(self) -> str:
        return self.session.principal

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        authorizer = self.broker.authorizer
        session = self.session
        if authorizer is None or session.inter_broker:
            return True
        return authorizer.authorize(session.principal, session.host, operation, resource_type, name)

    def authorize_cluster(self, operation: AclOperation) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorized_names(
        self, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> set[str]:
        """The names among `names` the principal may do `operation` on."""
        if self.broker.authorizer is None:
            return set(names)
        return {name for name in set(names) if self.authorize(operation, resource_type, name)}

    def denied_topic_ids(
        self, operation: AclOperation, topic_ids: Iterable[uuid.UUID]
    ) -> set[uuid.UUID]:
        """The ids among `topic_ids` naming a topic the principal may not do `operation` on
        (ids of no topic are left out)."""
        topics = self.broker.cluster.topics_by_id
        named = {
            topic_id: topics[topic_id].name for topic_id in set(topic_ids) if topic_id in topics
        }
        allowed = self.authorized_names(operation, ResourceType.TOPIC, named.values())
        return {topic_id for topic_id, name in named.items() if name not in allowed}

    def authorize_by_resource_type(
        self, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        session = self.session
        return authorizer.authorize_by_resource_type(
            session.principal, session.host, operation, resource_type
        )

    def authorized_operations(self, resource_type: ResourceType, name: str) -> set[int]:
        """The operation codes Kafka reports in `authorized_operations` for the resource."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return {int(operation) for operation in SUPPORTED_OPERATIONS[resource_type]}
        session = self.session
        allowed = authorizer.authorized_operations(
            session.principal, session.host, resource_type, name
        )
        return {int(operation) for operation in allowed}

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    def leader_error(self, partition: Partition) -> ErrorCode | None:
        """NOT_LEADER_OR_FOLLOWER when this node does not lead `partition` (in a cluster)."""
        return self.broker.nodes.leader_error(partition, self.broker.node_id)

    async def replicated_write(
        self,
        key: str,
        key_type: int = GROUP_KEY_TYPE,
        error: ErrorCode = ErrorCode.NO_ERROR,
        since: int | None = None,
    ) -> ErrorCode:
        """A coordinator's answer `error` once its writes to `key`'s internal partition are in
        the ISR (acks=all; `offsets.commit.timeout.ms` for a group, `request.timeout.ms` for a
        transactional id, as Kafka waits): unchanged unless it was NO_ERROR and the wait
        failed (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR). `since`, the store's
        `internal_writes` before the request's changes, tells whether it wrote anything."""
        if error != ErrorCode.NO_ERROR:
            return error
        if key_type == TRANSACTION_KEY_TYPE:
            timeout_ms = self.broker.config.get_int("request.timeout.ms")
        else:
            timeout_ms = self.broker.config.get_int("offsets.commit.timeout.ms")
        store = self._internal_store(key_type)
        appended = since is None or store.appends != since
        return await store.replicated(key, self.broker.node_id, timeout_ms / 1000, appended)

    def internal_writes(self, key_type: int = GROUP_KEY_TYPE) -> int:
        """How many appends the coordinator of `key_type` has made to its internal topic."""
        return self._internal_store(key_type).appends

    def _internal_store(self, key_type: int) -> InternalTopic:
        if key_type == TRANSACTION_KEY_TYPE:
            return self.broker.transactions.store
        return self.broker.groups.store

    def coordinator_error(self, key: str, key_type: int = GROUP_KEY_TYPE) -> ErrorCode | None:
        """NOT_COORDINATOR when this node does not coordinate the group (or transactional
        id, key type 1) `key` (in a cluster)."""
        return self.broker.nodes.coordinator_error(key_type, key, self.broker.node_id)
