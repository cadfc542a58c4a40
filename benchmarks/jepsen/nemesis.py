"""A nemesis: faults injected through the in-process cluster's fault API on a schedule drawn
from a seed (the same seed, the same faults in the same order with the same nodes and
durations; when they land relative to the clients' operations depends on timing).

One fault at a time, healed before the next, so a majority of nodes is always up:
- `stop-node`: a node stops (connections refused, its leaderships move), then starts again;
- `isolate-node`: a node is cut off from the others (a network partition: fenced, out of
  every ISR), then reconnected;
- `pause-replication`: a node's follower replicas stop fetching (they leave the ISR after
  replica.lag.time.max.ms), then resume;
- `slow-node`: every request to a node waits (a slow disk or network), then not;
- `cut-link`: the link between two nodes is cut (a partial partition: no replica fetch
  between them either way, both still reach the others and the controller), then healed;
- `crash-node`: a node loses power: it stops and its replica log directory becomes a crash
  image of the power-loss model (minibroker.testing.powerloss; the cluster runs with
  `power_loss_seed`): "synced" (only what was fsynced) or "torn" (unsynced appends partly
  kept, unsynced directory entries kept), drawn from the seed; its replica logs are recovered
  from it (torn batches truncated) and it starts again as after an unclean shutdown (out of
  every ISR and ELR);
- `leader-alone`: a partition's followers stop fetching until the ISR is its leader alone,
  then the leader stops (with acks=1 and unclean election this loses the records only the
  leader had, as Kafka documents; with acks=all and min.insync.replicas=2 the writes are
  refused instead), then everything is healed;
- `internal-leader-alone` (only when asked for, not in the default set): the same on a
  partition of `__consumer_offsets` (even nodes drawn) or `__transaction_state` (odd ones),
  where the group and transaction coordinators write.
Every injection and heal is recorded in the history (`f` "nemesis" and "heal").
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.jepsen.history import History
from minibroker.testing import KafkaCluster

FAULTS = (
    "stop-node",
    "isolate-node",
    "pause-replication",
    "slow-node",
    "leader-alone",
    "cut-link",
    "crash-node",
)
EXTRA_FAULTS = ("internal-leader-alone",)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
SLOW_S = 0.2


@dataclass(frozen=True)
class Fault:
    kind: str
    node: int
    peer: int  # cut-link's other node
    duration_s: float
    partition: int  # leader-alone's partition
    gap_s: float  # quiet time before the fault


def schedule(
    seed: int, nodes: Sequence[int], partitions: int, kinds: Sequence[str], interval_s: float
) -> Iterator[Fault]:
    """The seed's faults, without end (the nemesis stops taking them when the run ends)."""
    rng = random.Random(seed)
    while True:
        node = rng.choice(list(nodes))
        yield Fault(
            kind=rng.choice(list(kinds)),
            node=node,
            peer=rng.choice([other for other in nodes if other != node]),
            duration_s=rng.uniform(0.5, 1.5) * interval_s,
            partition=rng.randrange(partitions),
            gap_s=rng.uniform(0.25, 1.0) * interval_s,
        )


class Nemesis(threading.Thread):
    def __init__(
        self,
        cluster: KafkaCluster,
        history: History,
        faults: Iterator[Fault],
        stop: threading.Event,
        topic: str,
        lag_time_s: float,
    ) -> None:
        super().__init__(name="nemesis", daemon=True)
        self.cluster = cluster
        self.history = history
        self.faults = faults
        self.stop_event = stop
        self.topic = topic
        self.lag_time_s = lag_time_s
        self.injected = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for fault in self.faults:
                if self.stop_event.wait(fault.gap_s):
                    return
                self._inject(fault)
        except BaseException as exc:  # reported by the runner
            self.error = exc

    def _record(self, f: str, fault: Fault, detail: dict[str, Any]) -> None:
        value = {"fault": fault.kind, "node": fault.node, **detail}
        if fault.kind == "cut-link":
            value["peer"] = fault.peer
        self.history.complete(self.history.invoke("nemesis", f, value), "ok", value)

    def _inject(self, fault: Fault) -> None:
        self.injected += 1
        if fault.kind == "leader-alone":
            self._leader_alone(fault, self.topic)
            return
        if fault.kind == "internal-leader-alone":
            self._leader_alone(fault, INTERNAL_TOPICS[fault.node % 2])
            return
        if fault.kind == "crash-node":
            self._crash(fault)
            return
        if fault.kind == "cut-link":
            self._record("nemesis", fault, {})
            self.cluster.cut_link(fault.node, fault.peer)
            self.stop_event.wait(fault.duration_s)
            self.cluster.heal_link(fault.node, fault.peer)
            self._record("heal", fault, {})
            return
        start, heal = {
            "stop-node": (self.cluster.stop_node, self.cluster.start_node),
            "isolate-node": (self.cluster.isolate_node, self.cluster.reconnect_node),
            "pause-replication": (self.cluster.pause_replication, self.cluster.resume_replication),
            "slow-node": (self._slow, self._fast),
        }[fault.kind]
        self._record("nemesis", fault, {})
        start(fault.node)
        self.stop_event.wait(fault.duration_s)
        heal(fault.node)
        self._record("heal", fault, {})

    def _crash(self, fault: Fault) -> None:
        """Recorded with how many offsets the node's replica logs lost, and the crash image."""
        value: dict[str, Any] = {"fault": fault.kind, "node": fault.node}
        invoked = self.history.invoke("nemesis", "nemesis", value)
        lost = self.cluster.crash_node(fault.node)
        image = self.cluster.last_crash_image
        self.history.complete(invoked, "ok", {**value, "lost_offsets": lost, "image": image})
        self.stop_event.wait(fault.duration_s)
        self.cluster.start_node(fault.node)
        self._record("heal", fault, {})

    def _slow(self, node: int) -> None:
        self.cluster.set_latency(SLOW_S, node=node)

    def _fast(self, node: int) -> None:
        self.cluster.set_latency(0.0, node=node)

    def _leader_alone(self, fault: Fault, topic: str) -> None:
        if topic not in self.cluster.topics():
            return
        leader = self.cluster.leader(topic, fault.partition)
        if leader not in self.cluster.live_nodes:
            return
        followers = [n for n in self.cluster.replicas(topic, fault.partition) if n != leader]
        detail = {"topic": topic, "partition": fault.partition, "leader": leader}
        self._record("nemesis", fault, detail)
        for follower in followers:
            self.cluster.pause_replication(follower, topic, fault.partition)
        self.stop_event.wait(self.lag_time_s + fault.duration_s)
        self.cluster.stop_node(leader)
        self.stop_event.wait(fault.duration_s / 2)
        for follower in followers:
            self.cluster.resume_replication(follower, topic, fault.partition)
        self.stop_event.wait(fault.duration_s / 2)
        self.cluster.start_node(leader)
        self._record("heal", fault, detail)


def heal_all(cluster: KafkaCluster) -> None:
    """Every node up, connected, replicating and fast."""
    for node in cluster.node_ids:
        cluster.start_node(node)
        cluster.reconnect_node(node)
        cluster.resume_replication(node)
        cluster.set_latency(0.0, node=node)
        for peer in cluster.node_ids:
            if peer != node:
                cluster.heal_link(node, peer)
