"""The replicas of a partition in an in-process cluster (replication factor above 1).

Every replica is a log of its own in its node's log directory (`<data dir>/nodes/<id>/`).
The leader's replica is the partition's `log`: produce appends to it, consumers read it up to
the high watermark. Followers copy it with Fetch requests (server/replica_fetcher.py); each
follower fetch tells the leader the follower's log end offset, from which the in-sync replicas
(ISR) and the high watermark move as in Kafka's `Partition`:
- a follower joins the ISR once its log end offset reaches the high watermark (and the
  current leader epoch's first offset), and leaves it when it has not caught up with the
  leader's log end for `replica.lag.time.max.ms`, or when its node stops or is fenced;
- the high watermark is the smallest log end offset of the ISR, and never goes back but
  when an unclean election makes a shorter log the leader's.
Elections follow the controller's rules: the first replica of the assignment that is live and
in the ISR leads; with none, `unclean.leader.election.enable` lets the first live replica
lead (its ISR is then itself alone), else the partition is offline (leader -1) until an ISR
member comes back. With eligible leader replicas (KIP-966, `eligible.leader.replicas.version` 1)
the controller's `PartitionChangeBuilder` rules apply too: while the ISR is below the topic's
min.insync.replicas, the members that leave it become eligible leader replicas (ELR); the ISR
may then become empty, and a live ELR member is elected (the ISR is then itself) when no ISR
member can lead; an ISR back at min.insync.replicas, or an unclean election, clears the ELR
and the last-known ELR. Each new leader gets a new leader epoch, recorded at its log end offset in
its leader-epoch cache; a follower of a new epoch first truncates its log to where it
diverges from the leader's (Kafka's `LeaderEpochFileCache.endOffsetFor` on both sides), so
records that only an old leader had are gone, exactly as in Kafka.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from minibroker.log.base import SCAN_CHUNK_BYTES, PartitionLog
from minibroker.records.batch import BatchHeader, split_batches

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
NO_LEADER = -1


class EpochCache:
    """Kafka's leader-epoch cache: the first offset of each leader epoch in one replica's log."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self.entries: list[tuple[int, int]] = list(entries)

    @classmethod
    def of_log(cls, log: PartitionLog) -> EpochCache:
        """Rebuilt from the partition leader epochs stamped in the log's batches."""
        cache = cls()
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, SCAN_CHUNK_BYTES)
            if not data:
                break
            for batch in split_batches(data):
                header = BatchHeader.parse(batch)
                cache.assign(header.partition_leader_epoch, header.base_offset)
                offset = header.last_offset + 1
        return cache

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Epoch `epoch` starts at `start_offset` (Kafka's `assign`: later or overlapping
        entries go)."""
        if epoch < 0 or (self.entries and self.entries[-1][0] == epoch):
            return
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        self.entries = [(e, s) for e, s in self.entries if s < end_offset]

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) of `requested_epoch`: the largest epoch at or below it and the
        first offset of the epoch after that (the log end for the latest epoch)."""
        if requested_epoch == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        higher = next(((e, s) for e, s in self.entries if e > requested_epoch), None)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        floor = [(e, s) for e, s in self.entries if e <= requested_epoch]
        if not floor:
            return requested_epoch, higher[1]
        return floor[-1][0], higher[1]


