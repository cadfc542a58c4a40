"""Which log directory of a node holds a partition's log, and moving it to another one
(DescribeLogDirs, AlterReplicaLogDirs).

A node's log directories are the data directories of `log.dirs` (single-replica partitions,
which every node of an in-process cluster shares) and, in a cluster, its own replica
directories `<log dir>/nodes/<id>` (cluster/replication.py). A single-replica partition moves
between the former, a replica between its node's replica directories: any other path is
LOG_DIR_NOT_FOUND for it.
"""

from __future__ import annotations

from pathlib import Path

from minibroker.cluster.state import Cluster, Partition
from minibroker.log.base import PartitionLog
from minibroker.log.dirs import LogDirs
from minibroker.log.manager import LogManager
from minibroker.protocol.errors import ErrorCode


def node_log_dirs(cluster: Cluster, node_id: int) -> list[LogDirs]:
    """The shared data directories, then the node's replica directories if it has any."""
    store = cluster.replica_stores.by_node.get(node_id)
    return [cluster.logs] if store is None else [cluster.logs, store]


def hosted_log(
    cluster: Cluster, node_id: int, partition: Partition
) -> tuple[LogDirs, PartitionLog] | None:
    """The directories and log of the node's copy of `partition` (None: it has none)."""
    if partition.replication is None:
        return cluster.logs, partition.log
    store = cluster.replica_stores.by_node.get(node_id)
    log = None if store is None else hosted_log_of(store, node_id, partition)
    if store is None or log is None:
        return None
    return store, log


def hosted_log_of(dirs: LogDirs, node_id: int, partition: Partition) -> PartitionLog | None:
    """The node's copy of `partition` (kept in `dirs`, the directories of its kind)."""
    if partition.replication is None:
        return partition.log
    replica = partition.replication.replicas.get(node_id)
    return None if replica is None else replica.log


def move_log(cluster: Cluster, node_id: int, partition: Partition, path: str) -> ErrorCode:
    """Move the node's copy of `partition` into the log directory at `path` (Kafka's
    AlterReplicaLogDirs errors); the partition (and replica) then use the moved log."""
    hosted = hosted_log(cluster, node_id, partition)
    if hosted is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    dirs, log = hosted
    target = _directory_at(dirs, path)
    if target is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if log.storage_error is not None:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if dirs.manager_of(partition.topic, partition.index) is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE  # never written: nothing to move yet
    moved = dirs.move(partition.topic, partition.index, target)
    if partition.replication is None:
        partition.log = moved
        return ErrorCode.NO_ERROR
    partition.replication.replicas[node_id].log = moved
    if partition.replication.leader == node_id:
        partition.log = moved
    return ErrorCode.NO_ERROR


def _directory_at(dirs: LogDirs, path: str) -> LogManager | None:
    wanted = Path(path).resolve()
    return next(
        (m for m in dirs.managers if m.data_dir is not None and m.data_dir.resolve() == wanted),
        None,
    )
