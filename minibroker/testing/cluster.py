"""In-process brokers and clusters for tests, with fault and latency injection.

`AsyncKafkaCluster` / `AsyncKafkaBroker` run on the caller's event loop (`async with`);
`KafkaCluster` / `KafkaBroker` run the same thing on a background thread with its own loop
(`with`), for synchronous clients. Every node of a cluster is a `Broker` with its own
listener and node id (1..N unless `node.id` is set), all sharing one state. `start()`
returns once every listener accepts connections: readiness is that, never a sleep.

The helpers (topics, records, offsets, consumer groups, leaders, faults) are the same in both
flavours; in the threaded one they run on the broker's thread and may be called from any
thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar

from minibroker.cluster.append import append_record
from minibroker.cluster.assignments import placed_replicas
from minibroker.cluster.replication import NODES_DIR
from minibroker.cluster.state import Partition, TopicError
from minibroker.config import BrokerConfig
from minibroker.groups.consumer.model import ConsumerGroup
from minibroker.log.base import PartitionLog
from minibroker.log.walk import stored_batches
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.releases import EMULATE_SETTING, RELEASES, find_release
from minibroker.records.records import Header, iter_records
from minibroker.server.broker import Broker
from minibroker.server.faults import (
    DEFAULT_MAX_RECORDED_REQUESTS,
    Faults,
    Hold,
    Hook,
    RecordedRequest,
)
from minibroker.server.nodes import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, NodeError
from minibroker.telemetry.manager import PushedMetric
from minibroker.telemetry.subscriptions import DEFAULT_INTERVAL_MS, Subscription
from minibroker.testing.powerloss import VARIANTS, PowerLossModel
from minibroker.testing.replication import ReplicationHelpers
from minibroker.testing.security import AUTHORIZER_CONFIG, SecurityHelpers
from minibroker.testing.share_groups import (
    ShareGroupView,
    SharePartitionView,
    by_topic_name,
    share_group_view,
    share_partition_view,
)

if TYPE_CHECKING:
    from minibroker.console import Console
    from minibroker.registry import RunningRegistry

T = TypeVar("T")
Storage = Literal["disk", "memory"]
ConfigValue = str | int | float | bool
THREAD_CALL_TIMEOUT_S = 60.0

__all__ = [
    "AUTHORIZER_CONFIG",
    "AsyncKafkaBroker",
    "AsyncKafkaCluster",
    "ConsumerGroupView",
    "ConsumerMemberView",
    "KafkaBroker",
    "KafkaCluster",
    "NodeError",
    "PushedMetric",
    "StoredRecord",
]


@dataclass(frozen=True)
class StoredRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


@dataclass(frozen=True)
class ConsumerMemberView:
    member_id: str
    instance_id: str | None
    member_epoch: int
    state: str  # stable, unrevoked_partitions, unreleased_partitions
    assigned: dict[str, list[int]]
    pending_revocation: dict[str, list[int]]
    target: dict[str, list[int]]


@dataclass(frozen=True)
class ConsumerGroupView:
    group_id: str
    state: str  # Empty, Assigning, Reconciling, Stable
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: dict[str, ConsumerMemberView]


def _consumer_group_view(broker: Broker, group: ConsumerGroup) -> ConsumerGroupView:
    return ConsumerGroupView(
        group_id=group.group_id,
        state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor_name,
        members={
            member.member_id: ConsumerMemberView(
                member_id=member.member_id,
                instance_id=member.instance_id,
                member_epoch=member.member_epoch,
                state=member.state.value,
                assigned=by_topic_name(broker, member.assigned),
                pending_revocation=by_topic_name(broker, member.pending_revocation),
                target=by_topic_name(broker, group.target.get(member.member_id, {})),
            )
            for member in group.members.values()
        },
    )


def _setting(value: ConfigValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


class _Helpers(SecurityHelpers, ReplicationHelpers):
    """Assertion helpers and fault injection over a running cluster's state."""

    def _owner(self) -> Broker:
        raise NotImplementedError

    def _run(self, action: Callable[[], T]) -> T:
        raise NotImplementedError

    @property
    def faults(self) -> Faults:
        return self._owner().faults

    # ---- topics and records --------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, ConfigValue] | None = None,
        *,
        replication_factor: int = 1,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Create a topic (TopicError with Kafka's error code if Kafka would refuse it).
        A replication factor above 1 places replicas over the live nodes as Kafka does;
        `assignments` gives each partition's replicas instead (the first leads)."""
        configs = {key: _setting(value) for key, value in (config or {}).items()}

        def create() -> None:
            owner = self._owner()
            placed = assignments
            if placed is None and replication_factor > 1:
                placed = placed_replicas(owner.nodes.reachable(), partitions, replication_factor)
            count = partitions if placed is None else len(placed)
            owner.cluster.create_topic(name, count, configs, placed)

        self._run(create)

    def topics(self) -> list[str]:
        return self._run(lambda: sorted(self._owner().cluster.topics))

    def produce(
        self,
        topic: str,
        value: str | bytes | None,
        *,
        key: str | bytes | None = None,
        partition: int = 0,
        headers: Mapping[str, str | bytes | None] | None = None,
        timestamp_ms: int | None = None,
    ) -> int:
        """Append one record, validated as a Produce would be (`InvalidRecords` with Kafka's
        error code otherwise); returns its offset."""
        record_headers = [(name, _bytes(data)) for name, data in (headers or {}).items()]
        return self._run(
            lambda: self._append(
                topic, partition, _bytes(key), _bytes(value), record_headers, timestamp_ms
            )
        )

    def _append(
        self,
        topic: str,
        index: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[Header],
        timestamp_ms: int | None,
    ) -> int:
        return append_record(self._owner().cluster, topic, index, key, value, headers, timestamp_ms)

    def _partition(self, topic: str, index: int) -> Partition:
        partition = self._owner().cluster.partition(topic, index)
        if partition is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{index}")
        return partition

    def records(self, topic: str, partition: int | None = None) -> list[StoredRecord]:
        """Every record of the topic (or of one partition), by partition then offset;
        transaction markers left out."""
        return self._run(lambda: self._read(topic, partition))

    def values(self, topic: str, partition: int | None = None) -> list[bytes | None]:
        return [record.value for record in self.records(topic, partition)]

    def _read(self, topic: str, only: int | None) -> list[StoredRecord]:
        found = self._owner().cluster.topics.get(topic)
        if found is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic}")
        indexes = range(len(found.partitions)) if only is None else [only]
        return [record for index in indexes for record in self._read_partition(topic, index)]

    def _read_partition(self, topic: str, index: int) -> list[StoredRecord]:
        partition = self._partition(topic, index)
        return self._log_records(topic, index, partition.log, partition.high_watermark)

    def _log_records(
        self, topic: str, index: int, log: PartitionLog, end: int
    ) -> list[StoredRecord]:
        records: list[StoredRecord] = []
        for header, batch in stored_batches(log, log.log_start_offset, end):
            if header.is_control:
                continue
            records.extend(
                StoredRecord(topic, index, r.offset, r.timestamp, r.key, r.value, r.headers)
                for r in iter_records(batch)
                if r.offset >= log.log_start_offset
            )
        return records

    def end_offsets(self, topic: str) -> dict[int, int]:
        """partition -> high watermark."""

        def read() -> dict[int, int]:
            found = self._owner().cluster.topics[topic]
            return {p.index: p.high_watermark for p in found.partitions}

        return self._run(read)

    def committed_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> the group's committed offset."""

        def read() -> dict[tuple[str, int], int]:
            fetched = self._owner().groups.fetch_offsets(group, None)
            return {(f.topic, f.partition): f.offset for f in fetched if f.offset >= 0}

        return self._run(read)

    # ---- KIP-848 consumer groups ----------------------------------------------------------

    def consumer_group(self, group: str) -> ConsumerGroupView | None:
        """A consumer group's state, epochs, assignor and members (epochs, reconciliation
        state, current / pending-revocation / target partitions by topic name); None when
        `group` is not a KIP-848 consumer group."""

        def read() -> ConsumerGroupView | None:
            found = self._owner().groups.groups.get(group)
            if found is None or found.consumer is None:
                return None
            return _consumer_group_view(self._owner(), found.consumer)

        return self._run(read)

    def force_rebalance(self, group: str) -> int:
        """Bump a consumer group's epoch (KeyError if it is not one): its target assignment
        is recomputed at the next heartbeat. Returns the new group epoch."""

        def bump() -> int:
            groups = self._owner().groups
            found = groups.groups.get(group)
            if found is None or found.consumer is None:
                raise KeyError(f"{group} is not a consumer group")
            return groups.consumer.force_rebalance(found.consumer)

        return self._run(bump)

    # ---- share groups (KIP-932) -----------------------------------------------------------

    def share_group(self, group: str) -> ShareGroupView | None:
        """A share group's state, epochs and members (epoch, subscribed topics, current and
        target partitions by topic name); None when `group` is not a share group."""

        def read() -> ShareGroupView | None:
            found = self._owner().groups.groups.get(group)
            if found is None or found.share is None:
                return None
            return share_group_view(self._owner(), found.share)

        return self._run(read)

    def share_partition(
        self, group: str, topic: str, partition: int = 0
    ) -> SharePartitionView | None:
        """A share partition's start and end offsets and every in-flight record (state,
        delivery count, the member holding it); None before the group first fetched it."""

        def read() -> SharePartitionView | None:
            owner = self._owner()
            found = owner.cluster.topics.get(topic)
            if found is None:
                return None
            share = owner.share_deliveries.share_partition(group, found.topic_id, partition)
            return None if share is None else share_partition_view(share)

        return self._run(read)

    def expire_share_locks(self, group: str) -> int:
        """End every acquisition lock of the share group now, as if its
        `share.record.lock.duration.ms` had passed: the records become available again (or
        archived at the delivery count limit). Returns how many were released."""
        return self._run(lambda: self._owner().share_deliveries.expire_locks(group, 2**62))

    # ---- leaders and coordinators --------------------------------------------------------

    def leader(self, topic: str, partition: int) -> int:
        return self._run(lambda: self._owner().nodes.leader_of(self._partition(topic, partition)))

    def move_leader(self, topic: str, partition: int, node: int) -> None:
        """Make `node` the partition's leader, with a new leader epoch; requests to the old
        leader get NOT_LEADER_OR_FOLLOWER and clients find the new one through Metadata."""
        self._run(lambda: self._owner().nodes.move_leader(self._partition(topic, partition), node))

    def set_coordinator(
        self, node: int, *, group: str | None = None, transactional_id: str | None = None
    ) -> None:
        """Make `node` coordinate every group, transaction and share-state key, or only
        `group` / `transactional_id`, by moving the leadership of their internal partitions
        (every partition of `__consumer_offsets`, `__transaction_state` and
        `__share_group_state`, or the key's, with the other keys of that partition) to it; the
        others answer NOT_COORDINATOR. NodeError if a replicated internal partition has `node`
        out of its ISR."""
        nodes = self._owner().nodes
        if group is not None:
            self._run(lambda: nodes.set_coordinator(node, GROUP_KEY_TYPE, group))
        if transactional_id is not None:
            self._run(lambda: nodes.set_coordinator(node, TRANSACTION_KEY_TYPE, transactional_id))
        if group is None and transactional_id is None:
            self._run(lambda: nodes.set_coordinator(node))

    def coordinator(self, group: str) -> int:
        """The leader of the group's `__consumer_offsets` partition (-1 while offline)."""
        return self._run(lambda: self._owner().nodes.coordinator_for(GROUP_KEY_TYPE, group))

    def drop_connections(self, node: int | None = None) -> None:
        """Close the open connections of `node` (every node: None) at once."""

        def drop() -> None:
            for broker in self._owner().nodes.brokers.values():
                if node is None or broker.node_id == node:
                    broker.drop_connections()

        self._run(drop)

    # ---- faults, hooks and recording (see minibroker.server.faults) -----------------------

    def push_errors(
        self,
        api_key: int,
        *errors: ErrorCode,
        topic: str | None = None,
        partition: int | None = None,
        node: int | None = None,
    ) -> None:
        self.faults.push_errors(api_key, *errors, topic=topic, partition=partition, node=node)

    def set_latency(
        self, seconds: float, *, node: int | None = None, api_key: int | None = None
    ) -> None:
        self.faults.set_latency(seconds, node=node, api_key=api_key)

    def hold(
        self,
        api_key: int | None = None,
        *,
        node: int | None = None,
        topic: str | None = None,
        until: Callable[[], bool] | None = None,
        count: int | None = None,
    ) -> Hold:
        return self.faults.hold(api_key, node=node, topic=topic, until=until, count=count)

    def control(
        self, api_key: int | None, hook: Hook, *, node: int | None = None, keep: bool = False
    ) -> None:
        self.faults.control(api_key, hook, node=node, keep=keep)

    def disconnect_after(
        self, count: int, *, node: int | None = None, api_key: int | None = None
    ) -> None:
        self.faults.disconnect_after(count, node=node, api_key=api_key)

    def requests(
        self,
        api_key: int | None = None,
        *,
        node: int | None = None,
        client_id: str | None = None,
        topic: str | None = None,
    ) -> list[RecordedRequest]:
        return self.faults.requests(api_key, node=node, client_id=client_id, topic=topic)

    def clear_requests(self) -> None:
        self.faults.clear_requests()

    def clear_faults(self) -> None:
        self.faults.clear()

    # ---- client telemetry (KIP-714) ------------------------------------------------------

    def set_telemetry_subscription(
        self,
        metrics: Sequence[str],
        *,
        interval_ms: int = DEFAULT_INTERVAL_MS,
        match: Mapping[str, str] | None = None,
        name: str = "minibroker",
    ) -> None:
        """Ask clients for the metrics whose names start with one of `metrics` ("*": all)
        every `interval_ms`, as a Kafka CLIENT_METRICS resource `name` does; `match` selects
        clients by `client_id`, `client_instance_id` or `client_source_address` (regular
        expressions). Clients see it at their next GetTelemetrySubscriptions. Checked as
        Kafka checks a CLIENT_METRICS resource (`SubscriptionError`, a ValueError)."""
        configs = Subscription(name, tuple(metrics), interval_ms, dict(match or {})).configs()
        self._run(lambda: self._owner().telemetry.set_configs(name, configs))

    def remove_telemetry_subscription(self, name: str = "minibroker") -> None:
        self._run(lambda: self._owner().telemetry.remove_subscription(name))

    def telemetry_metrics(
        self, prefix: str = "", *, client_id: str | None = None
    ) -> list[PushedMetric]:
        """The metrics clients pushed, decoded, oldest first (optionally only names starting
        with `prefix`, from clients with this `client_id`)."""

        def read() -> list[PushedMetric]:
            return [
                pushed
                for pushed in self._owner().telemetry.pushed
                if pushed.name.startswith(prefix)
                and (client_id is None or pushed.client_id == client_id)
            ]

        return self._run(read)


