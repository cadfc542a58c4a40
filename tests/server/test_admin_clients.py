"""Topic and config administration through real admin clients: kafka-python 3's
KafkaAdminClient and confluent-kafka's (librdkafka) AdminClient."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry
from confluent_kafka.admin._config import ConfigResource as RdConfigResource
from confluent_kafka.admin._resource import ResourceType as RdResourceType
from confluent_kafka.cimpl import NewPartitions as RdNewPartitions
from confluent_kafka.cimpl import NewTopic as RdNewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    AlterConfigOp,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

from minibroker.config import ConfigSource
from minibroker.testing.threaded import ThreadedBroker

pytestmark = pytest.mark.clients
TIMEOUT_S = 15.0


# -- kafka-python 3 ----------------------------------------------------------------------------


@pytest.fixture
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    yield client
    client.close()


def kp_produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, value=b"m%d" % i, partition=partition)
    producer.flush(TIMEOUT_S)
    producer.close()


def test_kafka_python_creates_and_deletes_topics(admin: KafkaAdminClient) -> None:
    created = admin.create_topics(
        [NewTopic("kp-a", 2, 1, topic_configs={"retention.ms": "100000"}), NewTopic("kp-b", 1, 1)]
    )
    results = {topic["name"]: topic for topic in created["topics"]}
    assert results["kp-a"]["num_partitions"] == 2
    assert results["kp-a"]["configs"]["retention.ms"]["value"] == "100000"
    assert set(admin.list_topics()) >= {"kp-a", "kp-b"}
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("kp-a", 2, 1)])
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topics([NewTopic("kp-c", 1, 3)])
    deleted = admin.delete_topics(["kp-a", "kp-b"])
    assert [topic["error_code"] for topic in deleted["topics"]] == [0, 0]
    assert not {"kp-a", "kp-b"} & set(admin.list_topics())


def test_kafka_python_adds_partitions(admin: KafkaAdminClient, bootstrap: str) -> None:
    admin.create_topics([NewTopic("kp-grow", 1, 1)])
    admin.create_partitions({"kp-grow": NewPartitions(3)})
    kp_produce(bootstrap, "kp-grow", 2, 1)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    assert consumer.partitions_for_topic("kp-grow") == {0, 1, 2}
    assert consumer.end_offsets([TopicPartition("kp-grow", 2)]) == {TopicPartition("kp-grow", 2): 1}
    consumer.close()


def test_kafka_python_describes_and_alters_configs(admin: KafkaAdminClient) -> None:
    admin.create_topics([NewTopic("kp-conf", 1, 1, topic_configs={"retention.ms": "100000"})])
    topic = ConfigResource(ConfigResourceType.TOPIC, "kp-conf")
    described = admin.describe_configs([topic], include_synonyms=True, config_filter="all")
    configs = described["topic"]["kp-conf"]
    assert configs["retention.ms"]["value"] == "100000"
    assert configs["segment.bytes"]["config_source"] == ConfigSource.DEFAULT_CONFIG.name
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC,
                "kp-conf",
                configs={
                    "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
                    "retention.ms": (AlterConfigOp.DELETE, None),
                },
            )
        ]
    )
    modified = admin.describe_configs([topic])["topic"]["kp-conf"]
    assert {name: entry["value"] for name, entry in modified.items()} == {
        "cleanup.policy": "delete,compact"
    }
    broker = ConfigResource(ConfigResourceType.BROKER, "1")
    broker_configs = admin.describe_configs([broker], config_filter="all")["broker"]["1"]
    assert broker_configs["num.partitions"]["value"] == "1"
    assert broker_configs["num.partitions"]["read_only"]


def test_kafka_python_deletes_records_then_consumes_from_the_new_start(
    admin: KafkaAdminClient, bootstrap: str
) -> None:
    admin.create_topics([NewTopic("kp-trim", 1, 1)])
    kp_produce(bootstrap, "kp-trim", 0, 10)
    partition = TopicPartition("kp-trim", 0)
    result = admin.delete_records({partition: 6})
    assert result[partition]["low_watermark"] == 6
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    consumer.assign([partition])
    assert consumer.beginning_offsets([partition]) == {partition: 6}
    offsets = []
    for message in consumer:
        offsets.append(message.offset)
        if message.offset == 9:
            break
    consumer.close()
    assert offsets == [6, 7, 8, 9]


def test_kafka_python_describes_cluster_and_log_dirs(
    admin: KafkaAdminClient, broker: ThreadedBroker
) -> None:
    admin.create_topics([NewTopic("kp-dirs", 2, 1)])
    cluster = admin.describe_cluster()
    assert broker.broker is not None
    assert cluster["cluster_id"] == broker.broker.cluster_id
    assert [node["broker_id"] for node in cluster["brokers"]] == [1]
    (described,) = admin.describe_log_dirs()
    (log_dir,) = described["log_dirs"]
    assert log_dir["error_code"] == 0
    topics = {topic["name"]: topic for topic in log_dir["topics"]}
    assert sorted(p["partition_index"] for p in topics["kp-dirs"]["partitions"]) == [0, 1]


# -- confluent-kafka (librdkafka) --------------------------------------------------------------


@pytest.fixture
def rd_admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def wait_all(futures: dict[Any, Any]) -> dict[Any, Any]:
    """Each future's result, or the exception it failed with."""
    results: dict[Any, Any] = {}
    for key, future in futures.items():
        try:
            results[key] = future.result(TIMEOUT_S)
        except KafkaException as exc:
            results[key] = exc
    return results


