"""The group and transaction coordinators of an in-process cluster are the leaders of their
internal partitions, as in Kafka (`__consumer_offsets` and `__transaction_state` at RF 3 and
min ISR 2 here): FindCoordinator answers that leader, other nodes answer NOT_COORDINATOR, the
role moves with the partition's leadership, the new leader's state is what its own replica
holds, and writes wait for the ISR (COORDINATOR_NOT_AVAILABLE while it is under min ISR)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from tests.wire import WireClient

INTERNAL_PARTITIONS = 3
CONFIG = {
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": INTERNAL_PARTITIONS,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.num.partitions": INTERNAL_PARTITIONS,
    "transaction.state.log.min.isr": 2,
    "min.insync.replicas": 2,
    "replica.lag.time.max.ms": 500,
    "offsets.commit.timeout.ms": 1000,
}
OFFSETS = "__consumer_offsets"
TRANSACTIONS = "__transaction_state"
TOPIC = "orders"


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory", config=CONFIG) as running:
        running.create_topic(TOPIC, partitions=1, replication_factor=3)
        with WireClient(running.address(1)) as client:
            for key_type in (0, 1):  # the internal topics, created while 3 nodes are up
                client.call(ApiKey.FindCoordinator, 4, key_type=key_type, coordinator_keys=["x"])
        running.wait_in_sync()
        yield running


def _find(cluster: KafkaCluster, via: int, key: str, key_type: int = 0) -> tuple[int, int]:
    """(error, node id) that node `via` answers for `key`."""
    with WireClient(cluster.address(via)) as client:
        answer = client.call(ApiKey.FindCoordinator, 4, key_type=key_type, coordinator_keys=[key])
    return answer.coordinators[0].error_code, answer.coordinators[0].node_id


def _commit(cluster: KafkaCluster, node: int, group: str, offset: int) -> int:
    """A standalone commit (no member) of `offset` for orders-0; its error."""
    with WireClient(cluster.address(node)) as client:
        answer = client.call(
            ApiKey.OffsetCommit,
            8,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": offset}]}
            ],
        )
    return int(answer.topics[0].partitions[0].error_code)


def _committed(cluster: KafkaCluster, group: str) -> int | None:
    """orders-0's committed offset as a confluent-kafka consumer reads it."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        [found] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)
    finally:
        consumer.close()
    return None if found.offset < 0 else int(found.offset)


def _others(cluster: KafkaCluster, node: int) -> list[int]:
    return [other for other in cluster.node_ids if other != node]


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def test_find_coordinator_answers_the_leader_and_the_others_not_coordinator(
    cluster: KafkaCluster,
) -> None:
    group, transactional_id = "billing", "billing-tx"
    leader = cluster.leader(OFFSETS, partition_for(group, INTERNAL_PARTITIONS))
    txn_leader = cluster.leader(TRANSACTIONS, partition_for(transactional_id, INTERNAL_PARTITIONS))
    for via in cluster.node_ids:
        assert _find(cluster, via, group) == (ErrorCode.NO_ERROR, leader)
        assert _find(cluster, via, transactional_id, 1) == (ErrorCode.NO_ERROR, txn_leader)
    assert cluster.coordinator(group) == leader
    for other in _others(cluster, leader):
        assert _commit(cluster, other, group, 3) == ErrorCode.NOT_COORDINATOR
    assert _commit(cluster, leader, group, 3) == ErrorCode.NO_ERROR
    # moving the partition's leadership moves the coordinator, with the group's state
    new_leader = _others(cluster, leader)[0]
    cluster.move_leader(OFFSETS, partition_for(group, INTERNAL_PARTITIONS), new_leader)
    assert _find(cluster, leader, group) == (ErrorCode.NO_ERROR, new_leader)
    assert _commit(cluster, leader, group, 4) == ErrorCode.NOT_COORDINATOR
    assert cluster.committed_offsets(group) == {(TOPIC, 0): 3}
    assert _committed(cluster, group) == 3


def test_a_committed_offset_is_read_back_from_the_new_coordinator(cluster: KafkaCluster) -> None:
    from confluent_kafka import Consumer

    group = "readers"
    for index in range(5):
        cluster.produce(TOPIC, f"v{index}")
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    try:
        while seen < 5:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    old = cluster.coordinator(group)
    cluster.stop_node(old)
    try:
        new = cluster.coordinator(group)
        assert new in _others(cluster, old)
        assert _find(cluster, new, group) == (ErrorCode.NO_ERROR, new)
        assert _committed(cluster, group) == 5
    finally:
        cluster.start_node(old)


def test_commits_fail_while_the_isr_is_under_min_isr(cluster: KafkaCluster) -> None:
    group, transactional_id = "starved", "starved-tx"
    assert _commit(cluster, cluster.coordinator(group), group, 1) == ErrorCode.NO_ERROR
    offsets_partition = partition_for(group, INTERNAL_PARTITIONS)
    leader = cluster.leader(OFFSETS, offsets_partition)
    for node in _others(cluster, leader):
        cluster.stop_node(node)
    try:
        assert cluster.isr(OFFSETS, offsets_partition) == [leader]
        assert _commit(cluster, leader, group, 2) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        txn_leader = cluster.leader(TRANSACTIONS, partition_for(transactional_id, 3))
        with WireClient(cluster.address(txn_leader)) as client:
            init = client.call(
                ApiKey.InitProducerId,
                4,
                transactional_id=transactional_id,
                transaction_timeout_ms=60000,
                producer_id=-1,
                producer_epoch=-1,
            )
        assert init.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    finally:
        for node in _others(cluster, leader):
            cluster.start_node(node)
    cluster.wait_in_sync(OFFSETS)
    assert cluster.committed_offsets(group) == {(TOPIC, 0): 1}
    assert _commit(cluster, cluster.coordinator(group), group, 2) == ErrorCode.NO_ERROR