@dataclass(eq=False)
class Replica:
    node_id: int
    log: PartitionLog
    epochs: EpochCache
    last_caught_up_ms: int = field(default_factory=lambda: time.time_ns() // 1_000_000)
    # The leader's log end offset at this follower's previous fetch, and that fetch's time.
    last_fetch_leader_end: int = UNDEFINED_OFFSET
    last_fetch_ms: int = 0
    following_epoch: int = UNDEFINED_EPOCH  # the leader epoch it last truncated for
    paused: bool = False  # a test stopped its fetching

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def truncate_to(self, offset: int) -> None:
        if offset < self.log.log_end_offset:
            self.log.truncate_to(max(offset, self.log.log_start_offset))
        self.epochs.truncate_from_end(self.log.log_end_offset)


@dataclass(eq=False)
class Reassignment:
    target: list[int]
    adding: list[int]
    removing: list[int]


def elr_disabled() -> int | None:
    return None


def no_min_isr() -> int:
    return 1


@dataclass(eq=False)
class ReplicaSet:
    assignment: list[int]  # the replicas, the preferred leader first
    replicas: dict[int, Replica]
    isr: list[int]
    leader: int
    high_watermark: int = 0
    reassignment: Reassignment | None = None
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    # the topic's min.insync.replicas while eligible leader replicas are enabled, else None
    elr_min_isr: Callable[[], int | None] = elr_disabled
    # Kafka's effective min.insync.replicas: the topic's, at most the replication factor
    min_isr: Callable[[], int] = no_min_isr
    # called whenever the high watermark moves (the coordinators' changes waiting for the ISR)
    high_watermark_listeners: list[Callable[[], None]] = field(default_factory=list)
    _waiters: list[tuple[int, asyncio.Future[None]]] = field(default_factory=list)

    @property
    def offline(self) -> bool:
        return self.leader == NO_LEADER

    def leader_replica(self) -> Replica | None:
        return None if self.offline else self.replicas[self.leader]

    def followers(self) -> list[Replica]:
        return [r for node, r in self.replicas.items() if node != self.leader]

    # ---- follower fetches and the high watermark -----------------------------------------

    def follower_fetched(
        self, node_id: int, fetch_offset: int, leader_epoch: int, now_ms: int
    ) -> tuple[bool, bool]:
        """A follower fetched from `fetch_offset` (its log end offset): its catch-up time, ISR
        membership and the high watermark move; (ISR grew, high watermark moved)."""
        replica = self.replicas.get(node_id)
        leader = self.leader_replica()
        if replica is None or leader is None:
            return False, False
        replica.last_caught_up_ms = max(
            replica.last_caught_up_ms, caught_up_at(replica, fetch_offset, leader, now_ms)
        )
        replica.last_fetch_leader_end = leader.log_end_offset
        replica.last_fetch_ms = now_ms
        joined = (
            node_id not in self.isr
            and fetch_offset >= self.high_watermark
            and fetch_offset >= self.epoch_start_offset(leader_epoch)
        )
        if joined:
            self.change_isr([*self.isr, node_id])
        return joined, self.advance_high_watermark()

    def advance_high_watermark(self) -> bool:
        """Kafka's `maybeIncrementLeaderHW`: never while the ISR is under min.insync.replicas,
        so that a record the ISR alone holds is not read (nor acknowledged) when an election
        may still pick a replica without it."""
        leader = self.leader_replica()
        if leader is None or len(self.isr) < self.min_isr():
            return False
        ends = [self.replicas[node].log_end_offset for node in self.isr if node in self.replicas]
        candidate = min(ends, default=leader.log_end_offset)
        if candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        self._wake_waiters()
        for listener in list(self.high_watermark_listeners):
            listener()
        return True

    def lagging(self, now_ms: int, lag_max_ms: int) -> list[int]:
        """ISR followers that have not caught up with the leader for `lag_max_ms`."""
        leader = self.leader_replica()
        if leader is None:
            return []
        return [
            node
            for node in self.isr
            if node != self.leader
            and self.replicas[node].log_end_offset < leader.log_end_offset
            and now_ms - self.replicas[node].last_caught_up_ms > lag_max_ms
        ]

    def shrink_isr(self, nodes: Iterable[int]) -> bool:
        removed = set(nodes)
        kept = [node for node in self.isr if node not in removed]
        if kept == self.isr:
            return False
        self.change_isr(kept)
        self.advance_high_watermark()
        self._wake_waiters()  # acks=all waiters re-check min.insync.replicas
        return True

    def change_isr(self, target: list[int], unclean: Iterable[int] = ()) -> None:
        """The ISR becomes `target`; with ELR enabled, Kafka's `maybePopulateTargetElr`: below
        min.insync.replicas, the members leaving join the ELR (members back in the ISR leave
        it; `unclean` ones, restarted after an unclean shutdown, go to the last-known ELR
        instead), at or above it the ELR and last-known ELR are cleared."""
        min_isr = self.elr_min_isr()
        if min_isr is not None:
            if len(target) >= min_isr:
                self.elr, self.last_known_elr = [], []
            else:
                candidates = set(self.elr) | set(self.isr)
                self.elr = sorted(candidates - set(target) - set(unclean))
                known = candidates | set(self.last_known_elr)
                self.last_known_elr = sorted(known - set(target) - set(self.elr))
        self.isr = target

    def remove_unclean(self, node_id: int) -> bool:
        """`node_id` registered again after an unclean shutdown (Kafka's
        `handleBrokerUncleanShutdown`, only with ELR enabled): out of the ISR and the ELR;
        True when either changed."""
        if self.elr_min_isr() is None or (node_id not in self.isr and node_id not in self.elr):
            return False
        self.change_isr([node for node in self.isr if node != node_id], unclean=[node_id])
        self.advance_high_watermark()
        self._wake_waiters()
        return True

    def forget(self, node_id: int) -> None:
        """`node_id` is no longer a broker (unregistered): out of the ELR and last-known ELR."""
        self.elr = [node for node in self.elr if node != node_id]
        self.last_known_elr = [node for node in self.last_known_elr if node != node_id]

    async def wait_for_high_watermark(self, offset: int, timeout_s: float) -> None:
        """Until the high watermark reaches `offset`, the leader changes or `timeout_s` pass
        (Kafka's DelayedProduce for acks=all)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        leader = self.leader
        while self.high_watermark < offset and self.leader == leader:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            future: asyncio.Future[None] = loop.create_future()
            entry = (offset, future)
            self._waiters.append(entry)
            try:
                await asyncio.wait_for(asyncio.shield(future), remaining)
            except TimeoutError:
                return
            finally:
                if entry in self._waiters:
                    self._waiters.remove(entry)

    def _wake_waiters(self) -> None:
        for _offset, future in self._waiters:
            if not future.done():
                future.set_result(None)
        self._waiters.clear()

    # ---- elections ------------------------------------------------------------------------

    def elect(self, live: set[int], unclean: bool) -> int:
        """The controller's choice of leader among `live` nodes (NO_LEADER: offline): an ISR
        member, else (the ISR empty) an ELR member, else, unclean, any live replica."""
        for node in self.assignment:
            if node in live and (node in self.isr or (not self.isr and node in self.elr)):
                return node
        if unclean:
            return next((node for node in self.assignment if node in live), NO_LEADER)
        return NO_LEADER

    def install_leader(self, node_id: int, epoch: int) -> Replica:
        """`node_id` leads from leader epoch `epoch`: the epoch starts at its log end, the
        high watermark is at most its log end, and an unclean leader is the ISR alone."""
        replica = self.replicas[node_id]
        self.leader = node_id
        now_ms = time.time_ns() // 1_000_000
        for follower in self.followers():
            follower.last_caught_up_ms = now_ms
        replica.epochs.assign(epoch, replica.log_end_offset)
        replica.following_epoch = epoch
        if node_id in self.elr and not self.isr:  # elected from the ELR: a clean election
            self.elr = [node for node in self.elr if node != node_id]
            self.isr = [node_id]
        elif node_id not in self.isr:  # unclean: the ISR is the new leader alone, no ELR
            self.isr = [node_id]
            self.elr, self.last_known_elr = [], []
        self.high_watermark = min(self.high_watermark, replica.log_end_offset)
        self.advance_high_watermark()
        self._wake_waiters()
        return replica

    def go_offline(self) -> None:
        self.leader = NO_LEADER
        self._wake_waiters()

    def epoch_start_offset(self, epoch: int) -> int:
        leader = self.leader_replica()
        if leader is None:
            return 0
        return next((start for e, start in leader.epochs.entries if e == epoch), 0)


def caught_up_at(follower: Replica, fetch_offset: int, leader: Replica, now_ms: int) -> int:
    """When a follower fetching from `fetch_offset` was last caught up (Kafka's
    `Replica.updateFetchStateOrThrow`): now if it has the leader's log end, else at its previous
    fetch if it has the log end the leader had then (under a steady stream of appends a
    follower never has the leader's latest, yet keeps up); 0 for neither."""
    if fetch_offset >= leader.log_end_offset:
        return now_ms
    if fetch_offset >= follower.last_fetch_leader_end:
        return follower.last_fetch_ms
    return 0


def truncation_offset(follower: Replica, leader: Replica, high_watermark: int) -> int:
    """Where a follower's log stops agreeing with the leader's (Kafka's truncation by leader
    epoch): the end of the follower's latest epoch as the leader knows it, bounded by the
    follower's own end of that epoch."""
    follower_end = follower.log_end_offset
    epoch = follower.epochs.latest_epoch
    if epoch == UNDEFINED_EPOCH:
        return min(follower_end, high_watermark)
    leader_epoch, leader_end = leader.epochs.end_offset_for(epoch, leader.log_end_offset)
    if leader_epoch == UNDEFINED_EPOCH:
        return min(follower_end, high_watermark)
    if leader_epoch == epoch:
        return min(follower_end, leader_end)
    _own_epoch, own_end = follower.epochs.end_offset_for(leader_epoch, follower_end)
    return min(follower_end, leader_end, own_end if own_end >= 0 else follower_end)