class AsyncKafkaCluster(_Helpers):
    """`async with AsyncKafkaCluster(nodes=3) as cluster: cluster.bootstrap_servers`.

    `config`: broker settings by Kafka name (`{"num.partitions": 3}`); `storage`: "disk" (a
    temporary directory removed on stop, or `data_dir`, kept) or "memory"; `port`: the
    first node's port, the others consecutive (0: any free ones). Requests are recorded
    (`requests()`) unless `record_requests` is false; only the last `max_recorded_requests`
    are kept. `console`: serve the web console (minibroker.console) on an ephemeral port of
    `host`, at `console_url`; `console_read_only` refuses its writes. `schema_registry`:
    serve the Schema Registry (minibroker.registry) on an ephemeral port of `host`, at
    `schema_registry_url` (or start it later with `start_schema_registry()`). `kafka_version`:
    the Kafka release to emulate ("2.8", "3.0" ... "4.3"; the setting
    `minibroker.emulate.kafka.version`, default the newest). `power_loss_seed` (disk storage,
    one log directory): each node's replica logs are written through the power-loss
    interposer (minibroker.testing.powerloss), so that `crash_node` rebuilds the node's log
    directory from a crash image, synced or torn as drawn from this seed.
    """

    def __init__(
        self,
        nodes: int = 1,
        *,
        config: Mapping[str, ConfigValue] | None = None,
        storage: Storage = "disk",
        data_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        record_requests: bool = True,
        max_recorded_requests: int = DEFAULT_MAX_RECORDED_REQUESTS,
        console: bool = False,
        console_read_only: bool = False,
        schema_registry: bool = False,
        kafka_version: str | None = None,
        power_loss_seed: int | None = None,
    ) -> None:
        if nodes < 1:
            raise ValueError("a cluster has at least one node")
        if max_recorded_requests < 1:
            raise ValueError("max_recorded_requests must be at least 1")
        if storage not in ("disk", "memory"):
            raise ValueError(f"storage is 'disk' or 'memory', not {storage!r}")
        self.node_count = nodes
        self.storage = storage
        self._settings = {key: _setting(value) for key, value in (config or {}).items()}
        if kafka_version is not None:
            if find_release(kafka_version) is None:
                raise ValueError(f"kafka_version is one of {', '.join(RELEASES)}")
            self._settings[EMULATE_SETTING] = kafka_version
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self._temporary_dir: Path | None = None
        self._host = host
        self._port = port
        self._record_requests = record_requests
        self._max_recorded_requests = max_recorded_requests
        self._brokers: dict[int, Broker] = {}
        self._console_wanted = console
        self._console_read_only = console_read_only
        self._console: Console | None = None
        self._console_port = 0
        self._registry_wanted = schema_registry
        self._registry: RunningRegistry | None = None
        self._registry_port = 0
        self._power_loss_seed = power_loss_seed
        self._power_loss_random = random.Random(power_loss_seed)
        self._power_loss: dict[int, PowerLossModel] = {}
        self._graveyard: Path | None = None
        self.last_crash_image: str | None = None
        if power_loss_seed is not None:
            self._check_power_loss_storage()

    def _check_power_loss_storage(self) -> None:
        if self.storage != "disk":
            raise ValueError("power_loss_seed needs storage='disk'")
        if self._given_data_dir is None and len(BrokerConfig(self._settings).log_dirs) > 1:
            raise ValueError("power_loss_seed models one log directory, not several log.dirs")

    # ---- lifecycle -----------------------------------------------------------------------

    @property
    def data_dir(self) -> Path | None:
        """The first log directory: `data_dir`, else the first of a `log.dirs` setting, else
        a temporary directory (disk storage)."""
        configured = BrokerConfig(self._settings).data_dir if "log.dirs" in self._settings else None
        return self._given_data_dir or configured or self._temporary_dir

    def _node_config(self, node_id: int, port: int) -> BrokerConfig:
        values = {
            "listeners": f"PLAINTEXT://{self._host}:{port}",
            **self._settings,
            "node.id": str(node_id),
        }
        values.pop("broker.id", None)
        uses_own_dirs = self._given_data_dir is None and "log.dirs" in self._settings
        if self.data_dir is not None and not uses_own_dirs:
            values["log.dirs"] = str(self.data_dir)
        return BrokerConfig(values)

    def _ports(self) -> list[int]:
        if self._brokers:
            return [broker.bound[0].port for broker in self._brokers.values()]
        if self._port == 0:
            return [0] * self.node_count
        return [self._port + index for index in range(self.node_count)]

    @property
    def node_ids(self) -> list[int]:
        first = BrokerConfig(self._settings).node_id
        return [first + index for index in range(self.node_count)]

    async def start(self) -> Self:
        if self.storage == "disk" and self.data_dir is None:
            self._temporary_dir = Path(tempfile.mkdtemp(prefix="minibroker-"))
        await self._start_on(self._ports())
        return self

    async def stop(self) -> None:
        """Stop every node; the owner of the state last (flushes, clean-shutdown marker)."""
        await self._stop_brokers()
        if self._temporary_dir is not None:
            shutil.rmtree(self._temporary_dir, ignore_errors=True)
            self._temporary_dir = None

    async def restart(self) -> None:
        """Stop every node and start them again on the same ports and data (disk storage:
        what was written survives)."""
        ports = self._ports()
        await self._stop_brokers()
        await self._start_on(ports)

    async def _stop_brokers(self) -> None:
        if self._registry is not None:
            await self._registry.stop()
            self._registry = None
        if self._console is not None:
            await self._console.stop()
            self._console = None
        brokers, self._brokers = list(self._brokers.values()), {}
        if brokers:
            brokers[0].faults.clear()
        for broker in reversed(brokers):
            await broker.stop()
        self._uninstall_power_loss()

    def _install_power_loss(self) -> None:
        """A power-loss model on each node's replica log directory (not on the shared state:
        controller metadata and single-replica logs survive a node's crash)."""
        data_dir = self.data_dir
        if self._power_loss_seed is None or data_dir is None:
            return
        data_dir.mkdir(parents=True, exist_ok=True)
        self._graveyard = Path(
            tempfile.mkdtemp(prefix="minibroker-graveyard-", dir=data_dir.parent)
        )
        for node_id in self.node_ids:
            root = data_dir / NODES_DIR / str(node_id)
            root.mkdir(parents=True, exist_ok=True)
            graveyard = self._graveyard / str(node_id)
            model = PowerLossModel(root, graveyard, self._power_loss_seed + node_id, eager=False)
            model.install()
            self._power_loss[node_id] = model

    def _uninstall_power_loss(self) -> None:
        for model in self._power_loss.values():
            model.uninstall()
        self._power_loss = {}
        if self._graveyard is not None:
            shutil.rmtree(self._graveyard, ignore_errors=True)
            self._graveyard = None

    async def _start_on(self, ports: list[int]) -> None:
        self._install_power_loss()
        brokers: dict[int, Broker] = {}
        owner: Broker | None = None
        for node_id, port in zip(self.node_ids, ports, strict=True):
            config = self._node_config(node_id, port)
            if owner is None:
                owner = Broker(config, in_memory=self.storage == "memory")
                owner.faults.set_recording(self._record_requests, self._max_recorded_requests)
                broker = owner
            else:
                broker = Broker(config, shared_with=owner)
            brokers[node_id] = broker
            try:
                await broker.start()
            except BaseException:
                for started in reversed(brokers.values()):
                    await started.stop()
                self._uninstall_power_loss()
                raise
        self._brokers = brokers
        if self._console_wanted and owner is not None:
            from minibroker.console import start_console

            self._console = await start_console(
                owner, self._host, self._console_port, read_only=self._console_read_only
            )
            self._console_port = self._console.port
        if self._registry_wanted:
            await self.start_schema_registry()

    async def start_schema_registry(self) -> str:
        """Serve the Schema Registry (if it is not served yet, and again after restarts, on the
        same port); its URL."""
        if self._registry is None:
            from minibroker.registry import start_schema_registry

            self._registry = await start_schema_registry(
                self._owner(), self._host, self._registry_port
            )
            self._registry_port = self._registry.port
            self._registry_wanted = True
        return self._registry.url

    async def wait_in_sync(self, topic: str | None = None, timeout_s: float = 30.0) -> None:
        """Until `in_sync(topic)`; TimeoutError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not self.in_sync(topic):
            if time.monotonic() > deadline:
                raise TimeoutError(f"replicas of {topic or 'every topic'} not in sync")
            await asyncio.sleep(0.02)

    async def stop_node(self, node: int) -> None:
        """Take a node down: connections to it are refused, open ones dropped, its
        single-replica partitions go offline and its replicated ones (with the coordinator
        role of internal ones) elect leaders on live nodes."""
        await self.node(node).stop_listening()

    async def crash_node(self, node: int, image: str | None = None) -> int:
        """Power loss on a node: it stops as `stop_node` does, its replica fetches end, and its
        replica logs keep only what they had fsynced (`log.flush.interval.*`, segment rolls,
        `minibroker.fsync.on.ack`); returns how many offsets they lost. `start_node` brings it
        back as after an unclean shutdown: out of every ISR and ELR, its replicas truncating
        and catching up as followers.

        With `power_loss_seed`, the node's replica log directory becomes a crash image of the
        power-loss model (`last_crash_image` says which: "synced", only what was fsynced, or
        "torn", unsynced appends partly kept and unsynced directory entries kept; `image`
        chooses, else the seed draws it) and its
        replica logs are opened again from it, recovered as Kafka recovers a log after an
        unclean shutdown (torn batches truncated). Without it, each replica log is truncated
        to its recovery point. Either way what the nodes share (controller metadata, the
        single-replica logs, group and transaction coordinator state, producer state) is
        kept."""
        if image is not None and image not in VARIANTS:
            raise ValueError(f"image is one of {', '.join(VARIANTS)}, not {image!r}")
        broker = self.node(node)
        await broker.stop_listening()
        await broker.replica_fetcher.join()
        model = self._power_loss.get(node)
        if model is None:
            self.last_crash_image = None
            return broker.nodes.lose_unsynced(node)
        crash = model.crash_image(image or self._power_loss_random.choice(VARIANTS))
        self.last_crash_image = crash.variant
        return broker.nodes.lose_power(node, lambda: model.restore(crash))

    async def start_node(self, node: int) -> None:
        """Bring a stopped node back on its port: its single-replica partitions are online
        again; replicated ones stay led where the elections put them."""
        broker = self.node(node)
        if not broker.listening:
            await broker.start_listening()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # ---- addresses and nodes -------------------------------------------------------------

    def node(self, node_id: int) -> Broker:
        try:
            return self._brokers[node_id]
        except KeyError:
            raise NodeError(f"no node {node_id} (nodes: {sorted(self._brokers)})") from None

    @property
    def live_nodes(self) -> list[int]:
        return sorted(node for node, broker in self._brokers.items() if broker.listening)

    @property
    def bootstrap_servers(self) -> str:
        """host:port of every live node, comma-separated."""
        return ",".join(self._brokers[node].bootstrap_servers for node in self.live_nodes)

    def address(self, node: int) -> str:
        return self.node(node).bootstrap_servers

    @property
    def console_url(self) -> str:
        """The web console's address (`console=True`), e.g. http://127.0.0.1:41234."""
        if self._console is None:
            raise RuntimeError("the console is not running: start the cluster with console=True")
        return self._console.url

    @property
    def schema_registry_url(self) -> str:
        """The Schema Registry's address (`schema_registry=True` or after
        `start_schema_registry()`), e.g. http://127.0.0.1:41235."""
        if self._registry is None:
            raise RuntimeError(
                "the schema registry is not running: start the cluster with schema_registry=True"
            )
        return self._registry.url

    def _owner(self) -> Broker:
        if not self._brokers:
            raise RuntimeError("the cluster is not running")
        return next(iter(self._brokers.values()))

    def _run(self, action: Callable[[], T]) -> T:
        return action()