def error_name(outcome: Any) -> str | None:
    if isinstance(outcome, KafkaException):
        return str(outcome.args[0].name())
    return None


def test_confluent_creates_grows_and_deletes_topics(rd_admin: AdminClient) -> None:
    created = wait_all(
        rd_admin.create_topics(
            [RdNewTopic("rd-a", 2, 1, config={"retention.ms": "1000"}), RdNewTopic("rd-b", 1, 3)],
            operation_timeout=5,
        )
    )
    assert created["rd-a"] is None
    assert error_name(created["rd-b"]) == "INVALID_REPLICATION_FACTOR"
    again = wait_all(rd_admin.create_topics([RdNewTopic("rd-a", 2, 1)]))
    assert error_name(again["rd-a"]) == "TOPIC_ALREADY_EXISTS"
    grown = wait_all(rd_admin.create_partitions([RdNewPartitions("rd-a", 5)]))
    assert grown["rd-a"] is None
    shrunk = wait_all(rd_admin.create_partitions([RdNewPartitions("rd-a", 1)]))
    assert error_name(shrunk["rd-a"]) == "INVALID_PARTITIONS"
    deleted = wait_all(rd_admin.delete_topics(["rd-a", "ghost"], operation_timeout=5))
    assert deleted["rd-a"] is None
    assert error_name(deleted["ghost"]) == "UNKNOWN_TOPIC_OR_PART"


def test_confluent_describes_and_alters_configs(
    rd_admin: AdminClient, broker: ThreadedBroker
) -> None:
    wait_all(rd_admin.create_topics([RdNewTopic("rd-conf", 1, 1, config={"retention.ms": "1000"})]))
    topic = RdConfigResource(RdResourceType.TOPIC, "rd-conf")
    broker_resource = RdConfigResource(RdResourceType.BROKER, "1")
    described = wait_all(rd_admin.describe_configs([topic, broker_resource]))
    topic_configs = described[topic]
    assert topic_configs["retention.ms"].value == "1000"
    assert topic_configs["retention.ms"].source == ConfigSource.TOPIC_CONFIG
    assert topic_configs["segment.bytes"].is_default
    broker_configs = described[broker_resource]
    assert broker_configs["num.partitions"].value == "1"
    assert broker_configs["num.partitions"].is_read_only

    incremental = RdConfigResource(
        RdResourceType.TOPIC,
        "rd-conf",
        incremental_configs=[
            ConfigEntry(
                "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND
            ),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    assert wait_all(rd_admin.incremental_alter_configs([incremental]))[incremental] is None
    assert broker.broker is not None
    assert broker.broker.cluster.topics["rd-conf"].configs == {"cleanup.policy": "delete,compact"}

    static = RdConfigResource(
        RdResourceType.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    refused = wait_all(rd_admin.incremental_alter_configs([static]))[static]
    assert error_name(refused) == "INVALID_REQUEST"

    unknown = RdConfigResource(
        RdResourceType.TOPIC,
        "rd-conf",
        incremental_configs=[
            ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    assert error_name(wait_all(rd_admin.incremental_alter_configs([unknown]))[unknown]) == (
        "INVALID_CONFIG"
    )


def test_confluent_legacy_alter_configs_replaces_overrides(
    rd_admin: AdminClient, broker: ThreadedBroker
) -> None:
    wait_all(
        rd_admin.create_topics([RdNewTopic("rd-legacy", 1, 1, config={"retention.ms": "1000"})])
    )
    resource = RdConfigResource(
        RdResourceType.TOPIC, "rd-legacy", set_config={"segment.bytes": "2000000"}
    )
    with pytest.warns(DeprecationWarning):
        futures = rd_admin.alter_configs([resource])
    assert wait_all(futures)[resource] is None
    assert broker.broker is not None
    assert broker.broker.cluster.topics["rd-legacy"].configs == {"segment.bytes": "2000000"}


def rd_consume(bootstrap: str, topic: str, count: int) -> tuple[list[int], tuple[int, int]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "admin-tests",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([RdTopicPartition(topic, 0, -2)])  # OFFSET_BEGINNING
    offsets: list[int] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(offsets) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            offset = message.offset()
            assert offset is not None
            offsets.append(offset)
    watermarks = consumer.get_watermark_offsets(RdTopicPartition(topic, 0), timeout=TIMEOUT_S)
    consumer.close()
    return offsets, watermarks


def test_confluent_deletes_records_then_consumes_from_the_new_start(
    rd_admin: AdminClient, bootstrap: str
) -> None:
    wait_all(rd_admin.create_topics([RdNewTopic("rd-trim", 1, 1)]))
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("rd-trim", b"m%d" % i, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    deleted = wait_all(rd_admin.delete_records([RdTopicPartition("rd-trim", 0, 6)]))
    (outcome,) = deleted.values()
    assert outcome.low_watermark == 6
    offsets, watermarks = rd_consume(bootstrap, "rd-trim", 4)
    assert offsets == [6, 7, 8, 9]
    assert watermarks == (6, 10)


def test_confluent_describes_the_cluster(rd_admin: AdminClient, broker: ThreadedBroker) -> None:
    # librdkafka answers describe_cluster from a Metadata request, not from DescribeCluster.
    cluster = rd_admin.describe_cluster().result(TIMEOUT_S)
    assert broker.broker is not None
    assert cluster.cluster_id == broker.broker.cluster_id
    assert cluster.controller.id == 1
    assert [(node.id, node.port) for node in cluster.nodes] == [(1, broker.port)]
