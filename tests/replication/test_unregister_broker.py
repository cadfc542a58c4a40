"""UnregisterBroker (key 64) in an in-process cluster, with Java 4.3's `Admin.unregisterBroker`:
a stopped (fenced) node's registration goes (DescribeCluster and Metadata no longer list it,
its ISR memberships go), a node never known or unregistered already is BROKER_ID_NOT_REGISTERED,
a running node is unregistered too (as Kafka's controller does) and a node that starts again
registers again; without ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker, KafkaCluster
from tests.clients.runner import run_client, run_ok
from tests.wire import WireClient

pytestmark = pytest.mark.clients


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(
        nodes=3, storage="memory", config={"replica.lag.time.max.ms": 500}
    ) as running:
        yield running


def cluster_nodes(cluster: KafkaCluster) -> list[tuple[int, bool]]:
    result = run_ok("java-4.3", {"op": "describe_cluster_nodes", "bootstrap": cluster.address(1)})
    return [(node["id"], node["fenced"]) for node in result["nodes"]]


def metadata_brokers(cluster: KafkaCluster) -> list[int]:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.Metadata,
            12,
            topics=[],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    return sorted(broker.node_id for broker in response.brokers)


def unregister(cluster: KafkaCluster, broker_id: int) -> dict[str, Any]:
    job = {"op": "unregister_broker", "bootstrap": cluster.address(1), "broker_id": broker_id}
    return run_client("java-4.3", job)


def isr(cluster: KafkaCluster, topic: str) -> list[int]:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.Metadata,
            12,
            topics=[{"name": topic, "topic_id": None}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    return sorted(response.topics[0].partitions[0].isr_nodes)


def test_a_stopped_broker_is_unregistered_and_registers_again_when_it_starts(
    cluster: KafkaCluster,
) -> None:
    cluster.stop_node(3)
    assert cluster_nodes(cluster) == [(1, False), (2, False), (3, True)]

    assert unregister(cluster, 3)["ok"]

    assert cluster_nodes(cluster) == [(1, False), (2, False)]
    assert metadata_brokers(cluster) == [1, 2]
    again = unregister(cluster, 3)
    assert (again["ok"], again["error_name"]) == (False, "BROKER_ID_NOT_REGISTERED")
    cluster.start_node(3)
    assert cluster_nodes(cluster) == [(1, False), (2, False), (3, False)]
    assert metadata_brokers(cluster) == [1, 2, 3]


def test_an_unknown_broker_id_is_not_registered(cluster: KafkaCluster) -> None:
    result = unregister(cluster, 99)
    assert (result["ok"], result["error_name"]) == (False, "BROKER_ID_NOT_REGISTERED")
    assert cluster_nodes(cluster) == [(1, False), (2, False), (3, False)]


def test_a_running_broker_is_unregistered_and_leaves_the_isrs(cluster: KafkaCluster) -> None:
    cluster.create_topic("spread", assignments=[[2, 1, 3]])
    cluster.wait_in_sync("spread")
    assert isr(cluster, "spread") == [1, 2, 3]

    assert unregister(cluster, 2)["ok"]

    assert metadata_brokers(cluster) == [1, 3]
    assert cluster_nodes(cluster) == [(1, False), (3, False)]
    assert isr(cluster, "spread") == [1, 3]
    assert cluster.leader("spread", 0) != 2


def test_unregister_needs_alter_on_the_cluster() -> None:
    with (
        KafkaBroker(storage="memory", config=AUTHORIZER_CONFIG) as kafka,
        WireClient(kafka.bootstrap_servers) as client,
    ):
        response = client.call(ApiKey.UnregisterBroker, 0, broker_id=1)
    assert (response.error_code, response.error_message) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        None,
    )