class AsyncKafkaBroker(AsyncKafkaCluster):
    """A single broker: `async with AsyncKafkaBroker() as broker: broker.bootstrap_servers`."""

    def __init__(
        self,
        *,
        config: Mapping[str, ConfigValue] | None = None,
        storage: Storage = "disk",
        data_dir: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        record_requests: bool = True,
        max_recorded_requests: int = DEFAULT_MAX_RECORDED_REQUESTS,
        console: bool = False,
        console_read_only: bool = False,
        schema_registry: bool = False,
        kafka_version: str | None = None,
    ) -> None:
        super().__init__(
            1,
            config=config,
            storage=storage,
            data_dir=data_dir,
            host=host,
            port=port,
            record_requests=record_requests,
            max_recorded_requests=max_recorded_requests,
            console=console,
            console_read_only=console_read_only,
            schema_registry=schema_registry,
            kafka_version=kafka_version,
        )


class KafkaCluster(_Helpers):
    """`with KafkaCluster(nodes=3) as cluster: ...`: an `AsyncKafkaCluster` on a background
    thread. Takes the same arguments; every method is synchronous and thread-safe."""

    def __init__(self, nodes: int = 1, **options: Any) -> None:
        self._async = AsyncKafkaCluster(nodes, **options)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None, "the cluster is not running"
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(THREAD_CALL_TIMEOUT_S)

    def _run(self, action: Callable[[], T]) -> T:
        if self._loop is None:
            raise RuntimeError("the cluster is not running")
        if threading.current_thread() is self._thread:
            return action()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(action())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(THREAD_CALL_TIMEOUT_S)

    def _owner(self) -> Broker:
        return self._async._owner()

    def start(self) -> Self:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="minibroker", daemon=True
            )
            self._thread.start()
        try:
            self._call(self._async.start())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self._call(self._async.stop())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(THREAD_CALL_TIMEOUT_S)
            loop.close()
            self._loop = self._thread = None

    def restart(self) -> None:
        self._call(self._async.restart())

    def wait_in_sync(self, topic: str | None = None, timeout_s: float = 30.0) -> None:
        """Until `in_sync(topic)`; TimeoutError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while not self.in_sync(topic):
            if time.monotonic() > deadline:
                raise TimeoutError(f"replicas of {topic or 'every topic'} not in sync")
            time.sleep(0.02)

    def stop_node(self, node: int) -> None:
        self._call(self._async.stop_node(node))

    def crash_node(self, node: int, image: str | None = None) -> int:
        return self._call(self._async.crash_node(node, image))

    @property
    def last_crash_image(self) -> str | None:
        """The crash image variant of the last `crash_node` ("synced" or "torn"; None without
        `power_loss_seed`)."""
        return self._async.last_crash_image

    def start_node(self, node: int) -> None:
        self._call(self._async.start_node(node))

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def node(self, node_id: int) -> Broker:
        return self._async.node(node_id)

    @property
    def node_ids(self) -> list[int]:
        return self._async.node_ids

    @property
    def live_nodes(self) -> list[int]:
        return self._run(lambda: self._async.live_nodes)

    @property
    def bootstrap_servers(self) -> str:
        return self._run(lambda: self._async.bootstrap_servers)

    def address(self, node: int) -> str:
        return self._async.address(node)

    @property
    def data_dir(self) -> Path | None:
        return self._async.data_dir

    @property
    def console_url(self) -> str:
        return self._async.console_url

    @property
    def schema_registry_url(self) -> str:
        """The Schema Registry's address, started on first use (per broker: a fresh broker
        per test is a fresh registry)."""
        return self._call(self._async.start_schema_registry())


class KafkaBroker(KafkaCluster):
    """A single broker on a background thread: `with KafkaBroker() as broker: ...`."""

    def __init__(self, **options: Any) -> None:
        super().__init__(1, **options)

    @property
    def port(self) -> int:
        return self._async.node(self.node_ids[0]).bound[0].port
