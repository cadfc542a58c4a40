"""Group administration through real admin clients: kafka-python 3's KafkaAdminClient and
confluent-kafka's AdminClient (list, describe, delete groups; list, alter, delete offsets)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic as RdNewTopic
from kafka import KafkaAdminClient, OffsetAndMetadata, TopicPartition
from kafka.admin import NewTopic

pytestmark = pytest.mark.clients
TIMEOUT_S = 15.0


@pytest.fixture
def active_consumer(group_bootstrap: str) -> Iterator[Consumer]:
    """A confluent-kafka consumer of topic "t" in group "active", once it has partitions."""
    admin = AdminClient({"bootstrap.servers": group_bootstrap})
    admin.create_topics([RdNewTopic("t", 2, 1)])["t"].result(TIMEOUT_S)
    consumer = Consumer(
        {
            "bootstrap.servers": group_bootstrap,
            "group.id": "active",
            "session.timeout.ms": 6000,
            "client.id": "active-client",
        }
    )
    consumer.subscribe(["t"])
    deadline = time.monotonic() + TIMEOUT_S
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer got no partitions"
        consumer.poll(0.05)
    yield consumer
    consumer.close()


@pytest.fixture
def kp_admin(group_bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=group_bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


def test_kafka_python_group_offsets_and_groups(
    kp_admin: KafkaAdminClient, active_consumer: Consumer
) -> None:
    kp_admin.create_topics([NewTopic("u", 2, 1)])
    altered = kp_admin.alter_group_offsets(
        "offline",
        {
            TopicPartition("u", 0): OffsetAndMetadata(5, "note", -1),
            TopicPartition("u", 1): OffsetAndMetadata(7, "", -1),
        },
    )
    assert all(error.errno == 0 for error in altered.values())
    offsets = kp_admin.list_group_offsets({"offline": None})["offline"]
    assert {tp.partition: (o.offset, o.metadata) for tp, o in offsets.items()} == {
        0: (5, "note"),
        1: (7, ""),
    }
    groups = {g["group_id"]: g for g in kp_admin.list_groups()}
    assert groups["offline"]["group_state"] == "Empty"
    assert (groups["active"]["group_state"], groups["active"]["protocol_type"]) == (
        "Stable",
        "consumer",
    )
    described = kp_admin.describe_groups(["active"])["active"]
    assert described["group_state"] == "Stable"
    assert [m["client_id"] for m in described["members"]] == ["active-client"]

    deleted = kp_admin.delete_group_offsets("offline", [TopicPartition("u", 0)])
    assert [error.errno for error in deleted.values()] == [0]
    remaining = kp_admin.list_group_offsets({"offline": None})["offline"]
    assert [tp.partition for tp in remaining] == [1]

    results = kp_admin.delete_groups(["offline", "active", "nope"])
    assert results == {
        "offline": "OK",
        "active": "NonEmptyGroupError",
        "nope": "GroupIdNotFoundError",
    }
    assert {g["group_id"] for g in kp_admin.list_groups()} == {"active"}


def test_confluent_group_offsets_and_groups(
    group_bootstrap: str, active_consumer: Consumer
) -> None:
    admin = AdminClient({"bootstrap.servers": group_bootstrap})
    request = ConsumerGroupTopicPartitions(
        "offline", [RdTopicPartition("t", 0, 5), RdTopicPartition("t", 1, 7)]
    )
    altered = admin.alter_consumer_group_offsets([request])["offline"].result(TIMEOUT_S)
    assert [(p.partition, p.offset, p.error) for p in altered.topic_partitions] == [
        (0, 5, None),
        (1, 7, None),
    ]
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("offline")])
    offsets = listed["offline"].result(TIMEOUT_S).topic_partitions
    assert sorted((p.partition, p.offset) for p in offsets) == [(0, 5), (1, 7)]

    groups = admin.list_consumer_groups().result(TIMEOUT_S)
    assert {g.group_id for g in groups.valid} == {"offline", "active"}
    described = admin.describe_consumer_groups(["active"])["active"].result(TIMEOUT_S)
    assert str(described.state) == "ConsumerGroupState.STABLE"
    assert described.partition_assignor == "range"
    [member] = described.members
    assert member.client_id == "active-client"
    assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]

    futures = admin.delete_consumer_groups(["offline", "active"])
    assert futures["offline"].result(TIMEOUT_S) is None
    with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
        futures["active"].result(TIMEOUT_S)
