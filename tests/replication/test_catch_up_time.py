"""A follower's last caught-up time, from which it leaves the ISR after
replica.lag.time.max.ms (Kafka's `Replica.updateFetchStateOrThrow`): under a steady stream of
appends a follower never fetches from the leader's latest log end, yet it stays in sync while
each fetch starts at the log end the leader had at its previous fetch."""

from __future__ import annotations

import uuid

from minibroker.cluster.replicas import EpochCache, Replica, ReplicaSet
from minibroker.log.config import LogConfig
from minibroker.log.memory import MemoryPartitionLog
from minibroker.records.records import build_batch

LAG_MAX_MS = 1000
START_MS = 1_000_000


def replica(node: int) -> Replica:
    log = MemoryPartitionLog("t", 0, uuid.uuid4(), LogConfig())
    return Replica(node, log, EpochCache(), last_caught_up_ms=START_MS)


def append_one(leader: Replica) -> None:
    leader.log.append(bytearray(build_batch([(None, b"v", (), START_MS)])), 0, START_MS)


def test_a_follower_one_fetch_behind_a_stream_stays_in_sync() -> None:
    leader, follower = replica(1), replica(2)
    replicas = ReplicaSet([1, 2], {1: leader, 2: follower}, [1, 2], 1)
    now = START_MS
    for _ in range(10):
        fetch_offset = leader.log_end_offset  # what the follower copied after its last fetch
        append_one(leader)  # a new record arrives while that fetch is on its way
        now += LAG_MAX_MS // 2
        replicas.follower_fetched(2, fetch_offset, 0, now)
        assert replicas.lagging(now + LAG_MAX_MS // 2, LAG_MAX_MS) == []
    assert follower.last_caught_up_ms == now - LAG_MAX_MS // 2


def test_a_follower_that_stops_copying_lags() -> None:
    leader, follower = replica(1), replica(2)
    replicas = ReplicaSet([1, 2], {1: leader, 2: follower}, [1, 2], 1)
    append_one(leader)
    replicas.follower_fetched(2, 0, 0, START_MS + 100)
    append_one(leader)
    replicas.follower_fetched(2, 0, 0, START_MS + 200)  # still at 0: not even the previous end
    assert follower.last_caught_up_ms == START_MS
    assert replicas.lagging(START_MS + LAG_MAX_MS + 1, LAG_MAX_MS) == [2]
