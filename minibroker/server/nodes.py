"""The nodes of one in-process cluster: which are up, who leads each partition, who coordinates.

Every node of a cluster is a `Broker` with its own listeners and node id, sharing one state
(logs, topics, groups, producers) and one `Nodes`. A single broker is a cluster of one.
A single-replica partition is placed on a live node (round-robin) the first time it is looked
at and stays there until moved (`move_leader`); while that node is stopped or fenced the
partition is offline (leader -1), as Kafka's is when its only replica is gone, and it is led
again when the node comes back. Every new leader bumps the partition's leader epoch, as Kafka
does.

As in Kafka, the coordinator of a group (or transactional id, or share-state key) is the
leader of its internal partition, `hash(key) % partitions` of `__consumer_offsets`
(`__transaction_state`, `__share_group_state`); none while that partition is offline.
`set_coordinator` moves the leadership of internal partitions.

Replicated partitions (cluster/replicas.py) are led as Kafka's controller decides instead:
a stopped or fenced (isolated) node leaves every ISR and its partitions are led by another
ISR member (or go offline, or an unclean election picks a live replica); a node that comes
back follows, and leads again an offline partition whose ISR it is in. A new leader's
producer state and transaction index are rebuilt from its own log.

Faults between nodes: a cut link between two nodes (a partial network partition) stops the
replica fetches between them both ways; the controller (this shared state) still hears from
both, as KRaft controllers on their own machines would, so followers leave the ISR only by
lagging. A crashed node (`lose_unsynced`, or `lose_power` with its log directory rebuilt
from a crash image) loses what its replica logs had not fsynced and, when it starts again, is
handled as Kafka's controller handles a broker registering after an unclean shutdown: out of
every ISR and ELR.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from minibroker.cluster.quorum import MetadataQuorum
from minibroker.cluster.replicas import NO_LEADER
from minibroker.cluster.state import TopicError
from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.server.faults import EntryKey, request_keys

if TYPE_CHECKING:
    from minibroker.cluster.state import Partition
    from minibroker.server.broker import Broker

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
# The internal topic whose partition leaders coordinate each key type.
COORDINATOR_TOPICS = {
    GROUP_KEY_TYPE: "__consumer_offsets",
    TRANSACTION_KEY_TYPE: "__transaction_state",
    SHARE_KEY_TYPE: "__share_group_state",
}
BATCHED_OFFSET_FETCH_VERSION = 8

# Requests that only a group's (or transactional id's) coordinator serves, answered
# NOT_COORDINATOR elsewhere: (key type, request field holding the key).
COORDINATED: dict[int, tuple[int, str]] = {
    ApiKey.JoinGroup: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.SyncGroup: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.Heartbeat: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.LeaveGroup: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.OffsetCommit: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.OffsetFetch: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.OffsetDelete: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.TxnOffsetCommit: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.ConsumerGroupHeartbeat: (GROUP_KEY_TYPE, "group_id"),
    ApiKey.InitProducerId: (TRANSACTION_KEY_TYPE, "transactional_id"),
    ApiKey.AddOffsetsToTxn: (TRANSACTION_KEY_TYPE, "transactional_id"),
    ApiKey.EndTxn: (TRANSACTION_KEY_TYPE, "transactional_id"),
    ApiKey.AddPartitionsToTxn: (TRANSACTION_KEY_TYPE, "v3_and_below_transactional_id"),
}

# Requests naming several keys (`faults.KEYED`: OffsetFetch v8+, DescribeGroups, ...),
# answered NOT_COORDINATOR per key, each key's coordinator being asked separately.
COORDINATED_PER_KEY: dict[int, int] = {
    ApiKey.OffsetFetch: GROUP_KEY_TYPE,
    ApiKey.DescribeGroups: GROUP_KEY_TYPE,
    ApiKey.DeleteGroups: GROUP_KEY_TYPE,
    ApiKey.ConsumerGroupDescribe: GROUP_KEY_TYPE,
    ApiKey.DescribeTransactions: TRANSACTION_KEY_TYPE,
}


@dataclass(frozen=True)
class ReplicaView:
    """What Metadata and DescribeTopicPartitions say of a partition's replicas."""

    leader: int
    replicas: list[int]
    isr: list[int]
    offline: list[int]
    elr: list[int] = field(default_factory=list)  # eligible leader replicas (KIP-966)
    last_known_elr: list[int] = field(default_factory=list)


