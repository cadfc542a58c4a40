"""Produce v12/v13 on the wire: topics by topic id (UNKNOWN_TOPIC_ID), leader discovery in
NOT_LEADER_OR_FOLLOWER answers (KIP-951), and the versions real clients use."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaBroker, KafkaCluster
from tests.clients.runner import run_ok
from tests.wire import WireClient

E = ErrorCode


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    with KafkaBroker(data_dir=tmp_path / "data") as running:
        running.create_topic("t", partitions=2)
        yield running


def topic_id(bootstrap: str, name: str) -> uuid.UUID:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Metadata,
            12,
            topics=[{"name": name, "topic_id": None}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    found = response.topics[0].topic_id
    assert isinstance(found, uuid.UUID) and found.int
    return found


def produce(bootstrap: str, version: int, topic: dict[str, Any], partition: int = 0) -> Any:
    batch = build_batch([(None, b"hello", [], int(time.time() * 1000))])
    with WireClient(bootstrap) as client:
        return client.call(
            ApiKey.Produce,
            version,
            transactional_id=None,
            acks=-1,
            timeout_ms=5000,
            topic_data=[{**topic, "partition_data": [{"index": partition, "records": batch}]}],
        )


def test_produce_v13_names_the_topic_by_id(broker: KafkaBroker) -> None:
    bootstrap = broker.bootstrap_servers
    known = topic_id(bootstrap, "t")
    response = produce(bootstrap, 13, {"topic_id": known}, partition=1)
    answered = response.responses[0]
    assert answered.topic_id == known
    assert [(p.index, p.error_code, p.base_offset) for p in answered.partition_responses] == [
        (1, E.NO_ERROR, 0)
    ]
    assert broker.values("t", partition=1) == [b"hello"]


def test_an_unknown_topic_id_gets_unknown_topic_id(broker: KafkaBroker) -> None:
    unknown = uuid.uuid4()
    response = produce(broker.bootstrap_servers, 13, {"topic_id": unknown})
    answered = response.responses[0]
    assert answered.topic_id == unknown
    assert answered.partition_responses[0].error_code == E.UNKNOWN_TOPIC_ID
    assert broker.end_offsets("t") == {0: 0, 1: 0}


def test_a_deleted_and_recreated_topic_has_a_new_id(broker: KafkaBroker) -> None:
    old = topic_id(broker.bootstrap_servers, "t")
    with WireClient(broker.bootstrap_servers) as client:
        deleted = client.call(ApiKey.DeleteTopics, 4, topic_names=["t"], timeout_ms=5000)
    assert deleted.responses[0].error_code == E.NO_ERROR
    broker.create_topic("t", partitions=1)
    answer = produce(broker.bootstrap_servers, 13, {"topic_id": old})
    assert answer.responses[0].partition_responses[0].error_code == E.UNKNOWN_TOPIC_ID
    fresh = topic_id(broker.bootstrap_servers, "t")
    assert fresh != old
    answer = produce(broker.bootstrap_servers, 13, {"topic_id": fresh})
    assert answer.responses[0].partition_responses[0].error_code == E.NO_ERROR


@pytest.mark.parametrize("version", [10, 12, 13])
def test_not_leader_answers_carry_the_leader_and_its_endpoint(tmp_path: Path, version: int) -> None:
    with KafkaCluster(nodes=3, data_dir=tmp_path / "data") as cluster:
        cluster.create_topic("t", partitions=1)
        leader = cluster.leader("t", 0)
        other = next(node for node in cluster.live_nodes if node != leader)
        topic = {"topic_id": topic_id(cluster.address(leader), "t")} if version >= 13 else {}
        response = produce(cluster.address(other), version, {"name": "t", **topic})
        answered = response.responses[0].partition_responses[0]
        assert answered.error_code == E.NOT_LEADER_OR_FOLLOWER
        epoch = cluster.node(leader).cluster.partition("t", 0).leader_epoch
        assert (answered.current_leader.leader_id, answered.current_leader.leader_epoch) == (
            leader,
            epoch,
        )
        host, port = cluster.address(leader).split(":")
        assert [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints] == [
            (leader, host, int(port), None)
        ]


def test_before_v10_a_not_leader_answer_has_no_leader(tmp_path: Path) -> None:
    with KafkaCluster(nodes=2, data_dir=tmp_path / "data") as cluster:
        cluster.create_topic("t", partitions=1)
        other = next(node for node in cluster.live_nodes if node != cluster.leader("t", 0))
        response = produce(cluster.address(other), 9, {"name": "t"})
        answered = response.responses[0].partition_responses[0]
        assert answered.error_code == E.NOT_LEADER_OR_FOLLOWER
        assert answered.current_leader is None or answered.current_leader.leader_id == -1
        assert not response.node_endpoints


@pytest.mark.clients
# librdkafka 2.16's newest Produce is v10 (KIP-951); Java 4.3's is v13 (topic ids).
@pytest.mark.parametrize(("client", "newest"), [("java-4.3", 13), ("confluent-kafka", 10)])
def test_real_clients_produce_at_their_newest_version(
    broker: KafkaBroker, client: str, newest: int
) -> None:
    broker.clear_requests()
    run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": broker.bootstrap_servers,
            "topic": "t",
            "records": [{"key": None, "value": "aGk=", "headers": [], "partition": 0}],
        },
    )
    assert broker.values("t", partition=0) == [b"hi"]
    assert {r.api_version for r in broker.requests(ApiKey.Produce)} == {newest}
