"""Eligible leader replicas (KIP-966) in an in-process cluster, as a new Kafka 4.3 cluster has
them (eligible.leader.replicas.version 1): replicas leaving an ISR below min.insync.replicas
become ELR members, the ISR may empty, an ELR member is elected when it comes back, and an ISR
back at min.insync.replicas clears the ELR; Java 4.3's `Admin.describeTopics` (through
DescribeTopicPartitions) reads `elr()` and `lastKnownElr()`. With ELR enabled the cluster-level
min.insync.replicas is a dynamic default (DescribeConfigs), broker-level ones are refused, and
UpdateFeatures turns ELR off (clearing every ELR) and on again; a min.insync.replicas change clears
the ELR it applies to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from tests.clients.runner import run_ok
from tests.wire import WireClient

DYNAMIC_DEFAULT_BROKER_CONFIG = 3
ELR = "eligible.leader.replicas.version"


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(
        nodes=3, storage="memory", config={"replica.lag.time.max.ms": 500}
    ) as running:
        yield running


def partition(cluster: KafkaCluster, topic: str, via: int) -> dict[str, Any]:
    result = run_ok(
        "java-4.3",
        {"op": "describe_topics_elr", "bootstrap": cluster.address(via), "topics": [topic]},
    )
    [described] = result["topics"]
    [info] = described["partitions"]
    sets = {key: sorted(info[key]) for key in ("isr", "elr", "last_known_elr")}
    return {"leader": info["leader"], **sets}


def update_feature(cluster: KafkaCluster, level: int) -> None:
    upgrade_type = 1 if level else 2  # UPGRADE, SAFE_DOWNGRADE
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.UpdateFeatures,
            1,
            timeout_ms=5000,
            feature_updates=[
                {"feature": ELR, "max_version_level": level, "upgrade_type": upgrade_type}
            ],
            validate_only=False,
        )
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message


@pytest.mark.clients
def test_replicas_leaving_an_isr_below_min_isr_become_eligible_leaders(
    cluster: KafkaCluster,
) -> None:
    cluster.create_topic("elr", config={"min.insync.replicas": "2"}, assignments=[[1, 2, 3]])
    cluster.wait_in_sync("elr")
    assert partition(cluster, "elr", 1) == {
        "leader": 1,
        "isr": [1, 2, 3],
        "elr": [],
        "last_known_elr": [],
    }

    cluster.stop_node(3)  # the ISR stays at min.insync.replicas: no ELR
    assert partition(cluster, "elr", 1) == {
        "leader": 1,
        "isr": [1, 2],
        "elr": [],
        "last_known_elr": [],
    }
    cluster.stop_node(2)
    assert partition(cluster, "elr", 1) == {
        "leader": 1,
        "isr": [1],
        "elr": [2],
        "last_known_elr": [],
    }
    cluster.stop_node(1)  # the ISR empties into the ELR: no leader
    cluster.start_node(3)
    assert partition(cluster, "elr", 3) == {
        "leader": -1,
        "isr": [],
        "elr": [1, 2],
        "last_known_elr": [],
    }

    # Node 3 (out of both sets) stops again, so that it cannot catch up with the next leader
    # and join its ISR (which would clear the ELR) before the next look.
    cluster.stop_node(3)
    cluster.start_node(2)  # an ELR member comes back: elected, the ISR is itself
    assert partition(cluster, "elr", 2) == {
        "leader": 2,
        "isr": [2],
        "elr": [1],
        "last_known_elr": [],
    }
    cluster.start_node(1)
    cluster.start_node(3)
    cluster.wait_in_sync("elr")  # back at min.insync.replicas and more: the ELR is cleared
    assert partition(cluster, "elr", 1) == {
        "leader": 2,
        "isr": [1, 2, 3],
        "elr": [],
        "last_known_elr": [],
    }


def describe_min_isr(cluster: KafkaCluster, name: str) -> list[tuple[str, int]]:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.DescribeConfigs,
            4,
            resources=[
                {
                    "resource_type": 4,
                    "resource_name": name,
                    "configuration_keys": ["min.insync.replicas"],
                }
            ],
            include_synonyms=False,
            include_documentation=False,
        )
    [result] = response.results
    return [(config.value, config.config_source) for config in result.configs]


def alter_min_isr(cluster: KafkaCluster, name: str, op: int, value: str | None) -> Any:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.IncrementalAlterConfigs,
            1,
            resources=[
                {
                    "resource_type": 4,
                    "resource_name": name,
                    "configs": [
                        {"name": "min.insync.replicas", "config_operation": op, "value": value}
                    ],
                }
            ],
            validate_only=False,
        )
    [result] = response.responses
    return result


def test_the_cluster_level_min_isr_is_a_dynamic_default_while_elr_is_enabled(
    cluster: KafkaCluster,
) -> None:
    assert describe_min_isr(cluster, "") == [("1", DYNAMIC_DEFAULT_BROKER_CONFIG)]
    broker_level = alter_min_isr(cluster, "1", 0, "2")
    assert (broker_level.error_code, broker_level.error_message) == (
        ErrorCode.INVALID_CONFIG,
        "Broker-level min.insync.replicas cannot be altered while ELR is enabled.",
    )
    removed = alter_min_isr(cluster, "", 1, None)
    assert (removed.error_code, removed.error_message) == (
        ErrorCode.INVALID_CONFIG,
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
    )
    assert alter_min_isr(cluster, "", 0, "2").error_code == ErrorCode.NO_ERROR
    assert describe_min_isr(cluster, "") == [("2", DYNAMIC_DEFAULT_BROKER_CONFIG)]


def test_disabling_elr_clears_it_and_allows_broker_level_min_isr(cluster: KafkaCluster) -> None:
    cluster.create_topic("off", config={"min.insync.replicas": "3"}, assignments=[[1, 2, 3]])
    cluster.wait_in_sync("off")
    cluster.stop_node(3)
    assert cluster.elr("off", 0) == [3]
    update_feature(cluster, 0)
    assert cluster.elr("off", 0) == []
    assert alter_min_isr(cluster, "1", 0, "2").error_code == ErrorCode.NO_ERROR
    cluster.stop_node(2)  # without ELR the ISR shrinks as before, and no ELR is kept
    assert (cluster.isr("off", 0), cluster.elr("off", 0)) == ([1], [])
    update_feature(cluster, 1)  # enabling again removes the broker-level setting
    assert alter_min_isr(cluster, "1", 0, "2").error_code == ErrorCode.INVALID_CONFIG
    assert describe_min_isr(cluster, "1")[0][1] == DYNAMIC_DEFAULT_BROKER_CONFIG


def alter_topic_min_isr(cluster: KafkaCluster, topic: str, value: str) -> None:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.IncrementalAlterConfigs,
            1,
            resources=[
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [
                        {"name": "min.insync.replicas", "config_operation": 0, "value": value}
                    ],
                }
            ],
            validate_only=False,
        )
    assert response.responses[0].error_code == ErrorCode.NO_ERROR


def test_a_min_isr_change_clears_the_elr(cluster: KafkaCluster) -> None:
    for topic in ("kept", "changed"):
        cluster.create_topic(topic, config={"min.insync.replicas": "3"}, assignments=[[1, 2, 3]])
        cluster.wait_in_sync(topic)
    cluster.stop_node(3)
    assert (cluster.elr("kept", 0), cluster.elr("changed", 0)) == ([3], [3])
    alter_topic_min_isr(cluster, "changed", "2")  # Kafka's ClearElrRecord for the topic
    assert (cluster.elr("kept", 0), cluster.elr("changed", 0)) == ([3], [])
    assert alter_min_isr(cluster, "", 0, "2").error_code == ErrorCode.NO_ERROR  # every topic
    assert cluster.elr("kept", 0) == []
