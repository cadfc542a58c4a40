"""Replication helpers of in-process clusters: replicas, ISR, each replica's records, and
faults between nodes (a follower that stops fetching, a node cut off from the others, the
link between two nodes cut).

Mixed into `KafkaCluster` / `AsyncKafkaCluster` (minibroker/testing/cluster.py); topics with a
replication factor above 1 are replicated (cluster/replicas.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from minibroker.cluster.replicas import Replica, ReplicaSet
from minibroker.cluster.state import Partition, TopicError
from minibroker.log.base import PartitionLog
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.server.broker import Broker
    from minibroker.testing.cluster import StoredRecord

T = TypeVar("T")


class ReplicationHelpers:
    def _owner(self) -> Broker:
        raise NotImplementedError

    def _run(self, action: Callable[[], T]) -> T:
        raise NotImplementedError

    def _partition(self, topic: str, index: int) -> Partition:
        raise NotImplementedError

    def _log_records(
        self, topic: str, index: int, log: PartitionLog, end: int
    ) -> list[StoredRecord]:
        raise NotImplementedError

    def _replica_set(self, topic: str, partition: int) -> ReplicaSet:
        replica_set = self._partition(topic, partition).replication
        if replica_set is None:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR, f"{topic}-{partition} has one replica"
            )
        return replica_set

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's replica nodes, the preferred leader first."""
        return self._run(lambda: list(self._replica_set(topic, partition).assignment))

    def isr(self, topic: str, partition: int) -> list[int]:
        """The partition's in-sync replicas."""
        return self._run(lambda: sorted(self._replica_set(topic, partition).isr))

    def elr(self, topic: str, partition: int) -> list[int]:
        """The partition's eligible leader replicas (KIP-966; empty while ELR is disabled)."""
        return self._run(lambda: sorted(self._replica_set(topic, partition).elr))

    def high_watermark(self, topic: str, partition: int) -> int:
        return self._run(lambda: self._partition(topic, partition).high_watermark)

    def replica_end_offsets(self, topic: str, partition: int) -> dict[int, int]:
        """node -> log end offset of its replica."""
        return self._run(
            lambda: {
                node: replica.log_end_offset
                for node, replica in self._replica_set(topic, partition).replicas.items()
            }
        )

    def replica_records(self, node: int, topic: str, partition: int) -> list[StoredRecord]:
        """Every record in one node's replica log (to its log end, past the high watermark
        too), transaction markers left out."""

        def read() -> list[StoredRecord]:
            replica = self._replica_set(topic, partition).replicas.get(node)
            if replica is None:
                raise TopicError(
                    ErrorCode.REPLICA_NOT_AVAILABLE, f"node {node} has no replica of {topic}"
                )
            return self._log_records(topic, partition, replica.log, replica.log_end_offset)

        return self._run(read)

    def pause_replication(
        self, node: int, topic: str | None = None, partition: int | None = None
    ) -> None:
        """`node`'s follower replicas (of one topic or partition) stop fetching: they fall
        behind, and leave the ISR after `replica.lag.time.max.ms`."""
        self._run(lambda: self._set_paused(node, topic, partition, paused=True))

    def resume_replication(
        self, node: int, topic: str | None = None, partition: int | None = None
    ) -> None:
        self._run(lambda: self._set_paused(node, topic, partition, paused=False))

    def _set_paused(self, node: int, topic: str | None, index: int | None, *, paused: bool) -> None:
        self._owner().nodes.broker(node)
        for replica in self._replicas_on(node, topic, index):
            replica.paused = paused

    def _replicas_on(self, node: int, topic: str | None, index: int | None) -> list[Replica]:
        found = []
        for partition in self._owner().cluster.replicated_partitions():
            if topic is not None and partition.topic != topic:
                continue
            if index is not None and partition.index != index:
                continue
            assert partition.replication is not None
            replica = partition.replication.replicas.get(node)
            if replica is not None:
                found.append(replica)
        return found

    def isolate_node(self, node: int) -> None:
        """Cut `node` off from the other nodes, as a network partition would: no replication
        to or from it, and the controller fences it (it leaves every ISR; its leaderships
        move to other ISR members). Clients still reach it and get NOT_LEADER_OR_FOLLOWER."""
        self._run(lambda: self._owner().nodes.fence(node))

    def reconnect_node(self, node: int) -> None:
        """Undo `isolate_node`: its replicas truncate to the leaders' logs and catch up."""
        self._run(lambda: self._owner().nodes.unfence(node))

    def cut_link(self, node_a: int, node_b: int) -> None:
        """A partial network partition: the two nodes stop reaching each other (no replica
        fetch between them either way) while both still reach the other nodes and the
        controller. Followers across the cut fall behind and leave the ISR after
        `replica.lag.time.max.ms`; nobody is fenced. Clients still reach both."""
        self._run(lambda: self._owner().nodes.cut_link(node_a, node_b))

    def heal_link(self, node_a: int, node_b: int) -> None:
        """Undo `cut_link`: the followers fetch again and rejoin the ISR once caught up."""
        self._run(lambda: self._owner().nodes.heal_link(node_a, node_b))

    def in_sync(self, topic: str | None = None) -> bool:
        """Whether every replica of the topic's (every topic's) replicated partitions on a
        reachable node is in the ISR with the leader's log end offset."""

        def check() -> bool:
            reachable = self._owner().nodes.reachable()
            for partition in self._owner().cluster.replicated_partitions():
                if topic is not None and partition.topic != topic:
                    continue
                replica_set = partition.replication
                assert replica_set is not None
                leader = replica_set.leader_replica()
                if leader is None:
                    return False
                for node, replica in replica_set.replicas.items():
                    if node not in reachable:
                        continue
                    if node not in replica_set.isr:
                        return False
                    if replica.log_end_offset != leader.log_end_offset:
                        return False
                if partition.high_watermark != leader.log_end_offset:
                    return False
            return True

        return self._run(check)
