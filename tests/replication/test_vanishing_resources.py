"""Delayed operations whose resources vanish while they wait, over the wire on in-process
clusters, answered with Kafka's error and the connection kept: acks=all produce (topic
deleted, leader moved, a lagging follower's node stopped), long-poll Fetch and ShareFetch
(topic deleted), transaction markers (topic deleted before the commit), a join waiting in a
rebalance (DeleteGroups refused while it waits)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaBroker, KafkaCluster
from tests.wire import WireClient

WAIT_MS = 20_000  # far past every answer expected here: an answer shows it was not a timeout


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        yield running


_names = iter(range(1_000_000))


def stalled_topic(cluster: KafkaCluster, paused: int = 2) -> tuple[str, int, list[int]]:
    """A replicated topic whose acks=all appends wait: `paused` followers stop copying. The
    topic, its leader, the paused followers."""
    topic = f"vanishing-{next(_names)}"
    cluster.create_topic(topic, replication_factor=3)
    leader = cluster.leader(topic, 0)
    followers = [node for node in cluster.node_ids if node != leader][:paused]
    for follower in followers:
        cluster.pause_replication(follower, topic)
    return topic, leader, followers


def send_produce(client: WireClient, topic: str) -> None:
    batch = build_batch([(None, b"waits", (), int(time.time() * 1000))])
    client.send(
        ApiKey.Produce,
        9,
        transactional_id=None,
        acks=-1,
        timeout_ms=WAIT_MS,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    )


def produce_answer(client: WireClient) -> tuple[int, float]:
    """The waiting produce's partition error, and the seconds it took to come."""
    started = time.monotonic()
    response = client.recv(ApiKey.Produce, 9)[1]
    return response.responses[0].partition_responses[0].error_code, time.monotonic() - started


def still_served(client: WireClient) -> bool:
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return bool(metadata.brokers)


def delete_topic(bootstrap: str, topic: str) -> None:
    with WireClient(bootstrap) as admin:
        answer = admin.call(ApiKey.DeleteTopics, 4, topic_names=[topic], timeout_ms=5000)
    assert answer.responses[0].error_code == ErrorCode.NO_ERROR


def until_waiting(cluster: KafkaCluster, topic: str, leader: int) -> None:
    """Until the leader holds the append the followers have not copied."""
    deadline = time.monotonic() + 10
    while cluster.replica_end_offsets(topic, 0)[leader] < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_acks_all_produce_waiting_on_a_deleted_topic(cluster: KafkaCluster) -> None:
    topic, leader, _ = stalled_topic(cluster)
    with WireClient(cluster.address(leader), timeout=30) as client:
        send_produce(client, topic)
        until_waiting(cluster, topic, leader)
        delete_topic(cluster.address(leader), topic)
        error, waited = produce_answer(client)
        assert error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert waited < WAIT_MS / 1000 / 2
        assert still_served(client)


def test_acks_all_produce_waiting_when_the_leader_moves(cluster: KafkaCluster) -> None:
    topic, leader, _ = stalled_topic(cluster)
    other = next(node for node in cluster.node_ids if node != leader)
    with WireClient(cluster.address(leader), timeout=30) as client:
        send_produce(client, topic)
        until_waiting(cluster, topic, leader)
        cluster.move_leader(topic, 0, other)
        error, waited = produce_answer(client)
        assert error == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert waited < WAIT_MS / 1000 / 2
        assert still_served(client)


def test_acks_all_produce_waiting_when_a_lagging_followers_node_stops() -> None:
    """The stopped node leaves the ISR; the other follower has the append: it is answered."""
    with KafkaCluster(nodes=3, storage="memory") as running:
        topic, leader, [lagging] = stalled_topic(running, paused=1)
        with WireClient(running.address(leader), timeout=30) as client:
            send_produce(client, topic)
            until_waiting(running, topic, leader)
            running.stop_node(lagging)
            error, waited = produce_answer(client)
            assert error == ErrorCode.NO_ERROR
            assert waited < WAIT_MS / 1000 / 2
            assert still_served(client)
            assert lagging not in running.isr(topic, 0)


def topic_id(client: WireClient, topic: str) -> uuid.UUID:
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": topic, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return uuid.UUID(str(metadata.topics[0].topic_id))


@pytest.fixture
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        yield running


