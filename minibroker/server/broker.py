"""A broker: its state (cluster, logs, producers) and its asyncio listeners.

`Broker.start()` loads the logs, binds every listener (port 0 picks a free one) and starts
the retention and flush timers; `Broker.stop()` stops accepting, lets in-flight requests
finish (bounded), flushes and writes the clean-shutdown marker.

An in-process cluster (minibroker.testing) is several `Broker`s, one per node, each with its
own node id and listeners: the first owns the state and the others share it
(`Broker(config, shared_with=first)`), so handlers keep using `context.broker.<state>`.
`stop_listening()` / `start_listening()` take one node down and up again (same ports).

The group and transaction coordinators, share-group state, group configs and client telemetry
are built on first use (the first request or call that needs them), or at start when their
internal topic has state to load (recovery): a broker answers its first requests without
importing them (issue 40). Their broker settings are still checked at start
(groups/settings.py), so a bad one is refused there as before.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Iterable
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from minibroker.auth.authorizer import Authorizer
from minibroker.auth.principal import parse_mapping_rules
from minibroker.auth.quotas import ClientQuotas
from minibroker.cluster.dynamic_configs import DynamicConfigs
from minibroker.cluster.features import Features, emulated_release
from minibroker.cluster.fetch_sessions import FetchSessionCache
from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig, Listener, new_cluster_id
from minibroker.groups.settings import check_group_settings
from minibroker.groups.share.sessions import ShareSessionCache
from minibroker.handlers.registry import api_gates
from minibroker.log.checkpoints import META_PROPERTIES, read_properties
from minibroker.log.dirs import LogDirs
from minibroker.log.lazy import is_open
from minibroker.security.credentials import ScramCredentials
from minibroker.security.delegation_tokens import DelegationTokens
from minibroker.server.connection import BrokerConnection
from minibroker.server.faults import Faults
from minibroker.server.nodes import Nodes
from minibroker.server.quotas import ConnectionQuotas
from minibroker.server.replica_fetcher import ReplicaFetcher
from minibroker.server.security import listener_security
from minibroker.txn.producers import ProducerStateManager

if TYPE_CHECKING:
    from minibroker.cluster.alter_configs import ConfigTargets
    from minibroker.groups.coordinator import GroupCoordinator
    from minibroker.groups.group_configs import GroupConfigs
    from minibroker.groups.share.coordinator import ShareCoordinator
    from minibroker.groups.share.delivery import ShareDeliveries
    from minibroker.telemetry.manager import ClientTelemetry
    from minibroker.txn.coordinator import TransactionCoordinator

log = logging.getLogger(__name__)


class BindError(Exception):
    """A listening socket could not be bound (Kafka: "Socket server failed to bind to ...")."""

    def __init__(self, what: str, host: str, port: int, cause: OSError) -> None:
        # Not the cause's own text: uvloop's repeats the address ("error while attempting ...").
        errno = cause.errno or 0
        reason = os.strerror(errno) if errno > 0 else cause.strerror or str(cause)
        super().__init__(f"{what} failed to bind to {host}:{port}: {reason}")


STOP_GRACE_SECONDS = 3.0
FLUSH_CHECK_INTERVAL_SECONDS = 1.0
IDLE_CHECK_MAX_INTERVAL_SECONDS = 30.0
# The lazily built subsystems whose state is kept in an internal topic, in the order they load
# it at start: attribute, topic, the method that loads it.
STATE_TOPICS = (
    ("groups", "__consumer_offsets", "start"),
    ("share_deliveries", "__share_group_state", "load"),
    ("transactions", "__transaction_state", "start"),
)


class BoundListener(NamedTuple):
    listener: Listener
    host: str
    port: int


class Broker:
    def __init__(
        self, config: BrokerConfig, *, in_memory: bool = False, shared_with: Broker | None = None
    ) -> None:
        self.config = config
        self.release = emulated_release(config)
        self.api_gates = api_gates(self.release)
        self.node_id = config.node_id
        self.connections: set[BrokerConnection] = set()
        self.quotas = ConnectionQuotas.from_config(config)
        self.bound: list[BoundListener] = []
        self._servers: list[asyncio.Server] = []
        self._timers: list[asyncio.Task[None]] = []
        self.security = {
            item.name: listener_security(config, item.name) for item in config.listeners
        }
        self.fetch_sessions = FetchSessionCache(
            config.get_int("max.incremental.fetch.session.cache.slots")
        )
        self.share_sessions = ShareSessionCache(config.get_int("group.share.max.share.sessions"))
        self.principal_rules = parse_mapping_rules(config.get_str("ssl.principal.mapping.rules"))
        self.replica_fetcher = ReplicaFetcher(self)
        # For the subsystems built on first use (the properties below): the settings they read
        # (these, before dynamic configs, as when the constructor built them), whether start()
        # has loaded the state (then one built later loads its own), and the node they live on.
        self._static_config = config
        self._state_loaded = False
        self._state_owner = self
        if shared_with is not None:
            self._share_state(shared_with)
            return
        self.owns_state = True
        self.data_dir: Path | None = None if in_memory else config.data_dir
        self.cluster_id = config.raw("cluster.id") or self._stored_cluster_id() or new_cluster_id()
        self.logs = LogDirs(
            None if in_memory else config.log_dirs or None,
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            default_config=Cluster.default_log_config(config),
        )
        self.cluster = Cluster(config, self.logs, self.data_dir)
        self.producers = ProducerStateManager.from_config(config, self.data_dir)
        check_group_settings(config)
        self.features = Features.open(config, self.data_dir, self.node_id)
        self.cluster.elr_enabled = lambda: self.features.elr_enabled
        self.nodes = Nodes(self)
        self.faults = Faults()
        self.scram_credentials = ScramCredentials.open(config, self.data_dir)
        self.delegation_tokens = DelegationTokens.open(config, self.data_dir)
        self.authorizer = Authorizer.from_config(config, self.data_dir)
        self.client_quotas = ClientQuotas.open(config, self.data_dir)
        self.dynamic_configs = DynamicConfigs.open(self.data_dir)
        self.dynamic_configs.elr_enabled = lambda: self.features.elr_enabled
        if self.features.elr_enabled:  # as Kafka's controller bootstraps a cluster with ELR
            self.dynamic_configs.ensure_elr_safety(config.get_int("min.insync.replicas"))
        self.dynamic_configs.apply([self], self, self.cluster)

    # Subsystems built on first use; each imports its code when built (function-level imports),
    # so that a broker starts and answers its first requests without it.

    @cached_property
    def group_configs(self) -> GroupConfigs:
        if not self.owns_state:
            return self._state_owner.group_configs
        from minibroker.groups.group_configs import GroupConfigs

        return GroupConfigs.open(self.data_dir)

    @property
    def static_config(self) -> BrokerConfig:
        """The settings the broker started with, without dynamic broker configs."""
        return self._static_config

    @cached_property
    def groups(self) -> GroupCoordinator:
        if not self.owns_state:
            return self._state_owner.groups
        from minibroker.groups.coordinator import GroupCoordinator

        groups = GroupCoordinator(self._static_config, self.cluster, self.producers)
        groups.consumer.use_group_configs(
            lambda group_id: self.group_configs.effective(group_id, self.config)
        )
        groups.share.member_fenced = self._share_member_fenced
        if self._state_loaded:
            groups.start()
        return groups

    @cached_property
    def share_deliveries(self) -> ShareDeliveries:
        if not self.owns_state:
            return self._state_owner.share_deliveries
        from minibroker.groups.share.coordinator import ShareCoordinator
        from minibroker.groups.share.delivery import ShareDeliveries
        from minibroker.groups.share.persist import ShareStateTopic

        coordinator = ShareCoordinator(
            ShareStateTopic(self.cluster, self._static_config), self._partition_count
        )
        deliveries = ShareDeliveries(
            lambda group_id: self.group_configs.effective(group_id, self.config), coordinator
        )
        if self._state_loaded:
            deliveries.load()
        return deliveries

    @property
    def share_coordinator(self) -> ShareCoordinator:
        """The share coordinator: the state behind `share_deliveries`."""
        return self.share_deliveries.coordinator

    def _partition_count(self, topic_id: uuid.UUID) -> int | None:
        topic = self.cluster.topics_by_id.get(topic_id)
        return None if topic is None else len(topic.partitions)

    @cached_property
    def transactions(self) -> TransactionCoordinator:
        if not self.owns_state:
            return self._state_owner.transactions
        from minibroker.txn.coordinator import TransactionCoordinator
        from minibroker.txn.markers import write_end_txn_marker

        transactions = TransactionCoordinator(
            self._static_config,
            self.cluster,
            self.producers.new_producer_id,
            partial(write_end_txn_marker, self),
            self.groups,
            features=self.features,
        )
        if self._state_loaded:
            transactions.start()
        return transactions

    @cached_property
    def telemetry(self) -> ClientTelemetry:
        if not self.owns_state:
            return self._state_owner.telemetry
        from minibroker.telemetry.manager import ClientTelemetry

        max_bytes = self._static_config.get_int("telemetry.max.bytes")
        return ClientTelemetry.open(max_bytes, self.data_dir)

    def _built(self, name: str) -> bool:
        """Whether the lazily built subsystem `name` exists yet (on the state's owner)."""
        return name in self._state_owner.__dict__

    def config_targets(self) -> ConfigTargets:
        """What config changes made on this node reach (AlterConfigs, the console); imported
        here, with the telemetry and group configs it changes, when first asked for."""
        from minibroker.cluster.alter_configs import ConfigTargets

        return ConfigTargets(
            self.cluster,
            self.dynamic_configs,
            self.telemetry,
            self.node_id,
            self.group_configs,
            self.config,
        )

    def _share_member_fenced(self, group_id: str, member_id: str) -> None:
        """A share-group member was fenced: what it holds goes back to the group and its share
        sessions close, on every node."""
        self.share_deliveries.release_member(group_id, member_id)
        for node in self.nodes.live_brokers():
            node.share_sessions.remove_member(group_id, member_id)

    def _share_state(self, owner: Broker) -> None:
        self.owns_state = False
        self._state_owner = owner
        self.data_dir = owner.data_dir
        self.cluster_id = owner.cluster_id
        self.logs = owner.logs
        self.cluster = owner.cluster
        self.producers = owner.producers
        self.nodes = owner.nodes
        self.faults = owner.faults
        self.scram_credentials = owner.scram_credentials
        self.delegation_tokens = owner.delegation_tokens
        self.authorizer = owner.authorizer
        self.client_quotas = owner.client_quotas
        self.dynamic_configs = owner.dynamic_configs
        self.config = self.dynamic_configs.effective(self.config, self.node_id)
        self.features = owner.features
        self.nodes.add(self)

    def _stored_cluster_id(self) -> str | None:
        if self.data_dir is None or not (self.data_dir / META_PROPERTIES).exists():
            return None
        return read_properties(self.data_dir / META_PROPERTIES).get("cluster.id")

    async def start(self) -> None:
        if self.owns_state:
            self.cluster.load(on_open=self.producers.reload)
            # Logs not open yet (lazy.py) load their producer state when they are opened.
            self.producers.rebuild(p for p in self.cluster.partitions() if is_open(p.log))
            self._load_coordinators()
            loop = asyncio.get_running_loop()
            self._timers = [
                loop.create_task(
                    self._every(
                        self._retention_interval(),
                        self._run_retention,
                        first_after=min(
                            self._interval("log.initial.task.delay.ms"), self._retention_interval()
                        ),
                    )
                ),
                loop.create_task(self._every(FLUSH_CHECK_INTERVAL_SECONDS, self._flush_due)),
                loop.create_task(self._every(self._isr_check_interval(), self._shrink_isrs)),
                *self._transaction_timers(loop),
            ]
            if self.delegation_tokens.enabled:
                sweep_interval = self.delegation_tokens.settings.expiry_check_interval_ms / 1000
                self._timers.append(
                    loop.create_task(self._every(sweep_interval, self._sweep_expired_tokens))
                )
            if self.config.get_bool("log.cleaner.enable"):
                cleaner_interval = self._interval("log.cleaner.backoff.ms")
                self._timers.append(loop.create_task(self._every(cleaner_interval, self._clean)))
        self._timers.append(
            asyncio.get_running_loop().create_task(
                self._every(self._idle_check_interval(), self._close_idle)
            )
        )
        await self.start_listening()

    def _load_coordinators(self) -> None:
        """Load what the coordinators stored, in STATE_TOPICS' order (group offsets before the
        transactions whose completion writes markers to them): one already built loads it now;
        one not built yet is built now when its internal topic exists, else on first use (with
        nothing stored to load then)."""
        self._state_loaded = True
        for name, topic, load in STATE_TOPICS:
            if self._built(name):
                getattr(getattr(self, name), load)()
            elif topic in self.cluster.topics:
                getattr(self, name)  # built now, it loads its state

    async def start_listening(self) -> None:
        """Bind every listener; after `stop_listening()`, on the ports bound before."""
        loop = asyncio.get_running_loop()
        previous = {bound.listener.name: bound.port for bound in self.bound}
        self.bound = []
        for listener in self.config.listeners:
            port = previous.get(listener.name, listener.port)
            try:
                server = await loop.create_server(
                    partial(BrokerConnection, self, listener),
                    listener.host,
                    port,
                    reuse_address=True,
                    ssl=self.security[listener.name].tls,
                )
            except OSError as exc:
                raise BindError(f"listener {listener.name}", listener.host, port, exc) from exc
            host, port = server.sockets[0].getsockname()[:2]
            self.bound.append(BoundListener(listener, host, port))
            self._servers.append(server)
        self.nodes.node_started(self.node_id)
        if len(self.nodes.brokers) > 1:
            for node in self.nodes.live_brokers():
                node.replica_fetcher.start()
        log.info("broker %d listening on %s", self.node_id, self.bootstrap_servers)

    def _retention_interval(self) -> float:
        """Retention runs `log.initial.task.delay.ms` after start, as Kafka's LogManager, then
        at this interval: a broker restarted more often than the interval still applies it."""
        return self.config.get_int("log.retention.check.interval.ms") / 1000

    def _transaction_timers(self, loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[None]]:
        """Abort transactions open past their timeout; expire unused transactional ids (none
        while the transaction coordinator is not built)."""
        return [
            loop.create_task(self._every(self._interval(name), action))
            for name, action in (
                (
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                    self._abort_timed_out_transactions,
                ),
                (
                    "transaction.remove.expired.transaction.cleanup.interval.ms",
                    self._remove_expired_transactional_ids,
                ),
            )
        ]

    def _abort_timed_out_transactions(self) -> None:
        if self._built("transactions"):
            self.transactions.abort_timed_out_transactions()

    def _remove_expired_transactional_ids(self) -> None:
        if self._built("transactions"):
            self.transactions.remove_expired_transactional_ids()

    def _interval(self, name: str) -> float:
        return self.config.get_int(name) / 1000

    @staticmethod
    async def _every(seconds: float, action: object, first_after: float | None = None) -> None:
        assert callable(action)
        delay = seconds if first_after is None else first_after
        while True:
            await asyncio.sleep(delay)
            delay = seconds
            try:
                action()
            except Exception:
                log.exception("periodic task failed")

    def _isr_check_interval(self) -> float:
        return max(0.01, self._interval("replica.lag.time.max.ms") / 2)

    def _shrink_isrs(self) -> None:
        self.nodes.shrink_lagging_isrs(
            time.time_ns() // 1_000_000, self.config.get_int("replica.lag.time.max.ms")
        )

    def _sweep_expired_tokens(self) -> None:
        for token in self.delegation_tokens.sweep(time.time_ns() // 1_000_000):
            log.info(
                "Delegation token expired for token: %s for owner: %s", token.token_id, token.owner
            )

    def _run_retention(self) -> None:
        for logs in self.cluster.log_managers():
            for topic, index in logs.run_retention(time.time_ns() // 1_000_000):
                partition = self.cluster.partition(topic, index)
                if partition is not None:  # a moved log start: fetchers look again
                    partition.notify_appended()

    def _clean(self) -> None:
        for logs in self.cluster.log_managers():
            logs.run_cleaner(time.time_ns() // 1_000_000)

    def _idle_limit_seconds(self) -> float:
        return self.config.get_int("connections.max.idle.ms") / 1000

    def _idle_check_interval(self) -> float:
        return min(IDLE_CHECK_MAX_INTERVAL_SECONDS, max(0.01, self._idle_limit_seconds() / 4))

    def _close_idle(self) -> None:
        now = time.monotonic()
        limit = self._idle_limit_seconds()
        for connection in list(self.connections):
            if connection.idle_seconds(now) > limit:
                connection.abort(f"idle for more than connections.max.idle.ms ({limit:g} s)")

    def _flush_due(self) -> None:
        for logs in self.cluster.log_managers():
            logs.flush_due(time.time_ns() // 1_000_000)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{bound.host}:{bound.port}" for bound in self.bound)

    def advertised_endpoint(self, listener: Listener) -> tuple[str, int]:
        """Host and port that clients on `listener` are told to use for this node."""
        bound = next((b for b in self.bound if b.listener.name == listener.name), None)
        for advertised in self.config.advertised_listeners:
            if advertised.name == listener.name:
                if advertised.port == 0 and bound is not None:
                    return advertised.host, bound.port
                return advertised.host, advertised.port
        if bound is not None:
            return bound.host, bound.port
        return listener.host, listener.port

    @property
    def listening(self) -> bool:
        return bool(self._servers)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for timer in self._timers:
            timer.cancel()
        if self.owns_state:
            if self._built("transactions"):
                self.transactions.stop()
            if self._built("groups"):
                self.groups.stop()
        await self._drain_connections(self.connections)
        await self._close_servers()
        self.fetch_sessions.clear()  # they stop listening to the partitions
        await self.replica_fetcher.join()
        if self.owns_state:
            self.producers.close()
            self.cluster.write_replication_state()
            for logs in self.cluster.log_managers():
                logs.close()

    async def stop_listening(self) -> None:
        """Take this node down: refuse new connections, drop the open ones at once (as a
        crashed broker would) and move its partitions to live nodes."""
        for server in self._servers:
            server.close()
        self.drop_connections()
        await self._close_servers()

    def drop_connections(self) -> None:
        for conn in list(self.connections):
            conn.abort("connections dropped")

    async def _close_servers(self) -> None:
        servers, self._servers = self._servers, []
        self.replica_fetcher.stop()
        for server in servers:
            await server.wait_closed()
        self.nodes.node_stopped(self.node_id)

    @staticmethod
    async def _drain_connections(connections: Iterable[BrokerConnection]) -> None:
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        pending = list(connections)
        while pending and time.monotonic() < deadline:
            pending = [conn for conn in pending if not conn.idle]
            if pending:
                await asyncio.sleep(0.01)
        for conn in list(connections):
            if conn.idle:
                conn.close()
            else:
                conn.terminate()
