"""The versions Kafka 2.8-3.9 served below Kafka 4's (KIP-896), over TCP against a broker
emulating Kafka 2.8, each at its oldest version, answered as Kafka 3.9's `KafkaApis` answered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.auth.acls import ANONYMOUS
from minibroker.groups.records import OffsetKey, decode_key, decode_offset_value
from minibroker.handlers.list_offsets import legacy_offsets_before
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker
from tests.wire import WireClient

EMULATE_2_8 = {"minibroker.emulate.kafka.version": "2.8"}


@pytest.fixture(scope="module")
def old_broker() -> Iterator[KafkaBroker]:
    config = {**EMULATE_2_8, "group.initial.rebalance.delay.ms": "0"}
    with KafkaBroker(config=config, storage="memory") as broker:
        yield broker


@pytest.fixture
def client(old_broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(old_broker.bootstrap_servers) as wire:
        yield wire


def _topic(broker: KafkaBroker, name: str, records: int = 0) -> str:
    broker.create_topic(name, partitions=1)
    for index in range(records):
        broker.produce(name, f"v{index}")
    return name


# --- ListOffsets v0 ------------------------------------------------------------------------------


def _list_offsets_v0(
    client: WireClient, topic: str, timestamp: int, max_num: int = 1, replica_id: int = -1
) -> tuple[int, list[int]]:
    answer = client.call(
        ApiKey.ListOffsets,
        0,
        replica_id=replica_id,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "timestamp": timestamp, "max_num_offsets": max_num}
                ],
            }
        ],
    )
    (partition,) = answer.topics[0].partitions
    return partition.error_code, list(partition.old_style_offsets)


def test_list_offsets_v0_latest_and_earliest(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "lo-v0", records=3)
    assert _list_offsets_v0(client, topic, -1) == (ErrorCode.NO_ERROR, [3])
    assert _list_offsets_v0(client, topic, -2) == (ErrorCode.NO_ERROR, [0])
    # latest with room for two: the log end offset, then the (only) segment's base offset
    assert _list_offsets_v0(client, topic, -1, max_num=2) == (ErrorCode.NO_ERROR, [3, 0])
    # a timestamp before every segment was written: no offsets
    assert _list_offsets_v0(client, topic, 0, max_num=5) == (ErrorCode.NO_ERROR, [])


def test_list_offsets_v0_errors(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "lo-v0-errors")
    assert _list_offsets_v0(client, topic, -3) == (ErrorCode.UNSUPPORTED_VERSION, [])
    assert _list_offsets_v0(client, topic, -1, max_num=-1) == (ErrorCode.UNKNOWN_SERVER_ERROR, [])
    assert _list_offsets_v0(client, "lo-v0-missing", -1) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        [],
    )
    assert _list_offsets_v0(client, topic, -1) == (ErrorCode.NO_ERROR, [0])  # empty: no LEO point


def test_legacy_offsets_before_follows_kafkas_points() -> None:
    # segments at 0 (modified at 100), 10 (200), 20 (300, holds data); log start 5, end 27
    segments = [(0, 50, 100), (10, 50, 200), (20, 7, 300)]
    points = (segments, 5, 27, 1_000)
    assert legacy_offsets_before(*points, -1, 10) == [27, 20, 10, 5]
    assert legacy_offsets_before(*points, -2, 10) == [5]
    assert legacy_offsets_before(*points, 250, 10) == [10, 5]
    assert legacy_offsets_before(*points, 250, 1) == [10]
    assert legacy_offsets_before(*points, 99, 10) == []
    empty_last = [(0, 50, 100), (10, 0, 200)]
    assert legacy_offsets_before(empty_last, 0, 10, 1_000, -1, 10) == [10, 0]


def test_old_versions_are_recorded_and_take_pushed_errors(
    old_broker: KafkaBroker, client: WireClient
) -> None:
    topic = _topic(old_broker, "lo-v0-faults", records=2)
    old_broker.clear_requests()
    old_broker.push_errors(ApiKey.ListOffsets, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic=topic)
    assert _list_offsets_v0(client, topic, -1) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, [])
    assert _list_offsets_v0(client, topic, -1) == (ErrorCode.NO_ERROR, [2])
    recorded = old_broker.requests(ApiKey.ListOffsets, topic=topic)
    assert [(r.api_version, r.partitions()) for r in recorded] == [(0, {(topic, 0)})] * 2
    assert recorded[0].body.topics[0].partitions[0].max_num_offsets == 1
    old_broker.push_errors(ApiKey.OffsetCommit, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert _commit(client, 0, "g-faults", topic, 1) == ErrorCode.COORDINATOR_NOT_AVAILABLE


# --- topics, log dirs, leader epochs -------------------------------------------------------------


def test_create_topics_v0_and_v1(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = {"num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}
    answer = client.call(
        ApiKey.CreateTopics, 0, topics=[{"name": "ct-v0", **topic}], timeout_ms=1000
    )
    assert [(t.name, t.error_code) for t in answer.topics] == [("ct-v0", ErrorCode.NO_ERROR)]
    assert "ct-v0" in old_broker.topics()
    again = client.call(ApiKey.CreateTopics, 0, topics=[{"name": "ct-v0", **topic}], timeout_ms=1)
    assert again.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    checked = client.call(
        ApiKey.CreateTopics,
        1,
        topics=[{"name": "ct-v1", **topic}],
        timeout_ms=1000,
        validate_only=True,
    )
    assert [(t.error_code, t.error_message) for t in checked.topics] == [(ErrorCode.NO_ERROR, None)]
    assert "ct-v1" not in old_broker.topics()


def test_delete_topics_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "dt-v0")
    answer = client.call(ApiKey.DeleteTopics, 0, topic_names=[topic, "dt-missing"], timeout_ms=1)
    assert sorted((r.name, r.error_code) for r in answer.responses) == [
        ("dt-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (topic, ErrorCode.NO_ERROR),
    ]
    assert topic not in old_broker.topics()


@pytest.mark.parametrize("version", [0, 1])
def test_offset_for_leader_epoch_v0_v1(
    old_broker: KafkaBroker, client: WireClient, version: int
) -> None:
    topic = _topic(old_broker, f"ole-v{version}", records=4)
    answer = client.call(
        ApiKey.OffsetForLeaderEpoch,
        version,
        topics=[{"topic": topic, "partitions": [{"partition": 0, "leader_epoch": 0}]}],
    )
    (partition,) = answer.topics[0].partitions
    assert (partition.error_code, partition.end_offset) == (ErrorCode.NO_ERROR, 4)
    # v0 carries no leader epoch: the client reads the default
    assert partition.leader_epoch == (-1 if version == 0 else 0)


def test_describe_log_dirs_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "dld-v0", records=1)
    answer = client.call(ApiKey.DescribeLogDirs, 0, topics=[{"topic": topic, "partitions": [0]}])
    (directory,) = answer.results
    assert directory.error_code == ErrorCode.NO_ERROR
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in directory.topics] == [
        (topic, [0])
    ]


def test_alter_replica_log_dirs_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "arld-v0")
    answer = client.call(
        ApiKey.AlterReplicaLogDirs,
        0,
        dirs=[{"path": "/nowhere", "topics": [{"name": topic, "partitions": [0]}]}],
    )
    (result,) = answer.results
    assert [(p.partition_index, p.error_code) for p in result.partitions] == [
        (0, ErrorCode.LOG_DIR_NOT_FOUND)
    ]


# --- versions Kafka 4.3 still serves, as the old clients send them ------------------------------


def test_metadata_v0_empty_list_means_every_topic(
    old_broker: KafkaBroker, client: WireClient
) -> None:
    topic = _topic(old_broker, "md-v0")
    answer = client.call(ApiKey.Metadata, 0, topics=[])
    assert topic in {t.name for t in answer.topics}
    assert [(b.host, b.port) for b in answer.brokers] == [("127.0.0.1", old_broker.port)]


def test_find_coordinator_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    answer = client.call(ApiKey.FindCoordinator, 0, key="g-fc")
    (broker,) = client.call(ApiKey.Metadata, 0, topics=[]).brokers
    assert (answer.error_code, answer.node_id, answer.port) == (
        ErrorCode.NO_ERROR,
        broker.node_id,
        broker.port,
    )


def test_join_group_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    answer = client.call(
        ApiKey.JoinGroup,
        0,
        group_id="g-join-v0",
        session_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
    )
    assert answer.error_code == ErrorCode.NO_ERROR  # v0 needs no known member id (v4+)
    assert answer.member_id and answer.leader == answer.member_id
    assert (answer.generation_id, answer.protocol_name) == (1, "range")


# --- ACLs and configs ----------------------------------------------------------------------------

TOPIC_RESOURCE, READ, ALLOW, ANY = 2, 3, 3, 1
LITERAL, PREFIXED = 3, 4


@pytest.fixture(scope="module")
def acl_broker() -> Iterator[KafkaBroker]:
    config = {**AUTHORIZER_CONFIG, "super.users": ANONYMOUS, **EMULATE_2_8}
    with KafkaBroker(config=config, storage="memory") as broker:
        yield broker


def _creation(pattern: int | None = None) -> dict[str, object]:
    creation: dict[str, object] = {
        "resource_type": TOPIC_RESOURCE,
        "resource_name": "acl-topic",
        "principal": "User:alice",
        "host": "*",
        "operation": READ,
        "permission_type": ALLOW,
    }
    return creation if pattern is None else {**creation, "resource_pattern_type": pattern}


FILTER = {
    "resource_type_filter": TOPIC_RESOURCE,
    "resource_name_filter": "acl-topic",
    "principal_filter": None,
    "host_filter": None,
    "operation": ANY,
    "permission_type": ANY,
}


def test_acls_v0_are_literal(acl_broker: KafkaBroker) -> None:
    with WireClient(acl_broker.bootstrap_servers) as client:
        created = client.call(ApiKey.CreateAcls, 0, creations=[_creation()])
        assert [r.error_code for r in created.results] == [ErrorCode.NO_ERROR]
        client.call(ApiKey.CreateAcls, 1, creations=[_creation(PREFIXED)])
        described = client.call(ApiKey.DescribeAcls, 0, **FILTER)
        assert described.error_code == ErrorCode.NO_ERROR
        # the prefixed binding on the same name is not LITERAL: a v0 filter does not match it
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == [
            ("acl-topic", ["User:alice"])
        ]
        deleted = client.call(ApiKey.DeleteAcls, 0, filters=[FILTER])
        (result,) = deleted.filter_results
        assert [(m.resource_name, m.principal) for m in result.matching_acls] == [
            ("acl-topic", "User:alice")
        ]
        left = client.call(ApiKey.DescribeAcls, 1, **FILTER, pattern_type_filter=1)  # ANY
        assert [r.pattern_type for r in left.resources] == [PREFIXED]


def test_describe_configs_v0(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "dc-v0")
    answer = client.call(
        ApiKey.DescribeConfigs,
        0,
        resources=[
            {"resource_type": TOPIC_RESOURCE, "resource_name": topic, "configuration_keys": None}
        ],
    )
    (result,) = answer.results
    assert result.error_code == ErrorCode.NO_ERROR
    configs = {config.name: config for config in result.configs}
    assert configs["cleanup.policy"].value == "delete"
    # Kafka 3.9 (and 2.8) never set IsDefault in a v0 answer
    assert not any(config.is_default for config in configs.values())


# --- the default release (Kafka 4.3) does not serve them ----------------------------------------

REMOVED_IN_4 = [
    (ApiKey.OffsetCommit, 1, {"group_id": "g", "topics": []}),
    (ApiKey.OffsetFetch, 0, {"group_id": "g", "topics": []}),
    (ApiKey.ListOffsets, 0, {"replica_id": -1, "topics": []}),
    (ApiKey.CreateTopics, 1, {"topics": [], "timeout_ms": 1}),
    (ApiKey.DeleteTopics, 0, {"topic_names": [], "timeout_ms": 1}),
    (ApiKey.OffsetForLeaderEpoch, 1, {"topics": []}),
    (ApiKey.DescribeLogDirs, 0, {"topics": None}),
    (ApiKey.AlterReplicaLogDirs, 0, {"dirs": []}),
    (ApiKey.CreateAcls, 0, {"creations": []}),
    (ApiKey.DeleteAcls, 0, {"filters": []}),
    (ApiKey.DescribeAcls, 0, FILTER),
    (ApiKey.DescribeConfigs, 0, {"resources": []}),
]


@pytest.fixture(scope="module")
def newest_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as broker:
        yield broker


@pytest.mark.parametrize(("key", "version", "fields"), REMOVED_IN_4)
def test_kafka_4_3_closes_the_connection(
    newest_broker: KafkaBroker, key: int, version: int, fields: dict[str, object]
) -> None:
    with WireClient(newest_broker.bootstrap_servers) as client:
        client.send(key, version, **fields)
        assert client.is_closed_by_peer()


# --- OffsetCommit v0-1, OffsetFetch v0 -----------------------------------------------------------


def _commit(
    client: WireClient, version: int, group: str, topic: str, offset: int, **partition: object
) -> int:
    fields: dict[str, object] = {"group_id": group}
    if version == 1:
        fields.update(generation_id_or_member_epoch=-1, member_id="")
    answer = client.call(
        ApiKey.OffsetCommit,
        version,
        **fields,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": offset, **partition},
                ],
            }
        ],
    )
    (answered,) = answer.topics[0].partitions
    return int(answered.error_code)


def _fetch(client: WireClient, version: int, group: str, topic: str) -> tuple[int, int, str]:
    answer = client.call(
        ApiKey.OffsetFetch,
        version,
        group_id=group,
        topics=[{"name": topic, "partition_indexes": [0]}],
    )
    (partition,) = answer.topics[0].partitions
    return partition.error_code, partition.committed_offset, partition.metadata


def test_offset_commit_v0_goes_to_zookeeper(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "oc-v0")
    assert _commit(client, 0, "g-zk", topic, 7, committed_metadata="kept?") == ErrorCode.NO_ERROR
    # ZooKeeper kept the offset alone; the group coordinator's offsets are another store
    assert _fetch(client, 0, "g-zk", topic) == (ErrorCode.NO_ERROR, 7, "")
    assert _fetch(client, 1, "g-zk", topic) == (ErrorCode.NO_ERROR, -1, "")
    assert old_broker.committed_offsets("g-zk") == {}
    assert _commit(client, 1, "g-zk", topic, 9) == ErrorCode.NO_ERROR
    assert _fetch(client, 0, "g-zk", topic)[1] == 7
    assert _fetch(client, 1, "g-zk", topic)[1] == 9


def test_offset_commit_v0_errors(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "oc-v0-errors")
    too_long = "m" * 4097  # offset.metadata.max.bytes is 4096
    assert (
        _commit(client, 0, "g-zk2", topic, 1, committed_metadata=too_long)
        == ErrorCode.OFFSET_METADATA_TOO_LARGE
    )
    assert _commit(client, 0, "g-zk2", "oc-v0-missing", 1) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert _fetch(client, 0, "g-zk2", topic) == (ErrorCode.NO_ERROR, -1, "")
    assert _fetch(client, 0, "g-zk2", "oc-v0-missing") == (ErrorCode.NO_ERROR, -1, "")


def test_offset_commit_v1_commit_timestamp(old_broker: KafkaBroker, client: WireClient) -> None:
    topic = _topic(old_broker, "oc-v1")
    assert _commit(client, 1, "g-v1", topic, 5, commit_timestamp=1_234_567) == ErrorCode.NO_ERROR
    assert _commit(client, 1, "g-v1-now", topic, 6) == ErrorCode.NO_ERROR
    stored = {}
    for record in old_broker.records("__consumer_offsets"):
        key = decode_key(record.key or b"")
        if isinstance(key, OffsetKey) and key.topic == topic and record.value is not None:
            stored[key.group] = decode_offset_value(record.value)
    assert (stored["g-v1"].offset, stored["g-v1"].commit_timestamp) == (5, 1_234_567)
    assert stored["g-v1-now"].commit_timestamp > 1_234_567  # -1: the time it was stored
    assert _fetch(client, 1, "g-v1", topic) == (ErrorCode.NO_ERROR, 5, "")


@pytest.fixture(scope="module")
def kraft_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(config={"minibroker.emulate.kafka.version": "3.9"}, storage="memory") as b:
        yield b


def test_kraft_releases_refuse_v0_offsets(kraft_broker: KafkaBroker) -> None:
    topic = _topic(kraft_broker, "oc-kraft")
    with WireClient(kraft_broker.bootstrap_servers) as client:
        assert _commit(client, 0, "g-kraft", topic, 3) == ErrorCode.UNSUPPORTED_VERSION
        # nothing left after the existence check: no ZooKeeper needed, the partition's error
        missing = _commit(client, 0, "g-kraft", "oc-kraft-missing", 3)
        assert missing == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _fetch(client, 0, "g-kraft", topic) == (ErrorCode.UNSUPPORTED_VERSION, -1, "")
        assert _commit(client, 1, "g-kraft", topic, 4) == ErrorCode.NO_ERROR
        assert _fetch(client, 1, "g-kraft", topic) == (ErrorCode.NO_ERROR, 4, "")