def test_long_poll_fetch_on_a_deleted_topic(broker: KafkaBroker) -> None:
    broker.create_topic("polled")
    with WireClient(broker.bootstrap_servers, timeout=30) as client:
        tid = topic_id(client, "polled")
        client.send(
            ApiKey.Fetch,
            13,
            replica_id=-1,
            max_wait_ms=WAIT_MS,
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic_id": tid,
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": 0,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": 1 << 20,
                        }
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        time.sleep(0.2)  # the fetch is waiting
        started = time.monotonic()
        delete_topic(broker.bootstrap_servers, "polled")
        response = client.recv(ApiKey.Fetch, 13)[1]
        assert time.monotonic() - started < WAIT_MS / 1000 / 2
        # Kafka's delayed fetch, completed when the partition goes, reads it: gone.
        partition = response.responses[0].partitions[0]
        assert partition.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert still_served(client)


def test_long_poll_share_fetch_on_a_deleted_topic(broker: KafkaBroker) -> None:
    broker.create_topic("shared")
    with WireClient(broker.bootstrap_servers, timeout=30) as client:
        tid = topic_id(client, "shared")
        fields: dict[str, Any] = {
            "group_id": "g",
            "member_id": "m1",
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 10,
            "batch_size": 10,
            "forgotten_topics_data": [],
        }
        topics = [{"topic_id": tid, "partitions": [{"partition_index": 0}]}]
        opened = client.call(
            ApiKey.ShareFetch, 1, share_session_epoch=0, max_wait_ms=0, topics=topics, **fields
        )
        assert opened.error_code == ErrorCode.NO_ERROR
        client.send(
            ApiKey.ShareFetch, 1, share_session_epoch=1, max_wait_ms=WAIT_MS, topics=[], **fields
        )
        time.sleep(0.2)
        started = time.monotonic()
        delete_topic(broker.bootstrap_servers, "shared")
        response = client.recv(ApiKey.ShareFetch, 1)[1]
        assert time.monotonic() - started < WAIT_MS / 1000 / 2
        assert response.error_code == ErrorCode.NO_ERROR
        errors = [p.error_code for t in response.responses for p in t.partitions]
        assert errors == [ErrorCode.UNKNOWN_TOPIC_ID]
        assert still_served(client)


def test_a_commit_after_one_of_its_topics_is_deleted(broker: KafkaBroker) -> None:
    """The marker for the deleted topic's partition is UNKNOWN_TOPIC_OR_PARTITION (Kafka's
    coordinator stops retrying it); the commit completes for the other topic."""
    for topic in ("kept", "dropped"):
        broker.create_topic(topic)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "vanishing-txn"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    for topic in ("kept", "dropped"):
        producer.produce(topic, b"in-txn")
    producer.flush(10)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.delete_topics(["dropped"])["dropped"].result(10)
    producer.commit_transaction(10)
    producer.begin_transaction()  # the producer goes on
    producer.produce("kept", b"next")
    producer.commit_transaction(10)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "vanishing-reader",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(["kept"])
    values = []
    deadline = time.monotonic() + 20
    while len(values) < 2 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"in-txn", b"next"]


def join(client: WireClient, member_id: str) -> None:
    client.send(
        ApiKey.JoinGroup,
        5,
        group_id="joined",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
    )


def test_delete_groups_while_a_join_waits_is_refused_and_the_join_completes() -> None:
    """A first join waits out `group.initial.rebalance.delay.ms`; meanwhile DeleteGroups
    answers NON_EMPTY_GROUP (as Kafka: the group is rebalancing), and the join is answered."""
    config = {"group.initial.rebalance.delay.ms": 1000}
    with (
        KafkaBroker(storage="memory", config=config) as running,
        WireClient(running.bootstrap_servers, timeout=30) as client,
    ):
        join(client, "")
        member_id = client.recv(ApiKey.JoinGroup, 5)[1].member_id  # MEMBER_ID_REQUIRED
        join(client, member_id)
        time.sleep(0.2)
        with WireClient(running.bootstrap_servers) as admin:
            deleted = admin.call(ApiKey.DeleteGroups, 2, groups_names=["joined"])
        assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
        joined = client.recv(ApiKey.JoinGroup, 5)[1]
        assert (joined.error_code, joined.member_id) == (ErrorCode.NO_ERROR, member_id)
        assert still_served(client)
