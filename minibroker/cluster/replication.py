"""Replicated partitions of an in-process cluster: each node's replica logs and the
controller's decisions (placement, ISR, elections), kept in `minibroker-replicas.json`.

A partition created with more than one replica has a `ReplicaSet` (cluster/replicas.py);
its replicas' logs live in `<data dir>/nodes/<node id>/`, one Kafka log directory per node
(own `meta.properties` and checkpoints), or in memory. Partitions with one replica keep the
single shared log of the data directory. The file records, per replicated partition, the
assignment, ISR, leader, leader epoch and high watermark (Kafka keeps these in the metadata
log and `replication-offset-checkpoint`), rewritten atomically on every change.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from minibroker.cluster.replicas import NO_LEADER, EpochCache, Reassignment, Replica, ReplicaSet
from minibroker.log.base import PartitionLog
from minibroker.log.checkpoints import write_atomically
from minibroker.log.config import LogConfig
from minibroker.log.dirs import LogDirs

REPLICAS_FILE = "minibroker-replicas.json"
NODES_DIR = "nodes"


class ReplicaStores:
    """Each node's log directories for its replica logs (`<log dir>/nodes/<id>` for each of
    `log.dirs`), opened when first needed."""

    def __init__(
        self, data_dirs: Sequence[Path] | None, cluster_id: str, default_config: LogConfig
    ) -> None:
        self.data_dirs = data_dirs
        self.cluster_id = cluster_id
        self.default_config = default_config
        self.by_node: dict[int, LogDirs] = {}
        self._loaded: dict[int, dict[tuple[str, int], PartitionLog]] = {}
        # Told (topic, partition) when a storage error takes a replica log offline.
        self.on_offline: Callable[[str, int], None] | None = None

    def store(self, node_id: int) -> LogDirs:
        manager = self.by_node.get(node_id)
        if manager is None:
            directories = None
            if self.data_dirs is not None:
                directories = [path / NODES_DIR / str(node_id) for path in self.data_dirs]
            manager = LogDirs(
                directories,
                node_id=node_id,
                cluster_id=self.cluster_id,
                default_config=self.default_config,
            )
            if self.on_offline is not None:
                manager.tell_offline(self.on_offline)
            self.by_node[node_id] = manager
            self._loaded[node_id] = {(log.topic, log.partition): log for log in manager.load()}
        return manager

    def replica_log(
        self, node_id: int, topic: str, index: int, topic_id: uuid.UUID, config: LogConfig
    ) -> PartitionLog:
        store = self.store(node_id)
        found = self._loaded[node_id].get((topic, index))
        if found is not None:
            found.update_config(config)
            return found
        return store.create(topic, index, topic_id, config)

    def abandon(self, node_id: int) -> None:
        """A power cut on `node_id`: its replica logs are dropped unflushed; the next
        `replica_log` opens them again from what is on disk (recovering them)."""
        manager = self.by_node.pop(node_id, None)
        self._loaded.pop(node_id, None)
        if manager is not None:
            manager.abandon()

    def delete(self, node_id: int, topic: str, index: int) -> None:
        self.store(node_id).delete(topic, index)
        self._loaded[node_id].pop((topic, index), None)

    def managers(self) -> list[LogDirs]:
        return list(self.by_node.values())


def new_replica_set(
    stores: ReplicaStores,
    assignment: Sequence[int],
    topic: str,
    index: int,
    topic_id: uuid.UUID,
    config: LogConfig,
) -> ReplicaSet:
    """A new partition's replicas, all in sync, led by the first (epoch 0)."""
    replicas = {
        node: Replica(node, log, EpochCache.of_log(log))
        for node in assignment
        for log in (stores.replica_log(node, topic, index, topic_id, config),)
    }
    replica_set = ReplicaSet(list(assignment), replicas, list(assignment), assignment[0])
    replicas[assignment[0]].epochs.assign(0, replicas[assignment[0]].log_end_offset)
    return replica_set


