"""Faults between the nodes of an in-process cluster beyond stopping or isolating one: a cut
link between two nodes (a partial partition: no replica fetch between them, both still
reach the others and the controller) and a crash that loses what a node had not fsynced,
after which it registers as after an unclean shutdown (out of every ISR and ELR)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.protocol.errors import ErrorCode
from minibroker.server.nodes import NodeError
from minibroker.testing import KafkaCluster
from tests.replication import partition0

CONFIG = {"replica.lag.time.max.ms": 500, "min.insync.replicas": 2}


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=CONFIG) as running:
        yield running


def test_a_cut_link_stops_replication_between_its_two_nodes_only(cluster: KafkaCluster) -> None:
    cluster.create_topic("cut", assignments=[[1, 2, 3]])
    assert partition0.produce(cluster, "cut", [b"before"]).error_code == ErrorCode.NO_ERROR
    cluster.wait_in_sync("cut")
    cluster.cut_link(2, 1)
    try:
        # node 2 no longer fetches from the leader, node 3 does: acks=all goes on with the
        # ISR at min.insync.replicas once node 2 lagged out; nobody is fenced or re-elected
        assert partition0.produce(cluster, "cut", [b"during"]).error_code == ErrorCode.NO_ERROR
        partition0.wait_for(lambda: cluster.isr("cut", 0) == [1, 3])
        assert (
            partition0.produce(cluster, "cut", [b"after-shrink"]).error_code == ErrorCode.NO_ERROR
        )
        assert cluster.leader("cut", 0) == 1
        assert cluster.live_nodes == [1, 2, 3]
        assert partition0.values(cluster, 2, "cut") == [b"before"]
        assert partition0.values(cluster, 3, "cut") == [b"before", b"during", b"after-shrink"]
    finally:
        cluster.heal_link(1, 2)
    cluster.wait_in_sync("cut")
    assert cluster.isr("cut", 0) == [1, 2, 3]
    assert partition0.values(cluster, 2, "cut") == [b"before", b"during", b"after-shrink"]


def test_a_cut_link_between_two_followers_changes_nothing(cluster: KafkaCluster) -> None:
    cluster.create_topic("followers-cut", assignments=[[1, 2, 3]])
    cluster.cut_link(2, 3)
    try:
        assert partition0.produce(cluster, "followers-cut", [b"v"]).error_code == ErrorCode.NO_ERROR
        cluster.wait_in_sync("followers-cut")
        assert cluster.isr("followers-cut", 0) == [1, 2, 3]
    finally:
        cluster.heal_link(2, 3)


def test_a_link_joins_two_known_nodes(cluster: KafkaCluster) -> None:
    with pytest.raises(NodeError, match="itself"):
        cluster.cut_link(2, 2)
    with pytest.raises(NodeError, match="no node 9"):
        cluster.cut_link(1, 9)


def test_a_crash_loses_what_the_node_had_not_fsynced_and_it_catches_up(
    cluster: KafkaCluster,
) -> None:
    # flush.messages=1 fsyncs every append (followers' too); the default never does by itself
    cluster.create_topic("synced", assignments=[[1, 2, 3]], config={"flush.messages": "1"})
    cluster.create_topic("unsynced", assignments=[[1, 2, 3]])
    for topic in ("synced", "unsynced"):
        assert partition0.produce(cluster, topic, [b"a", b"b"]).error_code == ErrorCode.NO_ERROR
    cluster.wait_in_sync()
    cluster.crash_node(3)
    try:
        assert partition0.values(cluster, 3, "synced") == [b"a", b"b"]
        assert partition0.values(cluster, 3, "unsynced") == []
        assert cluster.isr("unsynced", 0) == [1, 2]
        assert partition0.produce(cluster, "unsynced", [b"c"]).error_code == ErrorCode.NO_ERROR
    finally:
        cluster.start_node(3)
    cluster.wait_in_sync()
    assert partition0.values(cluster, 3, "unsynced") == [b"a", b"b", b"c"]
    assert partition0.values(cluster, 3, "synced") == [b"a", b"b"]


def test_a_crashed_node_leaves_the_elr_when_it_starts_again(cluster: KafkaCluster) -> None:
    """Kafka's controller strikes a broker registering after an unclean shutdown from the
    ELR (it may have lost records the ELR promises it holds): when the leader then stops,
    the election takes the replica that kept them. A clean restart keeps a node in the ELR."""
    cluster.create_topic("elr-crash", assignments=[[1, 2, 3]])
    partition0.produce(cluster, "elr-crash", [b"acknowledged"])
    cluster.wait_in_sync("elr-crash")
    for follower in (2, 3):
        cluster.pause_replication(follower, "elr-crash")
    try:
        partition0.produce(cluster, "elr-crash", [b"only-on-1"], acks=1)
        partition0.wait_for(lambda: cluster.isr("elr-crash", 0) == [1])
        assert cluster.elr("elr-crash", 0) == [2, 3]
        cluster.stop_node(3)
        cluster.start_node(3)
        assert cluster.elr("elr-crash", 0) == [2, 3]
        assert cluster.crash_node(2) > 0
        assert partition0.values(cluster, 2, "elr-crash") == []  # nothing was fsynced
        assert cluster.elr("elr-crash", 0) == [2, 3]  # the controller learns at registration
        cluster.start_node(2)
        assert cluster.elr("elr-crash", 0) == [3]
        assert cluster.isr("elr-crash", 0) == [1]
        cluster.stop_node(1)
        assert cluster.leader("elr-crash", 0) == 3  # not 2, whose log is empty
    finally:
        for follower in (2, 3):
            cluster.resume_replication(follower, "elr-crash")
        cluster.start_node(1)
    cluster.wait_in_sync("elr-crash")
    assert cluster.elr("elr-crash", 0) == []
    for node in (1, 2, 3):  # the acks=1 record above the high watermark was lost, as in Kafka
        assert partition0.values(cluster, node, "elr-crash") == [b"acknowledged"]


def test_a_running_node_cannot_lose_its_unsynced_data(cluster: KafkaCluster) -> None:
    with pytest.raises(NodeError, match="running"):
        cluster.node(1).nodes.lose_unsynced(1)
