"""Real clients streaming through a partition leader's loss: an acks=all idempotent producer
sends one record every 50 ms to an RF-3 topic while its leader stops (or is cut off from the
other nodes); the controller elects another ISR member and the producer carries on. Every
acknowledged record is then in every replica's log exactly once and in order, the old leader
included once it is back (it truncates to the new leader's log and catches up), and a consumer
reads them all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from minibroker.testing import KafkaCluster
from tests.clients.runner import run_ok
from tests.replication.jobs import (
    CLIENTS,
    CLUSTER_CONFIG,
    consume_job,
    consumed_values,
    numbered,
    produce_job,
    replica_values,
    topic_name,
    wait_until,
)

pytestmark = pytest.mark.clients
STREAM_RECORDS = 40
INTERVAL_MS = 50


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=CLUSTER_CONFIG) as running:
        yield running


def stream_through(
    cluster: KafkaCluster,
    client: str,
    topic: str,
    fault: Callable[[int], None],
    repair: Callable[[int], None],
) -> tuple[int, int]:
    """Stream STREAM_RECORDS records with `client`; `fault(leader)` once a quarter of them are
    stored, `repair(leader)` after the stream. (old leader, new leader)."""
    cluster.create_topic(topic, 1, replication_factor=3)
    cluster.wait_in_sync(topic)
    old_leader = cluster.leader(topic, 0)
    sent = numbered("stream", STREAM_RECORDS)
    job = produce_job(
        cluster.bootstrap_servers, topic, sent, idempotent=True, interval_ms=INTERVAL_MS
    )
    job["op"] = "produce_paced"
    with ThreadPoolExecutor(1) as pool:
        producing = pool.submit(run_ok, client, job)
        try:
            wait_until(
                lambda: cluster.high_watermark(topic, 0) >= STREAM_RECORDS // 4,
                "the first records",
            )
            assert not producing.done(), "inconclusive: the stream ended before the fault"
            fault(old_leader)
        finally:
            result = producing.result()
    new_leader = cluster.leader(topic, 0)
    assert [r["offset"] for r in result["results"]] == list(range(STREAM_RECORDS))
    assert new_leader not in (old_leader, -1)
    live = sorted(set(cluster.replicas(topic, 0)) - {old_leader})
    for node in live:
        assert replica_values(cluster, node, topic) == sent, f"node {node}"
    assert cluster.high_watermark(topic, 0) == STREAM_RECORDS
    consumed = run_ok(client, consume_job(cluster.bootstrap_servers, topic, STREAM_RECORDS))
    assert consumed_values(consumed) == sent

    repair(old_leader)
    cluster.wait_in_sync(topic)
    assert replica_values(cluster, old_leader, topic) == sent
    assert cluster.isr(topic, 0) == [1, 2, 3]
    return old_leader, new_leader


@pytest.mark.parametrize("client", CLIENTS)
def test_leader_stops_mid_stream(cluster: KafkaCluster, client: str) -> None:
    topic = topic_name("failover", client)
    _old_leader, new_leader = stream_through(
        cluster, client, topic, cluster.stop_node, cluster.start_node
    )
    assert cluster.leader(topic, 0) == new_leader  # a node coming back follows


@pytest.mark.parametrize("client", CLIENTS)
def test_isolated_leader_mid_stream(cluster: KafkaCluster, client: str) -> None:
    topic = topic_name("isolated", client)
    isolated: list[int] = []

    def isolate(leader: int) -> None:
        isr_before = cluster.isr(topic, 0)
        cluster.isolate_node(leader)
        isolated.append(leader)
        assert cluster.leader(topic, 0) in set(isr_before) - {leader}
        assert leader not in cluster.isr(topic, 0)

    old_leader, _new = stream_through(cluster, client, topic, isolate, cluster.reconnect_node)
    assert isolated == [old_leader]