class NodeError(Exception):
    """A node id that the cluster does not have, or an operation it cannot do now."""


class Nodes:
    def __init__(self, first: Broker) -> None:
        self.brokers: dict[int, Broker] = {first.node_id: first}
        self.live: set[int] = set()
        self._leaders: WeakKeyDictionary[Partition, int] = WeakKeyDictionary()
        self.fenced: set[int] = set()  # isolated from the others (the controller fenced them)
        self.unregistered: set[int] = set()  # UnregisterBroker: until the node starts again
        self.cut_links: set[frozenset[int]] = set()  # pairs of nodes that cannot reach each other
        self.crashed: set[int] = set()  # stopped uncleanly, until they start again
        self.quorum = MetadataQuorum.open(first.cluster_id, first.data_dir)
        first.cluster.usable_nodes = self.reachable

    def add(self, broker: Broker) -> None:
        if broker.node_id in self.brokers:
            raise NodeError(f"node {broker.node_id} exists already")
        self.brokers[broker.node_id] = broker

    def broker(self, node_id: int) -> Broker:
        try:
            return self.brokers[node_id]
        except KeyError:
            raise NodeError(f"no node {node_id} (nodes: {sorted(self.brokers)})") from None

    def live_brokers(self) -> list[Broker]:
        return [self.brokers[node_id] for node_id in sorted(self.live)]

    def registered_brokers(self, *, include_fenced: bool) -> list[Broker]:
        """The brokers registered with the controller, as Metadata and DescribeCluster list
        them: the live ones, or (`include_fenced`) the stopped ones too; an unregistered node
        is left out until it starts again (and registers)."""
        listed = sorted(self.brokers) if include_fenced else sorted(self.live)
        return [self.brokers[node_id] for node_id in listed if node_id not in self.unregistered]

    def unregister(self, node_id: int) -> bool:
        """Kafka's `ReplicationControlManager.unregisterBroker`: the node leaves every ISR
        and ELR and its leaderships (a live node is fenced) and is no longer listed; False when
        it is not registered."""
        if node_id not in self.brokers or node_id in self.unregistered:
            return False
        self.unregistered.add(node_id)
        if node_id in self.live:
            self.fence(node_id)
        else:
            self._left(node_id)
        owner = self.brokers[min(self.brokers)]
        for partition in owner.cluster.replicated_partitions():
            assert partition.replication is not None
            partition.replication.forget(node_id)
        owner.cluster.write_replication_state()
        return True

    def controller_id(self) -> int:
        return min(self.live or self.brokers)

    # ---- leaders -------------------------------------------------------------------------

    def reachable(self) -> set[int]:
        """Live nodes the controller hears from: those that may lead or be in an ISR."""
        return self.live - self.fenced

    def leader_of(self, partition: Partition) -> int:
        """The partition's leader, NO_LEADER while it is offline."""
        if partition.replication is not None:
            return partition.replication.leader
        replica = self.replica_of(partition)
        if self.live and (replica not in self.live or replica in self.fenced):
            return NO_LEADER
        return replica

    def replica_of(self, partition: Partition) -> int:
        """The node of a single-replica partition, placed on the first look."""
        replica = self._leaders.get(partition)
        if replica is None:
            live = sorted(self.reachable()) or sorted(self.brokers)
            replica = self._leaders[partition] = live[partition.index % len(live)]
        return replica

    def _set_leader(self, partition: Partition, node_id: int, *, bump: bool) -> None:
        self._leaders[partition] = node_id
        if bump:
            partition.leader_epoch += 1
        partition.notify_appended()

    def replica_view(self, partition: Partition) -> ReplicaView:
        replica_set = partition.replication
        if replica_set is None:
            leader = self.leader_of(partition)
            replica = self.replica_of(partition)
            return ReplicaView(leader, [replica], [replica], [] if leader >= 0 else [replica])
        reachable = self.reachable()
        return ReplicaView(
            replica_set.leader,
            list(replica_set.assignment),
            list(replica_set.isr),
            [node for node in replica_set.assignment if node not in reachable],
            list(replica_set.elr),
            list(replica_set.last_known_elr),
        )

    def move_leader(self, partition: Partition, node_id: int) -> None:
        self.broker(node_id)
        if node_id not in self.live:
            raise NodeError(f"node {node_id} is stopped")
        if partition.replication is not None:
            if node_id not in partition.replication.isr:
                raise NodeError(f"node {node_id} is not in the ISR {partition.replication.isr}")
            self.elect(partition, force=node_id)
            return
        if self.leader_of(partition) != node_id:
            self._set_leader(partition, node_id, bump=True)

    def elect(self, partition: Partition, *, force: int | None = None) -> bool:
        """The controller's election for a replicated partition (`force`: that replica);
        True when the leader changed."""
        owner = self.brokers[min(self.brokers)]
        changed = owner.cluster.elect_leader(partition, self.reachable(), force=force)
        if changed and partition.replication is not None and not partition.replication.offline:
            became_leader(owner, partition)
        return changed

    def leader_error(self, partition: Partition, node_id: int) -> ErrorCode | None:
        """NOT_LEADER_OR_FOLLOWER when `node_id` does not lead `partition`."""
        if partition.replication is not None:
            if partition.replication.leader == node_id and node_id not in self.fenced:
                return None
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(self.brokers) == 1 or self.leader_of(partition) == node_id:
            return None
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def placed_on(self, node_id: int) -> Iterator[Partition]:
        """The single-replica partitions whose replica is on `node_id`."""
        return (partition for partition, node in self._leaders.items() if node == node_id)

    # ---- coordinators --------------------------------------------------------------------

    def coordinator_partition(self, key_type: int, key: str) -> Partition | None:
        """The internal partition of `key`, its topic created if needed (Kafka creates it on
        FindCoordinator; TopicError while it cannot be); None where no internal topic is kept
        (share state in memory)."""
        owner = self.brokers[min(self.brokers)]
        name = COORDINATOR_TOPICS[key_type]
        if name not in owner.cluster.topics:
            if key_type == GROUP_KEY_TYPE:
                owner.groups.ensure_offsets_topic()
            elif key_type == TRANSACTION_KEY_TYPE:
                owner.transactions.ensure_log()
            else:
                owner.share_coordinator.ensure_topic()
        topic = owner.cluster.topics.get(name)
        if topic is None:
            return None
        return topic.partitions[partition_for(key, len(topic.partitions))]

    def coordinator_for(self, key_type: int, key: str) -> int:
        """The leader of `key`'s internal partition (NO_LEADER while it is offline or cannot
        be created)."""
        try:
            partition = self.coordinator_partition(key_type, key)
        except TopicError:
            return NO_LEADER
        if partition is None:
            return min(self.reachable() or self.brokers)
        return self.leader_of(partition)

    def set_coordinator(self, node_id: int, key_type: int | None = None, key: str = "") -> None:
        """Make `node_id` coordinate one key (`key_type` 0: group, 1: transactional id) or
        every group, transaction and share-state key: the leadership of the key's internal
        partition (or of every partition of `__consumer_offsets`, `__transaction_state` and
        `__share_group_state`) moves to it, so the other keys of those partitions move too. A
        replicated internal partition moves only to a member of its ISR (NodeError
        otherwise)."""
        self.broker(node_id)
        key_types = [key_type] if key_type is not None else list(COORDINATOR_TOPICS)
        try:
            found = [self.coordinator_partition(each, key) for each in key_types]
        except TopicError as exc:
            raise NodeError(f"the internal topic cannot be created now: {exc}") from None
        owner = self.brokers[min(self.brokers)]
        for partition in found:
            if partition is None:
                continue
            moved = [partition]
            if key_type is None:
                moved = owner.cluster.topics[partition.topic].partitions
            for each in moved:
                self.move_leader(each, node_id)

    def coordinator_error(self, key_type: int, key: str, node_id: int) -> ErrorCode | None:
        """NOT_COORDINATOR when `node_id` does not coordinate `key`."""
        if len(self.brokers) == 1 or self.coordinator_for(key_type, key) == node_id:
            return None
        return ErrorCode.NOT_COORDINATOR

    def request_coordinator_error(
        self, api_key: int, api_version: int, request: object, node_id: int
    ) -> ErrorCode | None:
        """NOT_COORDINATOR for a coordinator request (table above) sent to another node."""
        coordinated = COORDINATED.get(api_key)
        if len(self.brokers) == 1 or coordinated is None:
            return None
        if api_key == ApiKey.OffsetFetch and api_version >= BATCHED_OFFSET_FETCH_VERSION:
            return None  # one entry per group: keyed_coordinator_errors
        key_type, field = coordinated
        key = getattr(request, field, None)
        if key is None:  # InitProducerId without a transactional id: any node
            return None
        return self.coordinator_error(key_type, key, node_id)

    def keyed_coordinator_errors(
        self, api_key: int, api_version: int, request: object, node_id: int
    ) -> dict[EntryKey, ErrorCode]:
        """NOT_COORDINATOR for each key of a request naming several (`COORDINATED_PER_KEY`)
        that `node_id` does not coordinate."""
        key_type = COORDINATED_PER_KEY.get(api_key)
        if len(self.brokers) == 1 or key_type is None:
            return {}
        errors: dict[EntryKey, ErrorCode] = {}
        for key in request_keys(api_key, api_version, request):
            error = self.coordinator_error(key_type, key, node_id)
            if error is not None:
                errors[key] = error
        return errors

    # ---- liveness ------------------------------------------------------------------------

    def node_started(self, node_id: int) -> None:
        if node_id in self.unregistered:  # a node that starts registers again
            self.unregistered.discard(node_id)
            self.fenced.discard(node_id)
        if node_id in self.crashed:
            self.crashed.discard(node_id)
            self._restarted_uncleanly(node_id)
        was_reachable = node_id in self.reachable()
        self.live.add(node_id)
        if not was_reachable:
            self._back_online(node_id)
        self._rejoined(node_id)

    def lose_unsynced(self, node_id: int) -> int:
        """A power cut on a stopped node: each of its replica logs keeps only what it had
        fsynced (below its recovery point); it starts again as after an unclean shutdown.
        Returns how many offsets its replica logs lost."""
        self.broker(node_id)
        if node_id in self.live:
            raise NodeError(f"node {node_id} is running: stop it first")
        owner = self.brokers[min(self.brokers)]
        lost = 0
        for partition in owner.cluster.replicated_partitions():
            assert partition.replication is not None
            replica = partition.replication.replicas.get(node_id)
            if replica is not None:
                end = replica.log_end_offset
                replica.truncate_to(replica.log.recovery_point)
                lost += end - replica.log_end_offset
        self.crashed.add(node_id)
        return lost

    def lose_power(self, node_id: int, power_cut: Callable[[], None]) -> int:
        """A power cut on a stopped node whose replica logs are on disk: they are dropped as
        they are (nothing flushed), `power_cut` leaves its log directory as the cut would (a
        crash image), and they are opened again from it, recovering as Kafka's log manager
        does after an unclean shutdown (segments past the recovery point scanned, a torn tail
        truncated); it starts again as after an unclean shutdown. The state the nodes share
        (controller metadata, single-replica logs, coordinators) is not touched. Returns how
        many offsets its replica logs lost."""
        self.broker(node_id)
        if node_id in self.live:
            raise NodeError(f"node {node_id} is running: stop it first")
        owner = self.brokers[min(self.brokers)]
        ends = self._replica_ends(node_id)
        owner.cluster.replica_stores.abandon(node_id)
        power_cut()
        owner.cluster.reopen_replicas(node_id)
        recovered = self._replica_ends(node_id)
        self.crashed.add(node_id)
        return sum(max(0, end - recovered.get(key, 0)) for key, end in ends.items())

    def _replica_ends(self, node_id: int) -> dict[tuple[str, int], int]:
        owner = self.brokers[min(self.brokers)]
        ends = {}
        for partition in owner.cluster.replicated_partitions():
            assert partition.replication is not None
            replica = partition.replication.replicas.get(node_id)
            if replica is not None:
                ends[(partition.topic, partition.index)] = replica.log_end_offset
        return ends

    def _restarted_uncleanly(self, node_id: int) -> None:
        """Kafka's `handleBrokerUncleanShutdown` (with ELR enabled): the node leaves every ISR
        and ELR it is in, as it may have lost records they promise it has."""
        owner = self.brokers[min(self.brokers)]
        for partition in owner.cluster.replicated_partitions():
            assert partition.replication is not None
            if partition.replication.remove_unclean(node_id):
                owner.cluster.write_replication_state()

    def cut_link(self, node_a: int, node_b: int) -> None:
        """The two nodes stop reaching each other (both ways); each still reaches the others."""
        self.broker(node_a)
        self.broker(node_b)
        if node_a == node_b:
            raise NodeError(f"a link joins two nodes, not node {node_a} to itself")
        self.cut_links.add(frozenset((node_a, node_b)))

    def heal_link(self, node_a: int, node_b: int) -> None:
        self.cut_links.discard(frozenset((node_a, node_b)))

    def linked(self, node_a: int, node_b: int) -> bool:
        """Whether the two nodes reach each other (no cut link between them)."""
        return frozenset((node_a, node_b)) not in self.cut_links

    def node_stopped(self, node_id: int) -> None:
        """Its single-replica partitions go offline; replicated ones elect as the controller
        does."""
        owner = next(iter(self.brokers.values()))
        for partition in owner.cluster.partitions():
            if partition.replication is None:
                self.replica_of(partition)  # placed while the node is still live
        self.live.discard(node_id)
        self._went_offline(node_id)
        self._left(node_id)

    def fence(self, node_id: int) -> None:
        """Cut `node_id` off from the others: no replication to or from it, and the
        controller moves its leaderships away as when it stops."""
        self.broker(node_id)
        self.fenced.add(node_id)
        self._went_offline(node_id)
        self._left(node_id)

    def unfence(self, node_id: int) -> None:
        was_reachable = node_id in self.reachable()
        self.fenced.discard(node_id)
        if node_id in self.live:
            if not was_reachable:
                self._back_online(node_id)
            self._rejoined(node_id)

    def _went_offline(self, node_id: int) -> None:
        """Its single-replica partitions have no leader now, and the replicated ones it leads
        answer NOT_LEADER_OR_FOLLOWER until the controller elects another: their fetchers
        look again."""
        for partition in self.placed_on(node_id):
            partition.notify_appended()
        owner = self.brokers[min(self.brokers)]
        for partition in owner.cluster.replicated_partitions():
            assert partition.replication is not None
            if partition.replication.leader == node_id:
                partition.notify_appended()

    def _back_online(self, node_id: int) -> None:
        """The single-replica partitions on `node_id` are led again, with a new epoch (a new
        leader, as Kafka's controller elects it)."""
        for partition in self.placed_on(node_id):
            partition.leader_epoch += 1
            partition.notify_appended()

    def shrink_lagging_isrs(self, now_ms: int, lag_max_ms: int) -> None:
        """Followers that have not caught up for `replica.lag.time.max.ms` leave the ISR."""
        owner = self.brokers[min(self.brokers)]
        for partition in owner.cluster.replicated_partitions():
            replica_set = partition.replication
            assert replica_set is not None
            if replica_set.shrink_isr(replica_set.lagging(now_ms, lag_max_ms)):
                owner.cluster.write_replication_state()

    def _left(self, node_id: int) -> None:
        """`node_id` leaves every ISR; partitions it led get another leader (or none)."""
        owner = self.brokers[min(self.brokers)]
        for partition in list(owner.cluster.replicated_partitions()):
            replica_set = partition.replication
            assert replica_set is not None
            if node_id not in replica_set.replicas:
                continue
            was_leader = replica_set.leader == node_id
            # Kafka's controller keeps the last ISR member unless the ELR can take it
            if node_id in replica_set.isr and (
                len(replica_set.isr) > 1 or replica_set.elr_min_isr() is not None
            ):
                replica_set.shrink_isr([node_id])
            if was_leader:
                self.elect(partition)
            owner.cluster.write_replication_state()

    def _rejoined(self, node_id: int) -> None:
        """`node_id` is back: its replicas follow (truncating first) and offline partitions
        whose ISR it is in elect it."""
        owner = self.brokers[min(self.brokers)]
        for partition in list(owner.cluster.replicated_partitions()):
            replica_set = partition.replication
            assert replica_set is not None
            replica = replica_set.replicas.get(node_id)
            if replica is None:
                continue
            if replica_set.offline:
                self.elect(partition)
            if replica_set.leader != node_id:
                replica.following_epoch = -1


def became_leader(owner: Broker, partition: Partition) -> None:
    """A replica just became the partition's leader: what it serves comes from its own log,
    and so does the state of the coordinators of an internal partition."""
    rebuild = getattr(partition.log, "rebuild_txn_indexes", None)
    if rebuild is not None:
        rebuild()
    owner.producers.reload(partition)
    partition.notify_appended()
    if partition.topic == COORDINATOR_TOPICS[GROUP_KEY_TYPE]:
        owner.groups.reload_partition(partition.index)
    elif partition.topic == COORDINATOR_TOPICS[TRANSACTION_KEY_TYPE]:
        owner.transactions.reload_partition(partition.index)