def add_replica(
    stores: ReplicaStores,
    replica_set: ReplicaSet,
    node_id: int,
    topic: str,
    index: int,
    topic_id: uuid.UUID,
    config: LogConfig,
) -> None:
    """A replica on `node_id` (reassignment): an empty log that catches up as a follower."""
    log = stores.replica_log(node_id, topic, index, topic_id, config)
    replica_set.replicas[node_id] = Replica(node_id, log, EpochCache.of_log(log))


def stored_state(path: Path | None) -> dict[str, list[dict[str, Any]]]:
    if path is None or not path.exists():
        return {}
    loaded: dict[str, list[dict[str, Any]]] = json.loads(path.read_text())
    return loaded


def restored_replica_set(
    stores: ReplicaStores,
    entry: dict[str, Any],
    topic: str,
    index: int,
    topic_id: uuid.UUID,
    config: LogConfig,
) -> ReplicaSet:
    assignment = [int(node) for node in entry["replicas"]]
    replicas = {}
    for node in assignment:
        log = stores.replica_log(node, topic, index, topic_id, config)
        replicas[node] = Replica(node, log, EpochCache.of_log(log))
    leader = int(entry["leader"])
    replica_set = ReplicaSet(
        assignment,
        replicas,
        [int(node) for node in entry["isr"]],
        leader,
        high_watermark=int(entry["high_watermark"]),
        reassignment=_restored_reassignment(entry, assignment),
        elr=[int(node) for node in entry.get("elr", [])],
        last_known_elr=[int(node) for node in entry.get("last_known_elr", [])],
    )
    if leader != NO_LEADER:
        leader_replica = replicas[leader]
        leader_replica.epochs.assign(int(entry["leader_epoch"]), leader_replica.log_end_offset)
        replica_set.high_watermark = min(replica_set.high_watermark, leader_replica.log_end_offset)
    return replica_set


def _restored_reassignment(entry: dict[str, Any], assignment: list[int]) -> Reassignment | None:
    """An ongoing reassignment: the replicas it adds and removes (the target is the rest)."""
    if "adding" not in entry:
        return None
    removing = [int(node) for node in entry["removing"]]
    target = [node for node in assignment if node not in removing]
    return Reassignment(target, [int(node) for node in entry["adding"]], removing)


def state_entry(replica_set: ReplicaSet, leader_epoch: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "replicas": replica_set.assignment,
        "isr": replica_set.isr,
        "leader": replica_set.leader,
        "leader_epoch": leader_epoch,
        "high_watermark": replica_set.high_watermark,
    }
    if replica_set.elr or replica_set.last_known_elr:
        entry["elr"] = replica_set.elr
        entry["last_known_elr"] = replica_set.last_known_elr
    reassignment = replica_set.reassignment
    if reassignment is not None:
        entry["adding"] = reassignment.adding
        entry["removing"] = reassignment.removing
    return entry


def write_state(path: Path | None, state: dict[str, list[dict[str, Any]]]) -> None:
    if path is not None and (state or path.exists()):
        write_atomically(path, json.dumps(state, indent=1, sort_keys=True))


def first_log_of(replica_set: ReplicaSet) -> PartitionLog:
    """The log the partition serves: the leader's, or (offline) the first replica's."""
    leader = replica_set.leader_replica()
    if leader is not None:
        return leader.log
    return replica_set.replicas[replica_set.assignment[0]].log


def iter_assignment(
    registered: Sequence[int], num_partitions: int, replication_factor: int, start: int = 0
) -> Iterator[list[int]]:
    """Kafka's striped placement: partition p's replicas start at broker (start + p) and
    follow in id order, so leaders spread over the nodes."""
    nodes = sorted(registered)
    for partition in range(num_partitions):
        first = (start + partition) % len(nodes)
        yield [nodes[(first + k) % len(nodes)] for k in range(replication_factor)]
