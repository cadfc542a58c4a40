"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster,
OffsetForLeaderEpoch and DescribeLogDirs over TCP, hand-built requests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.cluster.alter_configs import OpType, ResourceType
from minibroker.config import ConfigSource, ConfigType
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

_NewTopic = struct_type(ApiKey.CreateTopics, "request", "CreatableTopic")
_NewTopicConfig = struct_type(
    ApiKey.CreateTopics, "request", "CreatableTopic", "CreatableTopicConfig"
)
_Describe = struct_type(ApiKey.DescribeConfigs, "request", "DescribeConfigsResource")
_IncResource = struct_type(ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource")
_IncConfig = struct_type(
    ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource", "AlterableConfig"
)
_AltResource = struct_type(ApiKey.AlterConfigs, "request", "AlterConfigsResource")
_AltConfig = struct_type(ApiKey.AlterConfigs, "request", "AlterConfigsResource", "AlterableConfig")
_EpochTopic = struct_type(ApiKey.OffsetForLeaderEpoch, "request", "OffsetForLeaderTopic")
_EpochPartition = struct_type(
    ApiKey.OffsetForLeaderEpoch, "request", "OffsetForLeaderTopic", "OffsetForLeaderPartition"
)
_LogDirTopic = struct_type(ApiKey.DescribeLogDirs, "request", "DescribableLogDirTopic")
_ProduceTopic = struct_type(ApiKey.Produce, "request", "TopicProduceData")
_ProducePartition = struct_type(
    ApiKey.Produce, "request", "TopicProduceData", "PartitionProduceData"
)
TOPIC = ResourceType.TOPIC
BROKER = ResourceType.BROKER


@pytest.fixture
def client(bootstrap: str) -> Iterator[WireClient]:
    with WireClient(bootstrap) as wire:
        yield wire


def create(
    client: WireClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    response = client.call(
        ApiKey.CreateTopics,
        5,
        topics=[
            _NewTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=[],
                configs=[_NewTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
            )
        ],
        timeout_ms=1000,
        validate_only=False,
    )
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def produce(client: WireClient, topic: str, count: int) -> None:
    now = int(time.time() * 1000)
    batch = build_batch([(None, b"x", [], now) for _ in range(count)])
    client.call(
        ApiKey.Produce,
        7,
        transactional_id=None,
        acks=1,
        timeout_ms=1000,
        topic_data=[
            _ProduceTopic(name=topic, partition_data=[_ProducePartition(index=0, records=batch)])
        ],
    )


def describe(
    client: WireClient,
    resource_type: int,
    name: str,
    keys: list[str] | None = None,
    version: int = 4,
    synonyms: bool = True,
    documentation: bool = False,
) -> Any:
    response = client.call(
        ApiKey.DescribeConfigs,
        version,
        resources=[
            _Describe(resource_type=resource_type, resource_name=name, configuration_keys=keys)
        ],
        include_synonyms=synonyms,
        include_documentation=documentation,
    )
    (result,) = response.results
    return result


def configs_of(result: Any) -> dict[str, Any]:
    return {config.name: config for config in result.configs}


def synonyms_of(config: Any) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in config.synonyms]


def incremental(
    client: WireClient,
    resource_type: int,
    name: str,
    ops: list[tuple[str, OpType, str | None]],
    validate_only: bool = False,
) -> Any:
    response = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            _IncResource(
                resource_type=resource_type,
                resource_name=name,
                configs=[_IncConfig(name=n, config_operation=op, value=v) for n, op, v in ops],
            )
        ],
        validate_only=validate_only,
    )
    (result,) = response.responses
    return result


