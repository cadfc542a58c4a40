"""CreateTopics, DeleteTopics, CreatePartitions and DeleteRecords over TCP, hand-built requests."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

_Topic = struct_type(ApiKey.CreateTopics, "request", "CreatableTopic")
_Assignment = struct_type(
    ApiKey.CreateTopics, "request", "CreatableTopic", "CreatableReplicaAssignment"
)
_Config = struct_type(ApiKey.CreateTopics, "request", "CreatableTopic", "CreatableTopicConfig")
_DeleteState = struct_type(ApiKey.DeleteTopics, "request", "DeleteTopicState")
_NewPartitions = struct_type(ApiKey.CreatePartitions, "request", "CreatePartitionsTopic")
_NewAssignment = struct_type(
    ApiKey.CreatePartitions, "request", "CreatePartitionsTopic", "CreatePartitionsAssignment"
)
_RecordsTopic = struct_type(ApiKey.DeleteRecords, "request", "DeleteRecordsTopic")
_RecordsPartition = struct_type(
    ApiKey.DeleteRecords, "request", "DeleteRecordsTopic", "DeleteRecordsPartition"
)
_ProduceTopic = struct_type(ApiKey.Produce, "request", "TopicProduceData")
_ProducePartition = struct_type(
    ApiKey.Produce, "request", "TopicProduceData", "PartitionProduceData"
)


@pytest.fixture
def client(bootstrap: str) -> Iterator[WireClient]:
    with WireClient(bootstrap) as wire:
        yield wire


def new_topic(
    name: str,
    partitions: int = -1,
    replication: int = -1,
    configs: dict[str, str | None] | None = None,
    assignments: list[list[int]] | None = None,
) -> Any:
    return _Topic(
        name=name,
        num_partitions=partitions,
        replication_factor=replication,
        assignments=[
            _Assignment(partition_index=index, broker_ids=ids)
            for index, ids in enumerate(assignments or [])
        ],
        configs=[_Config(name=k, value=v) for k, v in (configs or {}).items()],
    )


def create(client: WireClient, *topics: Any, version: int = 7, validate_only: bool = False) -> Any:
    return client.call(
        ApiKey.CreateTopics,
        version,
        topics=list(topics),
        timeout_ms=5000,
        validate_only=validate_only,
    )


def by_name(results: list[Any]) -> dict[str, Any]:
    return {result.name: result for result in results}


def produce(client: WireClient, topic: str, partition: int, count: int) -> None:
    now = int(time.time() * 1000)
    batch = build_batch([(b"k", b"v%d" % i, [], now) for i in range(count)])
    response = client.call(
        ApiKey.Produce,
        8,
        transactional_id=None,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            _ProduceTopic(
                name=topic, partition_data=[_ProducePartition(index=partition, records=batch)]
            )
        ],
    )
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR


# -- CreateTopics ------------------------------------------------------------------------------


def test_create_topic_answers_partitions_configs_and_id(
    client: WireClient, broker: ThreadedBroker
) -> None:
    response = create(client, new_topic("orders", 3, 1, {"retention.ms": "1000"}))
    (result,) = response.topics
    assert result.error_code == ErrorCode.NO_ERROR
    assert (result.num_partitions, result.replication_factor) == (3, 1)
    assert broker.broker is not None
    topic = broker.broker.cluster.topics["orders"]
    assert result.topic_id == topic.topic_id
    assert len(topic.partitions) == 3
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].config_source == 1  # TOPIC_CONFIG
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].config_source == 5  # DEFAULT_CONFIG
    assert [c.name for c in result.configs] == sorted(configs)


def create_with_settings(tmp_path: Path, settings: dict[str, str], topic: Any) -> Any:
    with (
        ThreadedBroker(data_dir=tmp_path, settings=settings) as running,
        WireClient(running.bootstrap_servers) as wire,
    ):
        (result,) = create(wire, topic).topics
    return result


def test_defaults_come_from_num_partitions_and_default_replication_factor(tmp_path: Path) -> None:
    result = create_with_settings(tmp_path, {"num.partitions": "4"}, new_topic("defaults"))
    assert result.error_code == ErrorCode.NO_ERROR
    assert (result.num_partitions, result.replication_factor) == (4, 1)


def test_replication_factor_above_one_is_refused_as_on_a_single_node(client: WireClient) -> None:
    (result,) = create(client, new_topic("replicated", 1, 3)).topics
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 1 broker(s) are registered" in result.error_message
    assert (result.num_partitions, result.replication_factor) == (-1, -1)


def test_default_replication_factor_above_one_is_refused(tmp_path: Path) -> None:
    settings = {"default.replication.factor": "3"}
    result = create_with_settings(tmp_path, settings, new_topic("replicated"))
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (new_topic("zero-partitions", 0, 1), ErrorCode.INVALID_PARTITIONS),
        (new_topic("negative-partitions", -2, 1), ErrorCode.INVALID_PARTITIONS),
        (new_topic("zero-replicas", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
        (new_topic("bad/name", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (new_topic("", 1, 1), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (new_topic("bad-config", 1, 1, {"no.such.config": "1"}), ErrorCode.INVALID_CONFIG),
        (new_topic("bad-value", 1, 1, {"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
        (new_topic("null-value", 1, 1, {"retention.ms": None}), ErrorCode.INVALID_CONFIG),
    ],
)
def test_invalid_topics_get_kafkas_error(client: WireClient, topic: Any, error: ErrorCode) -> None:
    (result,) = create(client, topic).topics
    assert result.error_code == error
    assert result.error_message


def test_existing_and_colliding_names(client: WireClient) -> None:
    assert create(client, new_topic("a.b", 1, 1)).topics[0].error_code == ErrorCode.NO_ERROR
    results = by_name(create(client, new_topic("a.b", 1, 1), new_topic("a_b", 1, 1)).topics)
    assert results["a.b"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert results["a_b"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "collides with existing topic: a.b" in results["a_b"].error_message


def test_a_name_given_twice_gets_one_invalid_request(
    client: WireClient, broker: ThreadedBroker
) -> None:
    response = create(client, new_topic("twice", 1, 1), new_topic("twice", 2, 1))
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("twice", ErrorCode.INVALID_REQUEST)
    ]
    assert broker.broker is not None
    assert "twice" not in broker.broker.cluster.topics


def test_validate_only_creates_nothing(client: WireClient, broker: ThreadedBroker) -> None:
    (result,) = create(client, new_topic("dry-run", 2, 1), validate_only=True).topics
    assert result.error_code == ErrorCode.NO_ERROR
    assert result.num_partitions == 2
    assert broker.broker is not None
    assert "dry-run" not in broker.broker.cluster.topics
    (again,) = create(client, new_topic("dry-run", 2, 1)).topics
    assert again.error_code == ErrorCode.NO_ERROR


def test_manual_assignment_on_this_node(client: WireClient, broker: ThreadedBroker) -> None:
    (result,) = create(client, new_topic("manual", assignments=[[1], [1], [1]])).topics
    assert result.error_code == ErrorCode.NO_ERROR
    assert result.num_partitions == 3
    assert broker.broker is not None
    assert len(broker.broker.cluster.topics["manual"].partitions) == 3


@pytest.mark.parametrize(
    ("topic", "error", "message"),
    [
        (new_topic("m1", 2, -1, assignments=[[1]]), ErrorCode.INVALID_REQUEST, "numPartitions"),
        (new_topic("m2", -1, 1, assignments=[[1]]), ErrorCode.INVALID_REQUEST, "replication"),
        (new_topic("m3", assignments=[[2]]), ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "broker 2"),
        (new_topic("m4", assignments=[[]]), ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "empty"),
        (new_topic("m5", assignments=[[1, 1]]), ErrorCode.INVALID_REPLICATION_ASSIGNMENT, "once"),
    ],
)
def test_invalid_manual_assignments(
    client: WireClient, topic: Any, error: ErrorCode, message: str
) -> None:
    (result,) = create(client, topic).topics
    assert result.error_code == error
    assert message in result.error_message


def test_manual_assignment_must_be_consecutive(client: WireClient) -> None:
    topic = new_topic("gap")
    topic.assignments = [
        _Assignment(partition_index=0, broker_ids=[1]),
        _Assignment(partition_index=2, broker_ids=[1]),
    ]
    (result,) = create(client, topic).topics
    assert result.error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert "consecutive" in result.error_message


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6, 7])
def test_every_create_topics_version(client: WireClient, version: int) -> None:
    (result,) = create(client, new_topic(f"v{version}", 1, 1), version=version).topics
    assert result.error_code == ErrorCode.NO_ERROR


# -- DeleteTopics ------------------------------------------------------------------------------


def test_delete_by_name_and_unknown_names(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, new_topic("doomed", 2, 1))
    response = client.call(ApiKey.DeleteTopics, 5, topic_names=["doomed", "ghost"], timeout_ms=1000)
    results = by_name(response.responses)
    assert results["doomed"].error_code == ErrorCode.NO_ERROR
    assert results["ghost"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.broker is not None
    assert "doomed" not in broker.broker.cluster.topics


def test_delete_by_topic_id(client: WireClient, broker: ThreadedBroker) -> None:
    (created,) = create(client, new_topic("by-id", 1, 1)).topics
    unknown = uuid.uuid4()
    response = client.call(
        ApiKey.DeleteTopics,
        6,
        topics=[
            _DeleteState(name=None, topic_id=created.topic_id),
            _DeleteState(name=None, topic_id=unknown),
        ],
        timeout_ms=1000,
    )
    results = {r.topic_id: r for r in response.responses}
    assert results[created.topic_id].error_code == ErrorCode.NO_ERROR
    assert results[created.topic_id].name == "by-id"
    assert results[unknown].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert broker.broker is not None
    assert "by-id" not in broker.broker.cluster.topics


def test_delete_topics_invalid_entries(client: WireClient) -> None:
    (created,) = create(client, new_topic("kept", 1, 1)).topics
    response = client.call(
        ApiKey.DeleteTopics,
        6,
        topics=[
            _DeleteState(name="kept", topic_id=created.topic_id),
            _DeleteState(name=None, topic_id=None),
            _DeleteState(name="dup", topic_id=None),
            _DeleteState(name="dup", topic_id=None),
        ],
        timeout_ms=1000,
    )
    errors = sorted((r.error_code, r.error_message) for r in response.responses)
    assert errors == sorted(
        [
            (ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."),
            (ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."),
            (ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ]
    )


def test_topic_deletion_disabled(tmp_path: Path) -> None:
    settings = {"delete.topic.enable": "false"}
    with ThreadedBroker(data_dir=tmp_path, settings=settings) as running:
        with WireClient(running.bootstrap_servers) as wire:
            create(wire, new_topic("forever", 1, 1))
            new = wire.call(ApiKey.DeleteTopics, 3, topic_names=["forever"], timeout_ms=1000)
            old = wire.call(ApiKey.DeleteTopics, 2, topic_names=["forever"], timeout_ms=1000)
        assert running.broker is not None
        assert "forever" in running.broker.cluster.topics
    assert new.responses[0].error_code == ErrorCode.TOPIC_DELETION_DISABLED
    assert old.responses[0].error_code == ErrorCode.INVALID_REQUEST


def test_deleted_topic_can_be_created_again_empty(client: WireClient) -> None:
    create(client, new_topic("phoenix", 1, 1))
    produce(client, "phoenix", 0, 3)
    client.call(ApiKey.DeleteTopics, 4, topic_names=["phoenix"], timeout_ms=1000)
    (result,) = create(client, new_topic("phoenix", 1, 1)).topics
    assert result.error_code == ErrorCode.NO_ERROR
    response = client.call(
        ApiKey.DeleteRecords,
        1,
        topics=[
            _RecordsTopic(
                name="phoenix", partitions=[_RecordsPartition(partition_index=0, offset=-1)]
            )
        ],
        timeout_ms=1000,
    )
    assert response.topics[0].partitions[0].low_watermark == 0


# -- CreatePartitions --------------------------------------------------------------------------


def create_partitions(
    client: WireClient, *topics: Any, validate_only: bool = False, version: int = 3
) -> dict[str, Any]:
    response = client.call(
        ApiKey.CreatePartitions,
        version,
        topics=list(topics),
        timeout_ms=1000,
        validate_only=validate_only,
    )
    return by_name(response.results)


def test_create_partitions_adds_partitions(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, new_topic("growing", 1, 1))
    results = create_partitions(client, _NewPartitions(name="growing", count=4, assignments=None))
    assert results["growing"].error_code == ErrorCode.NO_ERROR
    assert broker.broker is not None
    assert len(broker.broker.cluster.topics["growing"].partitions) == 4
    produce(client, "growing", 3, 1)


def test_create_partitions_errors(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, new_topic("fixed", 2, 1))
    results = create_partitions(
        client,
        _NewPartitions(name="fixed", count=2, assignments=None),
        _NewPartitions(name="ghost", count=2, assignments=None),
    )
    assert results["fixed"].error_code == ErrorCode.INVALID_PARTITIONS
    assert results["fixed"].error_message == "Topic already has 2 partition(s)."
    assert results["ghost"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    shrink = create_partitions(client, _NewPartitions(name="fixed", count=1, assignments=None))
    assert shrink["fixed"].error_code == ErrorCode.INVALID_PARTITIONS
    assert "would not be an increase" in shrink["fixed"].error_message


def test_create_partitions_assignments(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, new_topic("assigned", 1, 1))
    short = create_partitions(
        client,
        _NewPartitions(name="assigned", count=3, assignments=[_NewAssignment(broker_ids=[1])]),
    )
    assert short["assigned"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    elsewhere = create_partitions(
        client,
        _NewPartitions(name="assigned", count=2, assignments=[_NewAssignment(broker_ids=[7])]),
    )
    assert elsewhere["assigned"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    good = create_partitions(
        client,
        _NewPartitions(name="assigned", count=2, assignments=[_NewAssignment(broker_ids=[1])]),
    )
    assert good["assigned"].error_code == ErrorCode.NO_ERROR
    assert broker.broker is not None
    assert len(broker.broker.cluster.topics["assigned"].partitions) == 2


def test_create_partitions_validate_only_and_duplicates(
    client: WireClient, broker: ThreadedBroker
) -> None:
    create(client, new_topic("steady", 1, 1))
    checked = create_partitions(
        client, _NewPartitions(name="steady", count=5, assignments=None), validate_only=True
    )
    assert checked["steady"].error_code == ErrorCode.NO_ERROR
    assert broker.broker is not None
    assert len(broker.broker.cluster.topics["steady"].partitions) == 1
    twice = create_partitions(
        client,
        _NewPartitions(name="steady", count=2, assignments=None),
        _NewPartitions(name="steady", count=3, assignments=None),
        version=0,
    )
    assert twice["steady"].error_code == ErrorCode.INVALID_REQUEST
    assert len(broker.broker.cluster.topics["steady"].partitions) == 1


# -- DeleteRecords -----------------------------------------------------------------------------


def delete_records(
    client: WireClient, topic: str, offsets: dict[int, int], version: int = 2
) -> Any:
    response = client.call(
        ApiKey.DeleteRecords,
        version,
        topics=[
            _RecordsTopic(
                name=topic,
                partitions=[
                    _RecordsPartition(partition_index=index, offset=offset)
                    for index, offset in offsets.items()
                ],
            )
        ],
        timeout_ms=1000,
    )
    return {p.partition_index: p for p in response.topics[0].partitions}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_log_start(
    client: WireClient, broker: ThreadedBroker, version: int
) -> None:
    create(client, new_topic("trimmed", 2, 1))
    produce(client, "trimmed", 0, 10)
    produce(client, "trimmed", 1, 4)
    results = delete_records(client, "trimmed", {0: 6, 1: -1}, version)
    assert (results[0].error_code, results[0].low_watermark) == (ErrorCode.NO_ERROR, 6)
    assert (results[1].error_code, results[1].low_watermark) == (ErrorCode.NO_ERROR, 4)
    assert broker.broker is not None
    partitions = broker.broker.cluster.topics["trimmed"].partitions
    assert [p.log.log_start_offset for p in partitions] == [6, 4]
    lower = delete_records(client, "trimmed", {0: 2})
    assert (lower[0].error_code, lower[0].low_watermark) == (ErrorCode.NO_ERROR, 6)


def test_delete_records_errors(client: WireClient) -> None:
    create(client, new_topic("short", 1, 1))
    create(client, new_topic("compacted", 1, 1, {"cleanup.policy": "compact"}))
    produce(client, "short", 0, 3)
    results = delete_records(client, "short", {0: 4, 9: 1})
    assert (results[0].error_code, results[0].low_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert results[9].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    negative = delete_records(client, "short", {0: -5})
    assert negative[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    compacted = delete_records(client, "compacted", {0: 0})
    assert compacted[0].error_code == ErrorCode.POLICY_VIOLATION


def test_delete_records_survives_a_restart(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, new_topic("durable", 1, 1))
    produce(client, "durable", 0, 5)
    delete_records(client, "durable", {0: 3})
    client.close()
    broker.restart()
    with WireClient(broker.bootstrap_servers) as wire:
        results = delete_records(wire, "durable", {0: 0})
    assert results[0].low_watermark == 3


# -- limits ------------------------------------------------------------------------------------


def test_an_excessively_large_creation_fails_whole(
    client: WireClient, broker: ThreadedBroker
) -> None:
    response = create(client, new_topic("huge", 20_000, 1), new_topic("small", 1, 1))
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("huge", ErrorCode.POLICY_VIOLATION),
        ("small", ErrorCode.POLICY_VIOLATION),
    ]
    create(client, new_topic("base", 1, 1))
    results = create_partitions(
        client, _NewPartitions(name="base", count=2**31 - 1, assignments=None)
    )
    assert results["base"].error_code == ErrorCode.POLICY_VIOLATION
    assert broker.broker is not None
    assert set(broker.broker.cluster.topics) == {"base"}
    assert len(broker.broker.cluster.topics["base"].partitions) == 1


def test_the_metadata_topic_cannot_be_created(client: WireClient) -> None:
    (result,) = create(client, new_topic("__cluster_metadata", 1, 1)).topics
    assert result.error_code == ErrorCode.INVALID_REQUEST
