"""Leader elections and partition reassignments asked for by real admin clients (Java 4.3's
Admin, kafka-python 3's KafkaAdminClient, confluent-kafka's AdminClient) of a 4-node cluster.

A reassignment of an RF-3 partition to other nodes adds the new replicas, which catch up as
followers while a producer keeps writing with acks=all; once every target replica is in the
ISR the removed replicas are gone and the leader moved if it was removed: every target replica
then holds every acknowledged record, and a consumer reads them all. Until then
ListPartitionReassignments shows the reassignment (here held open by cutting the new replica's
node off), and cancelling it reverts to the original replicas. A preferred election moves
leadership back to the first replica after a `move_leader`; an unclean one brings a partition
without a leader back on a live replica.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import ElectionType, KafkaError
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)

from minibroker.cluster.state import TopicError
from minibroker.testing import AUTHORIZER_CONFIG, ApiKey, ErrorCode, KafkaBroker, KafkaCluster
from tests.clients.runner import run_ok
from tests.replication.jobs import (
    consume_job,
    consumed_values,
    numbered,
    produce_job,
    replica_values,
    wait_until,
)
from tests.wire import WireClient

pytestmark = pytest.mark.clients
CLUSTER_CONFIG = {"replica.lag.time.max.ms": 2000}
STREAM_RECORDS = 160  # 8 s at 50 ms: the reassignment completes mid-stream
INTERVAL_MS = 50
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=4, storage="memory", config=CLUSTER_CONFIG) as running:
        yield running


@pytest.fixture
def admin(cluster: KafkaCluster) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    yield client
    client.close()


def replicated_topic(cluster: KafkaCluster, name: str, replicas: list[int]) -> str:
    cluster.create_topic(name, 1, replication_factor=len(replicas), assignments=[replicas])
    cluster.wait_in_sync(name)
    return name


def job(cluster: KafkaCluster, op: str, **fields: Any) -> dict[str, Any]:
    return {"op": op, "bootstrap": cluster.bootstrap_servers, "timeout_ms": 30_000, **fields}


def wait_for_replicas(cluster: KafkaCluster, topic: str, replicas: list[int]) -> None:
    wait_until(lambda: cluster.replicas(topic, 0) == replicas, f"{topic} on {replicas}")


# ---- reassignments -----------------------------------------------------------------------


@pytest.mark.uses_client("java-4.3")
def test_java_reassignment_moves_the_data_while_a_producer_writes(cluster: KafkaCluster) -> None:
    topic = replicated_topic(cluster, "moved-java", [1, 2, 3])
    sent = numbered("m", STREAM_RECORDS)
    stream = produce_job(
        cluster.bootstrap_servers, topic, sent, idempotent=True, interval_ms=INTERVAL_MS
    )
    stream["op"] = "produce_paced"
    cluster.isolate_node(4)  # the new replica waits for its node: the reassignment stays open
    with ThreadPoolExecutor(1) as pool:
        producing = pool.submit(run_ok, "java-4.3", stream)
        try:
            wait_until(lambda: cluster.high_watermark(topic, 0) >= 10, "the first records")
            move = [{"topic": topic, "partition": 0, "replicas": [4, 2, 3]}]
            altered = run_ok("java-4.3", job(cluster, "alter_reassignments", reassignments=move))
            assert [(p["partition"], p["error"]) for p in altered["partitions"]] == [(0, None)]
            listed = run_ok("java-4.3", job(cluster, "list_reassignments", partitions=None))
            ongoing = [r for r in listed["reassignments"] if r["topic"] == topic]
            assert ongoing == [
                {
                    "topic": topic,
                    "partition": 0,
                    "replicas": [4, 2, 3, 1],
                    "adding": [4],
                    "removing": [1],
                }
            ]
            assert cluster.leader(topic, 0) == 1
        finally:
            cluster.reconnect_node(4)
        wait_for_replicas(cluster, topic, [4, 2, 3])
        moved_at = cluster.high_watermark(topic, 0)
        result = producing.result()
    assert moved_at < STREAM_RECORDS, "inconclusive: the stream ended before the move"
    assert [r["offset"] for r in result["results"]] == list(range(STREAM_RECORDS))
    assert cluster.leader(topic, 0) == 4  # the removed leader's successor: the target's first
    cluster.wait_in_sync(topic)
    for node in (4, 2, 3):
        assert replica_values(cluster, node, topic) == sent, f"node {node}"
    with pytest.raises(TopicError):
        cluster.replica_records(1, topic, 0)
    consumed = run_ok("java-4.3", consume_job(cluster.bootstrap_servers, topic, STREAM_RECORDS))
    assert consumed_values(consumed) == sent
    listed = run_ok("java-4.3", job(cluster, "list_reassignments", partitions=None))
    assert [r for r in listed["reassignments"] if r["topic"] == topic] == []


def _produce_in_background(
    cluster: KafkaCluster, topic: str, values: list[bytes], stop: threading.Event
) -> list[Any]:
    """kafka-python, acks=all: each value once the previous is acknowledged, until `stop`."""
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=20, linger_ms=0
    )
    acknowledged = []
    for value in values:
        if stop.is_set():
            break
        acknowledged.append(producer.send(topic, value, partition=0).get(timeout=TIMEOUT_S))
        stop.wait(INTERVAL_MS / 1000)
    producer.close()
    return acknowledged


def _consume(cluster: KafkaCluster, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
    )
    consumer.assign([TopicPartition(topic, 0)])
    seen: list[bytes] = []
    while len(seen) < count:
        for batch in consumer.poll(timeout_ms=1000).values():
            seen.extend(record.value for record in batch)
    consumer.close()
    return seen


def test_kafka_python_reassignment_under_load(
    cluster: KafkaCluster, admin: KafkaAdminClient
) -> None:
    topic = replicated_topic(cluster, "moved-kafka-python", [1, 2, 3])
    values = numbered("k", STREAM_RECORDS)
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        producing = pool.submit(_produce_in_background, cluster, topic, values, stop)
        wait_until(lambda: cluster.high_watermark(topic, 0) >= 10, "the first records")
        assert admin.alter_partition_reassignments({TopicPartition(topic, 0): [2, 4, 3]}) == {
            TopicPartition(topic, 0): None
        }
        wait_for_replicas(cluster, topic, [2, 4, 3])
        moved_at = cluster.high_watermark(topic, 0)
        wait_until(lambda: cluster.high_watermark(topic, 0) >= moved_at + 10, "later records")
        stop.set()
        acknowledged = producing.result()
    assert [metadata.offset for metadata in acknowledged] == list(range(len(acknowledged)))
    sent = values[: len(acknowledged)]
    assert cluster.leader(topic, 0) == 2
    cluster.wait_in_sync(topic)
    for node in (2, 4, 3):
        assert replica_values(cluster, node, topic) == sent, f"node {node}"
    with pytest.raises(TopicError):
        cluster.replica_records(1, topic, 0)
    assert _consume(cluster, topic, len(sent)) == sent
    assert admin.list_partition_reassignments({topic: [0]}) == {}


def test_kafka_python_lists_and_cancels_a_reassignment(
    cluster: KafkaCluster, admin: KafkaAdminClient
) -> None:
    topic = replicated_topic(cluster, "cancelled", [1, 2, 3])
    for value in numbered("c", 5):
        cluster.produce(topic, value, partition=0)
    partition = TopicPartition(topic, 0)
    cluster.isolate_node(4)
    try:
        assert admin.alter_partition_reassignments({partition: [1, 2, 4]}) == {partition: None}
        assert admin.list_partition_reassignments([partition]) == {
            partition: {"replicas": [1, 2, 4, 3], "adding_replicas": [4], "removing_replicas": [3]}
        }
        assert cluster.replicas(topic, 0) == [1, 2, 4, 3]
        assert admin.alter_partition_reassignments({partition: None}) == {partition: None}
        assert admin.list_partition_reassignments([partition]) == {}
        assert admin.alter_partition_reassignments({partition: None}) == {
            partition: NoReassignmentInProgressError
        }
    finally:
        cluster.reconnect_node(4)
    assert cluster.replicas(topic, 0) == [1, 2, 3]
    assert cluster.leader(topic, 0) == 1
    with pytest.raises(TopicError):
        cluster.replica_records(4, topic, 0)
    cluster.wait_in_sync(topic)
    assert replica_values(cluster, 3, topic) == numbered("c", 5)


def test_a_reorder_or_a_shrink_completes_at_once(
    cluster: KafkaCluster, admin: KafkaAdminClient
) -> None:
    topic = replicated_topic(cluster, "reordered", [1, 2, 3])
    partition = TopicPartition(topic, 0)
    admin.alter_partition_reassignments({partition: [3, 1, 2]})
    assert cluster.replicas(topic, 0) == [3, 1, 2]
    assert cluster.leader(topic, 0) == 1  # a reorder leaves the leader where it is
    admin.alter_partition_reassignments({partition: [3, 2]})
    assert (cluster.replicas(topic, 0), cluster.isr(topic, 0)) == ([3, 2], [2, 3])
    assert cluster.leader(topic, 0) == 3
    assert admin.list_partition_reassignments([partition]) == {}


def test_refused_reassignments(cluster: KafkaCluster, admin: KafkaAdminClient) -> None:
    topic = replicated_topic(cluster, "refused", [1, 2, 3])
    cluster.create_topic("single", 1)  # one replica: one log shared by the nodes
    refusals = admin.alter_partition_reassignments(
        {
            TopicPartition(topic, 0): [1, 1, 2],
            TopicPartition(topic, 1): [1, 2, 3],
            TopicPartition("unknown", 0): [1],
            TopicPartition("single", 0): [1, 2],
        }
    )
    assert refusals == {
        TopicPartition(topic, 0): InvalidReplicationAssignmentError,
        TopicPartition(topic, 1): UnknownTopicOrPartitionError,
        TopicPartition("unknown", 0): UnknownTopicOrPartitionError,
        TopicPartition("single", 0): InvalidReplicationAssignmentError,
    }
    assert admin.alter_partition_reassignments({TopicPartition(topic, 0): [1, 2, 9]}) == {
        TopicPartition(topic, 0): InvalidReplicationAssignmentError
    }
    assert admin.alter_partition_reassignments({TopicPartition("single", 0): [3]}) == {
        TopicPartition("single", 0): None
    }
    assert cluster.leader("single", 0) == 3
    assert cluster.replicas(topic, 0) == [1, 2, 3]


# ---- elections ---------------------------------------------------------------------------


def test_java_preferred_election_after_a_moved_leader(cluster: KafkaCluster) -> None:
    topic = replicated_topic(cluster, "preferred-java", [2, 3, 4])
    cluster.move_leader(topic, 0, 4)
    wanted = [{"topic": topic, "partition": 0}]
    elected = run_ok(
        "java-4.3", job(cluster, "elect_leaders", election="preferred", partitions=wanted)
    )
    assert [(p["topic"], p["error"]) for p in elected["partitions"]] == [(topic, None)]
    assert cluster.leader(topic, 0) == 2
    again = run_ok(
        "java-4.3", job(cluster, "elect_leaders", election="preferred", partitions=wanted)
    )
    assert [p["error_name"] for p in again["partitions"]] == ["ELECTION_NOT_NEEDED"]

    cluster.move_leader(topic, 0, 3)
    everywhere = run_ok(
        "java-4.3", job(cluster, "elect_leaders", election="preferred", partitions=None)
    )
    assert {"topic": topic, "partition": 0, "error": None, "error_name": None} in everywhere[
        "partitions"
    ]
    assert cluster.leader(topic, 0) == 2


def test_confluent_preferred_and_unclean_elections(cluster: KafkaCluster) -> None:
    topic = replicated_topic(cluster, "elected-confluent", [3, 4])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    partition = ConfluentPartition(topic, 0)

    def elect(election: ElectionType) -> KafkaError | None:
        outcome = admin.elect_leaders(election, [partition]).result(TIMEOUT_S)
        return next(iter(outcome.values()))

    cluster.move_leader(topic, 0, 4)
    assert elect(ElectionType.PREFERRED) is None
    assert cluster.leader(topic, 0) == 3
    not_needed = elect(ElectionType.UNCLEAN)  # it has a leader
    assert not_needed is not None
    assert not_needed.code() == ErrorCode.ELECTION_NOT_NEEDED

    cluster.pause_replication(4, topic)
    cluster.produce(topic, "only-on-3", partition=0)
    wait_until(lambda: cluster.isr(topic, 0) == [3], "the follower leaving the ISR")
    cluster.isolate_node(3)
    try:
        assert cluster.leader(topic, 0) == -1  # no live ISR member, unclean elections off
        cluster.resume_replication(4, topic)
        assert elect(ElectionType.UNCLEAN) is None
        assert (cluster.leader(topic, 0), cluster.isr(topic, 0)) == (4, [4])
        unavailable = elect(ElectionType.PREFERRED)  # 3 is cut off, 4 leads
        assert unavailable is not None
        assert unavailable.code() == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    finally:
        cluster.reconnect_node(3)
    cluster.wait_in_sync(topic)
    assert elect(ElectionType.PREFERRED) is None
    assert cluster.leader(topic, 0) == 3


def test_kafka_python_elections_of_single_replica_and_unknown_partitions(
    cluster: KafkaCluster, admin: KafkaAdminClient
) -> None:
    cluster.create_topic("single-elected", 2)
    response = admin.elect_leaders(
        0, {"single-elected": [0, 1, 7], "no-such-topic": [0]}, raise_errors=False
    )
    results = {
        (topic.topic, p.partition_id): (p.error_code, p.error_message)
        for topic in response.replica_election_results
        for p in topic.partition_result
    }
    not_needed = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    assert results == {
        ("single-elected", 0): not_needed,
        ("single-elected", 1): not_needed,
        ("single-elected", 7): (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "No such partition as single-elected-7",
        ),
        ("no-such-topic", 0): (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "No such topic as no-such-topic",
        ),
    }


# ---- authorization -----------------------------------------------------------------------


def test_the_three_apis_need_the_cluster_permission() -> None:
    with (
        KafkaBroker(config=AUTHORIZER_CONFIG) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        denied = "Request {} from User:ANONYMOUS is not authorized."
        topics = [{"topic": "t", "partitions": [0, 1]}]
        elect = client.call(
            ApiKey.ElectLeaders, 2, election_type=0, topic_partitions=topics, timeout_ms=1000
        )
        assert elect.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert [
            (p.partition_id, p.error_code, p.error_message)
            for t in elect.replica_election_results
            for p in t.partition_result
        ] == [
            (0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied.format("ElectLeaders")),
            (1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied.format("ElectLeaders")),
        ]
        reassign = [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}]
        alter = client.call(ApiKey.AlterPartitionReassignments, 1, timeout_ms=1000, topics=reassign)
        assert (alter.error_code, alter.error_message) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            denied.format("AlterPartitionReassignments"),
        )
        assert [p.error_code for p in alter.responses[0].partitions] == [
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        ]
        listed = client.call(ApiKey.ListPartitionReassignments, 0, timeout_ms=1000, topics=None)
        assert (listed.error_code, listed.error_message) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            denied.format("ListPartitionReassignments"),
        )

        broker.add_acl("User:ANONYMOUS", "ALTER", cluster=True)
        broker.add_acl("User:ANONYMOUS", "DESCRIBE", cluster=True)
        elect = client.call(
            ApiKey.ElectLeaders, 2, election_type=0, topic_partitions=topics, timeout_ms=1000
        )
        assert elect.error_code == ErrorCode.NO_ERROR
        assert {p.error_code for p in elect.replica_election_results[0].partition_result} == {
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        }
        alter = client.call(ApiKey.AlterPartitionReassignments, 1, timeout_ms=1000, topics=reassign)
        assert alter.error_code == ErrorCode.NO_ERROR
        assert alter.responses[0].partitions[0].error_message == "Unable to find a topic named t."
        listed = client.call(ApiKey.ListPartitionReassignments, 0, timeout_ms=1000, topics=None)
        assert (listed.error_code, listed.topics) == (ErrorCode.NO_ERROR, [])