def alter(
    client: WireClient,
    resource_type: int,
    name: str,
    configs: dict[str, str | None],
    version: int = 2,
) -> Any:
    response = client.call(
        ApiKey.AlterConfigs,
        version,
        resources=[
            _AltResource(
                resource_type=resource_type,
                resource_name=name,
                configs=[_AltConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        validate_only=False,
    )
    (result,) = response.responses
    return result


def overrides(broker: ThreadedBroker, topic: str) -> dict[str, str]:
    assert broker.broker is not None
    return dict(broker.broker.cluster.topics[topic].configs)


# -- DescribeConfigs ---------------------------------------------------------------------------


def test_topic_configs_with_sources_and_synonyms(client: WireClient) -> None:
    create(client, "described", configs={"retention.ms": "1000"})
    result = describe(client, TOPIC, "described")
    assert result.error_code == ErrorCode.NO_ERROR
    configs = configs_of(result)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("1000", ConfigSource.TOPIC_CONFIG)
    assert synonyms_of(retention) == [("retention.ms", "1000", ConfigSource.TOPIC_CONFIG)]
    assert retention.config_type == ConfigType.LONG
    assert not retention.read_only and not retention.is_sensitive
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("1073741824", ConfigSource.DEFAULT_CONFIG)
    assert synonyms_of(segment) == [
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)
    ]
    assert configs["cleanup.policy"].config_type == ConfigType.LIST


def test_topic_defaults_from_server_properties(tmp_path: Path) -> None:
    settings = {"log.retention.ms": "5000", "log.segment.bytes": "2000000"}
    with (
        ThreadedBroker(data_dir=tmp_path, settings=settings) as running,
        WireClient(running.bootstrap_servers) as wire,
    ):
        create(wire, "inherits")
        configs = configs_of(describe(wire, TOPIC, "inherits"))
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source) == ("5000", ConfigSource.STATIC_BROKER_CONFIG)
    assert synonyms_of(retention) == [
        ("log.retention.ms", "5000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    ]
    segment = configs["segment.bytes"]
    assert synonyms_of(segment) == [
        ("log.segment.bytes", "2000000", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    ]


def test_configuration_keys_filter_and_synonyms_flag(client: WireClient) -> None:
    create(client, "filtered")
    result = describe(client, TOPIC, "filtered", keys=["retention.ms", "nope"], synonyms=False)
    assert [c.name for c in result.configs] == ["retention.ms"]
    assert result.configs[0].synonyms == []
    everything = describe(client, TOPIC, "filtered", keys=[])
    assert len(everything.configs) > 10


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_every_describe_configs_version(client: WireClient, version: int) -> None:
    create(client, f"v{version}")
    result = describe(client, TOPIC, f"v{version}", version=version)
    assert result.error_code == ErrorCode.NO_ERROR
    assert configs_of(result)["compression.type"].value == "producer"


def test_topic_resource_errors(client: WireClient) -> None:
    unknown = describe(client, TOPIC, "ghost")
    assert (unknown.error_code, unknown.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    illegal = describe(client, TOPIC, "bad/name")
    assert illegal.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    unsupported = describe(client, ResourceType.UNKNOWN, "my-group")
    assert unsupported.error_code == ErrorCode.INVALID_REQUEST


def test_broker_configs(client: WireClient) -> None:
    result = describe(client, BROKER, "1", documentation=True)
    assert result.error_code == ErrorCode.NO_ERROR
    configs = configs_of(result)
    partitions = configs["num.partitions"]
    assert (partitions.value, partitions.config_source) == ("1", ConfigSource.DEFAULT_CONFIG)
    assert partitions.read_only
    assert synonyms_of(partitions) == [("num.partitions", "1", ConfigSource.DEFAULT_CONFIG)]
    listeners = configs["listeners"]
    assert listeners.config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert listeners.value.startswith("PLAINTEXT://127.0.0.1:")
    assert configs["log.retention.ms"].value is None
    assert configs["log.retention.ms"].synonyms == []


def test_broker_resource_names(client: WireClient) -> None:
    cluster_default = describe(client, BROKER, "")
    # a 4.3 cluster (eligible leader replicas) sets min.insync.replicas at the cluster level
    assert cluster_default.error_code == ErrorCode.NO_ERROR
    assert [(c.name, c.value) for c in cluster_default.configs] == [("min.insync.replicas", "1")]
    other = describe(client, BROKER, "2")
    assert other.error_code == ErrorCode.INVALID_REQUEST
    assert other.error_message == "Unexpected broker id, expected 1 or empty string, but received 2"
    words = describe(client, BROKER, "one")
    assert words.error_code == ErrorCode.INVALID_REQUEST
    assert words.error_message == "Broker id must be an integer, but it is: one"


# -- IncrementalAlterConfigs -------------------------------------------------------------------


def test_set_delete_append_subtract(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "tuned", configs={"retention.ms": "1000"})
    ok = incremental(
        client,
        TOPIC,
        "tuned",
        [
            ("segment.bytes", OpType.SET, "2000000"),
            ("retention.ms", OpType.DELETE, None),
            ("cleanup.policy", OpType.APPEND, "compact"),
        ],
    )
    assert (ok.error_code, ok.error_message) == (ErrorCode.NO_ERROR, None)
    assert overrides(broker, "tuned") == {
        "segment.bytes": "2000000",
        "cleanup.policy": "delete,compact",
    }
    incremental(client, TOPIC, "tuned", [("cleanup.policy", OpType.SUBTRACT, "delete")])
    assert overrides(broker, "tuned")["cleanup.policy"] == "compact"
    configs = configs_of(describe(client, TOPIC, "tuned"))
    assert configs["segment.bytes"].config_source == ConfigSource.TOPIC_CONFIG
    assert configs["retention.ms"].config_source == ConfigSource.DEFAULT_CONFIG


def test_incremental_validate_only(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "checked")
    result = incremental(
        client, TOPIC, "checked", [("retention.ms", OpType.SET, "5")], validate_only=True
    )
    assert result.error_code == ErrorCode.NO_ERROR
    assert overrides(broker, "checked") == {}


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        ([("no.such.config", OpType.SET, "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config"),
        ([("retention.ms", OpType.SET, "soon")], ErrorCode.INVALID_CONFIG, "retention.ms"),
        ([("retention.ms", OpType.APPEND, "1")], ErrorCode.INVALID_CONFIG, "not LIST"),
        ([("retention.ms", OpType.SET, None)], ErrorCode.INVALID_REQUEST, "Null value"),
        (
            [("retention.ms", OpType.SET, "1"), ("retention.ms", OpType.SET, "2")],
            ErrorCode.INVALID_REQUEST,
            "duplicate config keys",
        ),
    ],
)
def test_incremental_errors(
    client: WireClient,
    broker: ThreadedBroker,
    ops: list[tuple[str, OpType, str | None]],
    error: ErrorCode,
    message: str,
) -> None:
    create(client, "strict")
    result = incremental(client, TOPIC, "strict", ops)
    assert result.error_code == error
    assert message in result.error_message
    assert overrides(broker, "strict") == {}


def test_incremental_unknown_topic_and_duplicate_resources(client: WireClient) -> None:
    unknown = incremental(client, TOPIC, "ghost", [("retention.ms", OpType.SET, "1")])
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert unknown.error_message == "The topic 'ghost' does not exist."
    create(client, "twice")
    resource = _IncResource(
        resource_type=TOPIC,
        resource_name="twice",
        configs=[_IncConfig(name="retention.ms", config_operation=OpType.SET, value="1")],
    )
    response = client.call(
        ApiKey.IncrementalAlterConfigs, 0, resources=[resource, resource], validate_only=False
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.INVALID_REQUEST] * 2


def test_static_broker_configs_are_refused(client: WireClient) -> None:
    changed = incremental(client, BROKER, "1", [("num.partitions", OpType.SET, "3")])
    assert changed.error_code == ErrorCode.INVALID_REQUEST
    assert changed.error_message == "Cannot update these configs dynamically: [num.partitions]"
    deleted = incremental(client, BROKER, "1", [("num.partitions", OpType.DELETE, None)])
    assert deleted.error_code == ErrorCode.NO_ERROR
    appended = incremental(client, BROKER, "1", [("num.partitions", OpType.APPEND, "2")])
    assert appended.error_code == ErrorCode.INVALID_CONFIG
    other = incremental(client, BROKER, "7", [("num.partitions", OpType.SET, "3")])
    assert other.error_message == "Unexpected broker id, expected 1, but received 7"


# -- AlterConfigs ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_replaces_the_override_set(
    client: WireClient, broker: ThreadedBroker, version: int
) -> None:
    create(client, "replaced", configs={"retention.ms": "1000", "segment.bytes": "2000000"})
    result = alter(client, TOPIC, "replaced", {"cleanup.policy": "compact"}, version)
    assert result.error_code == ErrorCode.NO_ERROR
    assert overrides(broker, "replaced") == {"cleanup.policy": "compact"}


def test_alter_configs_errors(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "guarded", configs={"retention.ms": "1000"})
    assert alter(client, TOPIC, "guarded", {"bogus": "1"}).error_code == ErrorCode.INVALID_CONFIG
    assert alter(client, TOPIC, "guarded", {"retention.ms": None}).error_code == (
        ErrorCode.INVALID_REQUEST
    )
    assert alter(client, TOPIC, "ghost", {"retention.ms": "1"}).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert alter(client, BROKER, "1", {"num.partitions": "2"}).error_code == (
        ErrorCode.INVALID_REQUEST
    )
    assert overrides(broker, "guarded") == {"retention.ms": "1000"}


def test_altered_configs_survive_a_restart(client: WireClient, broker: ThreadedBroker) -> None:
    create(client, "kept")
    incremental(client, TOPIC, "kept", [("retention.ms", OpType.SET, "60000")])
    client.close()
    broker.restart()
    with WireClient(broker.bootstrap_servers) as wire:
        retention = configs_of(describe(wire, TOPIC, "kept"))["retention.ms"]
    assert (retention.value, retention.config_source) == ("60000", ConfigSource.TOPIC_CONFIG)


# -- DescribeCluster ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster(client: WireClient, broker: ThreadedBroker, version: int) -> None:
    response = client.call(
        ApiKey.DescribeCluster, version, include_cluster_authorized_operations=False
    )
    assert response.error_code == ErrorCode.NO_ERROR
    assert broker.broker is not None
    assert response.cluster_id == broker.broker.cluster_id
    assert response.controller_id == 1
    (node,) = response.brokers
    assert (node.broker_id, node.host, node.port) == (1, "127.0.0.1", broker.port)
    assert response.authorized_operations is None


def test_describe_cluster_authorized_operations_and_endpoint_types(client: WireClient) -> None:
    with_ops = client.call(ApiKey.DescribeCluster, 1, include_cluster_authorized_operations=True)
    assert with_ops.authorized_operations == {5, 7, 8, 9, 10, 11, 12}
    controllers = client.call(
        ApiKey.DescribeCluster, 1, include_cluster_authorized_operations=False, endpoint_type=2
    )
    assert controllers.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    unknown = client.call(
        ApiKey.DescribeCluster, 1, include_cluster_authorized_operations=False, endpoint_type=9
    )
    assert unknown.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


# -- OffsetForLeaderEpoch ----------------------------------------------------------------------


def end_offsets(
    client: WireClient, topic: str, wanted: list[tuple[int, int, int]], version: int = 4
) -> list[tuple[int, int, int]]:
    response = client.call(
        ApiKey.OffsetForLeaderEpoch,
        version,
        replica_id=-1,
        topics=[
            _EpochTopic(
                topic=topic,
                partitions=[
                    _EpochPartition(partition=p, current_leader_epoch=current, leader_epoch=epoch)
                    for p, current, epoch in wanted
                ],
            )
        ],
    )
    return [(p.error_code, p.leader_epoch, p.end_offset) for p in response.topics[0].partitions]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch(client: WireClient, version: int) -> None:
    create(client, "epochs")
    assert end_offsets(client, "epochs", [(0, -1, 0)], version) == [(ErrorCode.NO_ERROR, -1, -1)]
    produce(client, "epochs", 5)
    answers = end_offsets(client, "epochs", [(0, 0, 0), (0, -1, 3), (0, -1, -1)], version)
    assert answers == [
        (ErrorCode.NO_ERROR, 0, 5),
        (ErrorCode.NO_ERROR, -1, -1),
        (ErrorCode.NO_ERROR, -1, -1),
    ]


def test_offset_for_leader_epoch_errors(client: WireClient) -> None:
    create(client, "fenced")
    answers = end_offsets(client, "fenced", [(0, 4, 0), (7, -1, 0)])
    assert [a[0] for a in answers] == [
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]


# -- DescribeLogDirs ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs(client: WireClient, tmp_path: Path, version: int) -> None:
    create(client, "sized", partitions=2)
    produce(client, "sized", 3)
    response = client.call(ApiKey.DescribeLogDirs, version, topics=None)
    (result,) = response.results
    assert result.error_code == ErrorCode.NO_ERROR
    assert result.log_dir == str((tmp_path / "data").resolve())
    (topic,) = [t for t in result.topics if t.name == "sized"]
    sizes = {p.partition_index: (p.partition_size, p.offset_lag) for p in topic.partitions}
    assert sizes[0][0] > 0
    assert sizes == {0: (sizes[0][0], 0), 1: (0, 0)}
    if version >= 4:
        assert result.total_bytes >= result.usable_bytes > 0


def test_describe_log_dirs_for_some_partitions(client: WireClient) -> None:
    create(client, "listed", partitions=3)
    response = client.call(
        ApiKey.DescribeLogDirs,
        4,
        topics=[
            _LogDirTopic(topic="listed", partitions=[2, 9]),
            _LogDirTopic(topic="x", partitions=[0]),
        ],
    )
    (result,) = response.results
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
        ("listed", [2])
    ]