def test_a_commit_the_isr_did_not_get_times_out_and_the_new_leader_lacks_it() -> None:
    unclean = {**CONFIG, "unclean.leader.election.enable": "true"}
    with KafkaCluster(nodes=3, storage="memory", config=unclean) as cluster:
        cluster.create_topic(TOPIC, partitions=1, replication_factor=3)
        group = "unclean"
        coordinator = cluster.coordinator(group)
        cluster.wait_in_sync()
        assert _commit(cluster, coordinator, group, 5) == ErrorCode.NO_ERROR
        offsets_partition = partition_for(group, INTERNAL_PARTITIONS)
        followers = _others(cluster, coordinator)
        for node in followers:
            cluster.pause_replication(node, OFFSETS, offsets_partition)
        # appended by the leader alone: the ISR shrinks, the wait times out
        assert _commit(cluster, coordinator, group, 9) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert cluster.isr(OFFSETS, offsets_partition) == [coordinator]
        # not in the ISR: not seen, as Kafka's coordinators expose only committed state
        assert cluster.committed_offsets(group) == {(TOPIC, 0): 5}
        assert _committed(cluster, group) == 5
        for node in followers:
            cluster.resume_replication(node, OFFSETS, offsets_partition)
        cluster.stop_node(coordinator)
        try:
            # an unclean election: the new leader never had the commit of 9
            _until(lambda: cluster.coordinator(group) in followers, "no new coordinator")
            assert cluster.committed_offsets(group) == {(TOPIC, 0): 5}
            assert _committed(cluster, group) == 5
        finally:
            cluster.start_node(coordinator)


def _open_transaction(cluster: KafkaCluster, transactional_id: str, value: bytes) -> Any:
    """A confluent-kafka transactional producer with `value` sent to TOPIC in an open
    transaction."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TOPIC, value)
    assert producer.flush(30) == 0
    return producer


def test_a_transaction_commits_after_its_coordinator_stops(cluster: KafkaCluster) -> None:
    from confluent_kafka import Consumer

    transactional_id = "moving-tx"
    producer = _open_transaction(cluster, transactional_id, b"in-txn")
    txn_partition = partition_for(transactional_id, INTERNAL_PARTITIONS)
    cluster.wait_in_sync(TRANSACTIONS)
    old = cluster.leader(TRANSACTIONS, txn_partition)
    cluster.stop_node(old)
    try:
        assert cluster.leader(TRANSACTIONS, txn_partition) in _others(cluster, old)
        producer.commit_transaction(60)
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "txn-readers",
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe([TOPIC])
        try:
            message = None
            while message is None or message.error() is not None:
                message = consumer.poll(1.0)
            assert message.value() == b"in-txn"
        finally:
            consumer.close()
    finally:
        cluster.start_node(old)


def _transaction_state(cluster: KafkaCluster, transactional_id: str) -> str:
    node = cluster.leader(TRANSACTIONS, partition_for(transactional_id, INTERNAL_PARTITIONS))
    with WireClient(cluster.address(node)) as client:
        answer = client.call(ApiKey.DescribeTransactions, 0, transactional_ids=[transactional_id])
    return str(answer.transaction_states[0].transaction_state)


def test_transaction_markers_wait_for_the_isr(cluster: KafkaCluster) -> None:
    transactional_id = "marked-tx"
    producer = _open_transaction(cluster, transactional_id, b"marked")
    leader = cluster.leader(TOPIC, 0)
    followers = _others(cluster, leader)
    for node in followers:
        cluster.pause_replication(node, TOPIC, 0)
    try:
        cluster.produce(TOPIC, "behind", partition=0)  # the followers fall behind: out of the ISR
        _until(lambda: cluster.isr(TOPIC, 0) == [leader], "the ISR did not shrink")
        producer.commit_transaction(30)  # PrepareCommit is in the ISR of its partition
        # the marker is not written while the ISR of orders-0 is under min.insync.replicas
        assert _transaction_state(cluster, transactional_id) == "PrepareCommit"
        assert cluster.replica_end_offsets(TOPIC, 0)[leader] == 2  # no marker yet
    finally:
        for node in followers:
            cluster.resume_replication(node, TOPIC, 0)
    _until(
        lambda: _transaction_state(cluster, transactional_id) == "CompleteCommit",
        "the transaction did not complete",
    )
    cluster.wait_in_sync(TOPIC)
    for node in cluster.node_ids:
        assert [r.value for r in cluster.replica_records(node, TOPIC, 0)] == [b"marked", b"behind"]
    assert set(cluster.replica_end_offsets(TOPIC, 0).values()) == {3}  # the marker's on all
