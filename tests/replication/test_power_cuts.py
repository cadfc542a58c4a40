"""Crashes through the power-loss model (`KafkaCluster(power_loss_seed=...)`): a crashed node's
replica log directory becomes a crash image (only what was fsynced, or torn: unsynced appends
partly kept) and is recovered from it, then the node starts again as after an unclean shutdown.
Every write acknowledged with acks=all (RF 3, min.insync.replicas=2) by a confluent-kafka
producer survives on every replica, whichever node loses power."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from minibroker.testing import KafkaCluster
from tests.replication import partition0

CONFIG = {"replica.lag.time.max.ms": 500, "min.insync.replicas": 2}
SEED = 3


def _produce(producer: Producer, topic: str, values: list[bytes]) -> list[bytes]:
    """The values the producer saw acknowledged."""
    acked: list[bytes] = []

    def delivered(error: object, message: object) -> None:
        if error is None:
            acked.append(message.value())  # type: ignore[attr-defined]

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    return acked


def _producer(cluster: KafkaCluster) -> Producer:
    return Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 30_000,
        }
    )


def test_acknowledged_writes_survive_power_cuts_of_every_node() -> None:
    with KafkaCluster(nodes=3, config=CONFIG, power_loss_seed=SEED) as cluster:
        cluster.create_topic("cuts", assignments=[[1, 2, 3]])
        producer = _producer(cluster)
        acked: list[bytes] = []
        variants = []
        lost = 0
        for round_, node in enumerate([2, 1, 3, 1, 2, 3]):  # node 1 leads first
            acked += _produce(producer, "cuts", [f"{round_}-{i}".encode() for i in range(30)])
            lost += cluster.crash_node(node)
            variants.append(cluster.last_crash_image)
            cluster.start_node(node)
            cluster.wait_in_sync("cuts")
        acked += _produce(producer, "cuts", [b"last"])
        cluster.wait_in_sync("cuts")
        assert set(variants) == {"synced", "torn"}
        assert lost > 0  # the crashes did lose unsynced appends
        assert len(acked) == 6 * 30 + 1
        for node in (1, 2, 3):
            assert partition0.values(cluster, node, "cuts") == acked


def test_a_node_that_lost_power_is_not_elected_from_the_elr() -> None:
    """The ISR is [1, 2] (3 lags); node 2 stops fetching, then loses power and everything it
    had not fsynced: it leaves the ISR for the ELR, and when it registers again (an unclean
    shutdown) the ELR too. The leader then stops: the partition waits offline for it rather
    than electing node 2, whose log lacks acknowledged writes."""
    with KafkaCluster(nodes=3, config=CONFIG, power_loss_seed=SEED) as cluster:
        cluster.create_topic("elr-cut", assignments=[[1, 2, 3]])
        producer = _producer(cluster)
        cluster.pause_replication(3, "elr-cut")
        try:
            # acknowledged once node 3 has lagged out of the ISR
            acked = _produce(producer, "elr-cut", [f"v{i}".encode() for i in range(20)])
            assert len(acked) == 20
            assert cluster.isr("elr-cut", 0) == [1, 2]
            cluster.pause_replication(2, "elr-cut")  # so that it does not catch up again
            assert cluster.crash_node(2, image="synced") > 0
            assert partition0.values(cluster, 2, "elr-cut") == []  # nothing was fsynced
            assert (cluster.isr("elr-cut", 0), cluster.elr("elr-cut", 0)) == ([1], [2])
            cluster.start_node(2)
            assert cluster.elr("elr-cut", 0) == []
            cluster.stop_node(1)
            assert cluster.leader("elr-cut", 0) == -1
        finally:
            for follower in (2, 3):
                cluster.resume_replication(follower, "elr-cut")
            cluster.start_node(1)
        cluster.wait_in_sync("elr-cut")
        acked += _produce(producer, "elr-cut", [b"after"])
        for node in (1, 2, 3):
            assert partition0.values(cluster, node, "elr-cut") == acked


def test_the_power_loss_model_needs_one_log_directory_on_disk(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="storage='disk'"):
        KafkaCluster(nodes=3, storage="memory", power_loss_seed=SEED)
    two_dirs = {"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}"}
    with pytest.raises(ValueError, match="one log directory"):
        KafkaCluster(nodes=3, config=two_dirs, power_loss_seed=SEED)
