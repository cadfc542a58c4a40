"""Kafka 4.3's admin and consumer API versions over TCP, per version: Metadata v13,
DescribeGroups v6, DescribeCluster v2, DescribeLogDirs v5, ListTransactions v2, ListOffsets
v8-11, OffsetCommit/OffsetFetch v10 (topic ids), and the APIs added for 4.3 clients:
DescribeTopicPartitions (75), ListConfigResources (74) and DescribeQuorum (55)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.auth.acls import SUPPORTED_OPERATIONS, ResourceType, operations_bitfield
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from tests.clients.runner import run_client, run_ok
from tests.wire import WireClient

INT32_MIN = -(2**31)
UNKNOWN_ID = uuid.UUID("00000000-0000-0000-0000-00000000abcd")


@pytest.fixture
def client(kafka_broker: KafkaCluster) -> Iterator[WireClient]:
    with WireClient(kafka_broker.bootstrap_servers) as wire:
        yield wire


def topic_id(kafka: KafkaCluster, name: str) -> uuid.UUID:
    return kafka.node(kafka.node_ids[0]).cluster.topics[name].topic_id


# -- Metadata v13 ------------------------------------------------------------------------------


def test_metadata_v13_answers_a_top_level_error_code(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("md", partitions=2)
    response = client.call(
        ApiKey.Metadata,
        13,
        topics=[{"name": "md", "topic_id": None}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    assert response.error_code == ErrorCode.NO_ERROR
    [topic] = response.topics
    assert (topic.name, topic.topic_id, len(topic.partitions)) == (
        "md",
        topic_id(kafka_broker, "md"),
        2,
    )


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_refuse_topics_by_id_or_without_a_name(
    kafka_broker: KafkaCluster, client: WireClient, version: int
) -> None:
    kafka_broker.create_topic("md-ids", partitions=1)
    known_id = topic_id(kafka_broker, "md-ids")
    for wanted in ({"name": "md-ids", "topic_id": known_id}, {"name": None, "topic_id": None}):
        response = client.call(
            ApiKey.Metadata,
            version,
            topics=[wanted, {"name": "other", "topic_id": None}],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert response.brokers == []
        assert [(t.name, t.error_code) for t in response.topics] == [
            (wanted["name"] or "", ErrorCode.INVALID_REQUEST),
            ("other", ErrorCode.INVALID_REQUEST),
        ]


@pytest.mark.parametrize("name", [None, ""], ids=["null-name", "empty-name"])
def test_metadata_v12_finds_a_topic_by_id(
    kafka_broker: KafkaCluster, client: WireClient, name: str | None
) -> None:
    """By id whatever the name: Java's consumer (a KIP-848 regex subscription resolving its
    assigned topic ids) sends an empty name with the id."""
    kafka_broker.create_topic("md-v12", partitions=3)
    response = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": name, "topic_id": topic_id(kafka_broker, "md-v12")}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    [topic] = response.topics
    assert (topic.error_code, topic.name, len(topic.partitions)) == (
        ErrorCode.NO_ERROR,
        "md-v12",
        3,
    )


# -- DescribeGroups v6 ---------------------------------------------------------------------------


def commit_v9(client: WireClient, group: str, topic: str, partition: int, offset: int) -> Any:
    return client.call(
        ApiKey.OffsetCommit,
        9,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )


def describe_groups(client: WireClient, version: int, groups: list[str]) -> dict[str, Any]:
    response = client.call(
        ApiKey.DescribeGroups, version, groups=groups, include_authorized_operations=True
    )
    return {group.group_id: group for group in response.groups}


def test_describe_groups_v6_answers_group_id_not_found_for_an_unknown_group(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("dg")
    commit_v9(client, "known", "dg", 0, 1)
    v6 = describe_groups(client, 6, ["known", "nope"])
    assert (v6["nope"].error_code, v6["nope"].error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    assert (v6["nope"].group_state, v6["nope"].members) == ("Dead", [])
    assert v6["nope"].authorized_operations in (None, INT32_MIN)
    assert (v6["known"].error_code, v6["known"].error_message) == (ErrorCode.NO_ERROR, None)
    assert v6["known"].group_state == "Empty"
    v5 = describe_groups(client, 5, ["nope"])
    assert (v5["nope"].error_code, v5["nope"].group_state) == (ErrorCode.NO_ERROR, "Dead")


# -- DescribeCluster v2 --------------------------------------------------------------------------


@pytest.mark.minibroker(nodes=3)
def test_describe_cluster_v2_lists_stopped_nodes_as_fenced_when_asked(
    kafka_broker: KafkaCluster,
) -> None:
    kafka_broker.stop_node(3)
    with WireClient(kafka_broker.address(1)) as client:

        def brokers(version: int, include_fenced: bool) -> dict[int, Any]:
            response = client.call(
                ApiKey.DescribeCluster,
                version,
                include_cluster_authorized_operations=False,
                endpoint_type=1,
                include_fenced_brokers=include_fenced,
            )
            assert response.error_code == ErrorCode.NO_ERROR
            return {broker.broker_id: broker for broker in response.brokers}

        assert sorted(brokers(2, False)) == [1, 2]
        with_fenced = brokers(2, True)
        assert {node: b.is_fenced for node, b in with_fenced.items()} == {
            1: False,
            2: False,
            3: True,
        }
        assert with_fenced[3].port == int(kafka_broker.address(3).rpartition(":")[2])
        assert sorted(brokers(1, True)) == [1, 2]  # v1 has no such field: live nodes only


# -- DescribeLogDirs v5 --------------------------------------------------------------------------


def test_describe_log_dirs_v5_reports_the_dir_as_not_cordoned(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("ld", partitions=2)
    response = client.call(ApiKey.DescribeLogDirs, 5, topics=[{"topic": "ld", "partitions": [1]}])
    [result] = response.results
    assert (result.error_code, result.is_cordoned) == (ErrorCode.NO_ERROR, False)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
        ("ld", [1])
    ]


# -- ListTransactions v2 -------------------------------------------------------------------------


def init_transactional_ids(client: WireClient, ids: list[str]) -> None:
    for transactional_id in ids:
        response = client.call(
            ApiKey.InitProducerId,
            4,
            transactional_id=transactional_id,
            transaction_timeout_ms=60_000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert response.error_code == ErrorCode.NO_ERROR


def list_transactions(client: WireClient, version: int, pattern: str | None) -> Any:
    return client.call(
        ApiKey.ListTransactions,
        version,
        state_filters=[],
        producer_id_filters=[],
        duration_filter=-1,
        transactional_id_pattern=pattern,
    )


def listed_ids(response: Any) -> list[str]:
    assert response.error_code == ErrorCode.NO_ERROR
    return sorted(state.transactional_id for state in response.transaction_states)


def test_list_transactions_v2_filters_by_a_whole_id_pattern(client: WireClient) -> None:
    init_transactional_ids(client, ["app-1", "app-2", "other-1", "app.x"])
    everyone = ["app-1", "app-2", "app.x", "other-1"]
    assert listed_ids(list_transactions(client, 2, "app-[0-9]+")) == ["app-1", "app-2"]
    assert listed_ids(list_transactions(client, 2, "app")) == []  # the whole id must match
    assert listed_ids(list_transactions(client, 2, ".*-1")) == ["app-1", "other-1"]
    assert listed_ids(list_transactions(client, 2, r"\Qapp.x\E")) == ["app.x"]
    assert listed_ids(list_transactions(client, 2, r"(?<name>app)-2\z")) == ["app-2"]
    assert listed_ids(list_transactions(client, 2, None)) == everyone
    assert listed_ids(list_transactions(client, 2, "")) == everyone
    assert listed_ids(list_transactions(client, 1, None)) == everyone


@pytest.mark.parametrize("pattern", ["app-(", "app-(?=1)", r"(a)\1", "a++", "(?>a)", "[z-a]"])
def test_list_transactions_v2_refuses_what_re2_cannot_compile(
    client: WireClient, pattern: str
) -> None:
    init_transactional_ids(client, ["app-1"])
    response = list_transactions(client, 2, pattern)
    assert response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert (response.transaction_states, response.unknown_state_filters) == ([], [])


# -- ListOffsets v8-11 ---------------------------------------------------------------------------


def list_offsets(
    client: WireClient, version: int, topic: str, wanted: list[tuple[int, int]]
) -> list[tuple[int, int, int, int]]:
    """(error, offset, timestamp, leader epoch) per (partition, timestamp) asked for."""
    response = client.call(
        ApiKey.ListOffsets,
        version,
        replica_id=-1,
        isolation_level=0,
        timeout_ms=5000,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": t}
                    for p, t in wanted
                ],
            }
        ],
    )
    [answered] = response.topics
    return [(p.error_code, p.offset, p.timestamp, p.leader_epoch) for p in answered.partitions]


def delete_records_before(client: WireClient, topic: str, offset: int) -> None:
    response = client.call(
        ApiKey.DeleteRecords,
        2,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "offset": offset}]}],
        timeout_ms=5000,
    )
    assert response.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR


def test_list_offsets_v11_answers_every_special_timestamp(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("lo", partitions=4)
    for timestamp in (1_000, 9_000, 5_000, 2_000):
        kafka_broker.produce("lo", b"v", partition=0, timestamp_ms=timestamp)
    delete_records_before(client, "lo", 1)
    ok = ErrorCode.NO_ERROR
    answered = list_offsets(client, 11, "lo", [(0, -1), (1, -2), (2, -3), (3, -4)])
    assert answered[0] == (ok, 4, -1, 0)  # latest
    assert answered[1] == (ok, 0, -1, 0)  # earliest of an empty partition
    assert answered[2] == (ok, -1, -1, -1)  # max timestamp of an empty partition
    answered = list_offsets(client, 11, "lo", [(0, -2), (1, -3), (2, -4), (3, -5)])
    assert answered[0] == (ok, 1, -1, 0)
    assert answered[2] == (ok, 0, -1, 0)  # earliest local: the log start offset
    assert answered[3] == (ok, -1, -1, -1)  # latest tiered: no remote storage
    [max_ts, earliest_local, pending] = list_offsets(client, 11, "lo", [(0, -3), (1, -4), (2, -6)])
    assert max_ts == (ok, 1, 9_000, 0)
    assert earliest_local == (ok, 0, -1, 0)
    assert pending == (ok, -1, -1, -1)  # earliest pending upload: no remote storage
    assert list_offsets(client, 11, "lo", [(0, -4)]) == [(ok, 1, -1, 0)]
    assert list_offsets(client, 10, "lo", [(0, 4_000)]) == [(ok, 1, 9_000, 0)]


@pytest.mark.parametrize(
    ("version", "timestamp"),
    [(6, -3), (7, -4), (8, -5), (10, -6), (11, -7), (11, -100)],
)
def test_list_offsets_refuses_a_special_timestamp_newer_than_the_version(
    kafka_broker: KafkaCluster, client: WireClient, version: int, timestamp: int
) -> None:
    kafka_broker.create_topic("lv")
    assert list_offsets(client, version, "lv", [(0, timestamp)]) == [
        (ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1)
    ]
    # checked before the partition is looked up, as Kafka's ReplicaManager does
    assert list_offsets(client, version, "no-such-topic", [(0, timestamp)]) == [
        (ErrorCode.UNSUPPORTED_VERSION, -1, -1, -1)
    ]
    assert list_offsets(client, version, "no-such-topic", [(0, -2)])[0][0] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


def test_list_offsets_answers_invalid_request_for_a_partition_asked_twice(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("ld2", partitions=2)
    answered = list_offsets(client, 11, "ld2", [(0, -1), (1, -1), (0, -2)])
    assert [error for error, *_ in answered] == [
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NO_ERROR,
        ErrorCode.INVALID_REQUEST,
    ]


# -- OffsetCommit v10 / OffsetFetch v10 ----------------------------------------------------------


def commit_v10(
    client: WireClient, group: str, by_id: dict[uuid.UUID, list[int]], generation: int = -1
) -> dict[uuid.UUID, list[tuple[int, int]]]:
    response = client.call(
        ApiKey.OffsetCommit,
        10,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "topic_id": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": 10 + partition,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                    for partition in partitions
                ],
            }
            for topic, partitions in by_id.items()
        ],
    )
    return {
        topic.topic_id: [(p.partition_index, p.error_code) for p in topic.partitions]
        for topic in response.topics
    }


def fetch_v10(
    client: WireClient, group: str, by_id: dict[uuid.UUID, list[int]] | None
) -> dict[uuid.UUID, list[tuple[int, int, str, int]]]:
    response = client.call(
        ApiKey.OffsetFetch,
        10,
        groups=[
            {
                "group_id": group,
                "member_id": None,
                "member_epoch": -1,
                "topics": None
                if by_id is None
                else [
                    {"topic_id": topic, "partition_indexes": partitions}
                    for topic, partitions in by_id.items()
                ],
            }
        ],
        require_stable=False,
    )
    [answered] = response.groups
    assert answered.error_code == ErrorCode.NO_ERROR
    return {
        topic.topic_id: [
            (p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in topic.partitions
        ]
        for topic in answered.topics
    }


def test_offset_commit_v10_commits_by_topic_id_under_the_topic_name(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("oc", partitions=3)
    oc = topic_id(kafka_broker, "oc")
    answered = commit_v10(client, "g10", {UNKNOWN_ID: [0, 1], oc: [0, 2]})
    assert list(answered) == [UNKNOWN_ID, oc]  # topics refused by id first, as Kafka
    assert answered[UNKNOWN_ID] == [
        (0, ErrorCode.UNKNOWN_TOPIC_ID),
        (1, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert answered[oc] == [(0, ErrorCode.NO_ERROR), (2, ErrorCode.NO_ERROR)]
    assert kafka_broker.committed_offsets("g10") == {("oc", 0): 10, ("oc", 2): 12}
    # a v9 (by name) client reads the same offsets
    response = client.call(
        ApiKey.OffsetFetch,
        9,
        groups=[
            {
                "group_id": "g10",
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": "oc", "partition_indexes": [2]}],
            }
        ],
        require_stable=False,
    )
    assert response.groups[0].topics[0].partitions[0].committed_offset == 12


def test_offset_commit_v10_keeps_the_group_checks(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("og", partitions=1)
    og = topic_id(kafka_broker, "og")
    answered = commit_v10(client, "fresh", {og: [0]}, generation=5)
    assert answered == {og: [(0, ErrorCode.ILLEGAL_GENERATION)]}
    # only unknown ids: the group never sees the request, and is not created
    assert commit_v10(client, "ghost", {UNKNOWN_ID: [0]}) == {
        UNKNOWN_ID: [(0, ErrorCode.UNKNOWN_TOPIC_ID)]
    }
    assert describe_groups(client, 6, ["ghost"])["ghost"].error_code == (
        ErrorCode.GROUP_ID_NOT_FOUND
    )


def test_offset_fetch_v10_answers_by_topic_id(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("of", partitions=2)
    kafka_broker.create_topic("of2", partitions=1)
    of, of2 = topic_id(kafka_broker, "of"), topic_id(kafka_broker, "of2")
    commit_v9(client, "gf", "of", 1, 41)
    commit_v10(client, "gf", {of2: [0]})
    assert fetch_v10(client, "gf", {of: [0, 1], UNKNOWN_ID: [3]}) == {
        of: [(0, -1, "", ErrorCode.NO_ERROR), (1, 41, "", ErrorCode.NO_ERROR)],
        UNKNOWN_ID: [(3, -1, "", ErrorCode.UNKNOWN_TOPIC_ID)],
    }
    assert fetch_v10(client, "gf", None) == {
        of: [(1, 41, "", ErrorCode.NO_ERROR)],
        of2: [(0, 10, "m", ErrorCode.NO_ERROR)],
    }


# -- DescribeTopicPartitions (75) ----------------------------------------------------------------


def describe_partitions(
    client: WireClient, topics: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> Any:
    return client.call(
        ApiKey.DescribeTopicPartitions,
        0,
        topics=[{"name": name} for name in topics],
        response_partition_limit=limit,
        cursor=None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]},
    )


def pages(client: WireClient, topics: list[str], limit: int) -> list[list[tuple[str, int]]]:
    """Every page Java's AdminClient would ask for, as (topic, partition) lists."""
    answered: list[list[tuple[str, int]]] = []
    cursor: tuple[str, int] | None = None
    while True:
        response = describe_partitions(client, topics, limit, cursor)
        answered.append(
            [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
        )
        if response.next_cursor is None:
            return answered
        cursor = (response.next_cursor.topic_name, response.next_cursor.partition_index)


def test_describe_topic_partitions_pages_through_every_topic_by_cursor(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("b-topic", partitions=5)
    kafka_broker.create_topic("a-topic", partitions=3)
    kafka_broker.create_topic("c-topic", partitions=1)
    commit_v9(client, "creates-offsets-topic", "c-topic", 0, 1)
    offsets_partitions = len(kafka_broker.node(1).cluster.topics["__consumer_offsets"].partitions)
    assert pages(client, ["c-topic", "a-topic", "b-topic"], limit=3) == [
        [("a-topic", 0), ("a-topic", 1), ("a-topic", 2)],
        [("b-topic", 0), ("b-topic", 1), ("b-topic", 2)],
        [("b-topic", 3), ("b-topic", 4), ("c-topic", 0)],
    ]
    # the cursor at a topic boundary names the next topic's partition 0
    first = describe_partitions(client, ["a-topic", "b-topic"], limit=3)
    cursor = first.next_cursor
    assert (cursor.topic_name, cursor.partition_index) == ("b-topic", 0)
    # no topics named: every topic, internal ones included, sorted by name
    everything = [pair for page in pages(client, [], limit=4) for pair in page]
    assert everything == [("__consumer_offsets", p) for p in range(offsets_partitions)] + [
        ("a-topic", 0),
        ("a-topic", 1),
        ("a-topic", 2),
        *[("b-topic", p) for p in range(5)],
        ("c-topic", 0),
    ]
    response = describe_partitions(client, [], limit=1)
    assert (response.topics[0].name, response.topics[0].is_internal) == (
        "__consumer_offsets",
        True,
    )


def test_describe_topic_partitions_describes_each_topic_as_metadata_does(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("dtp", partitions=2)
    response = describe_partitions(client, ["dtp", "missing", "bad name!"])
    by_name = {topic.name: topic for topic in response.topics}
    assert [topic.name for topic in response.topics] == ["bad name!", "dtp", "missing"]
    dtp = by_name["dtp"]
    assert (dtp.error_code, dtp.topic_id, dtp.is_internal) == (
        ErrorCode.NO_ERROR,
        topic_id(kafka_broker, "dtp"),
        False,
    )
    assert dtp.topic_authorized_operations == operations_bitfield(
        SUPPORTED_OPERATIONS[ResourceType.TOPIC]
    )
    assert [
        (p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
        for p in dtp.partitions
    ] == [(0, 1, 0, [1], [1]), (1, 1, 0, [1], [1])]
    assert (dtp.partitions[0].eligible_leader_replicas, dtp.partitions[0].offline_replicas) == (
        [],
        [],
    )
    assert by_name["missing"].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by_name["missing"].topic_id in (None, uuid.UUID(int=0))
    assert by_name["bad name!"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert response.next_cursor is None


def test_describe_topic_partitions_limit_and_cursor_edges(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("e1", partitions=3)
    kafka_broker.create_topic("e2", partitions=2)
    # a limit below 1 still answers one partition
    response = describe_partitions(client, ["e1"], limit=0)
    assert [p.partition_index for p in response.topics[0].partitions] == [0]
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == ("e1", 1)
    # topics before the cursor's are left out; a cursor past the last partition gives none
    response = describe_partitions(client, ["e1", "e2"], cursor=("e1", 7))
    assert [(t.name, len(t.partitions)) for t in response.topics] == [("e1", 0), ("e2", 2)]
    # a missing topic does not count against the limit, but a full page stops before it
    response = describe_partitions(client, ["e1", "e1-missing"], limit=3)
    assert [t.name for t in response.topics] == ["e1"]
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == (
        "e1-missing",
        0,
    )


@pytest.mark.parametrize("cursor", [("z-not-listed", 0), ("e3", -1)])
def test_describe_topic_partitions_refuses_a_cursor_that_does_not_fit(
    kafka_broker: KafkaCluster, client: WireClient, cursor: tuple[str, int]
) -> None:
    kafka_broker.create_topic("e3")
    response = describe_partitions(client, ["e3"], cursor=cursor)
    assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
        ("e3", ErrorCode.INVALID_REQUEST, [])
    ]
    assert describe_partitions(client, [], cursor=("e3", -1)).topics == []


@pytest.mark.minibroker(config={"max.request.partition.size.limit": 2})
def test_describe_topic_partitions_limit_is_capped_by_the_broker_setting(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("capped", partitions=3)
    response = describe_partitions(client, ["capped"], limit=100)
    assert len(response.topics[0].partitions) == 2
    assert response.next_cursor.partition_index == 2


# -- ListConfigResources (74) --------------------------------------------------------------------


def config_resources(client: WireClient, version: int, types: list[int]) -> Any:
    return client.call(ApiKey.ListConfigResources, version, resource_types=types)


def listed(response: Any) -> list[tuple[int, str]]:
    return [(r.resource_type, r.resource_name) for r in response.config_resources]


@pytest.mark.minibroker(nodes=2)
def test_list_config_resources_lists_groups_brokers_and_topics(
    kafka_broker: KafkaCluster,
) -> None:
    kafka_broker.create_topic("t-b")
    kafka_broker.create_topic("t-a")
    with WireClient(kafka_broker.address(kafka_broker.coordinator("cfg-group"))) as client:
        assert commit_v9(client, "cfg-group", "t-a", 0, 1).topics[0].partitions[0].error_code == 0
        everything = config_resources(client, 1, [])
        assert everything.error_code == ErrorCode.NO_ERROR
        topics = sorted(kafka_broker.topics())
        assert "__consumer_offsets" in topics
        assert listed(everything) == [
            (32, "cfg-group"),
            (8, "1"),
            (8, "2"),
            (4, "1"),
            (4, "2"),
            *[(2, name) for name in topics],
        ]
        assert listed(config_resources(client, 1, [2, 2])) == [(2, name) for name in topics]
        assert listed(config_resources(client, 1, [16])) == []
        assert listed(config_resources(client, 0, [])) == []  # v0: client metrics only
        kafka_broker.set_telemetry_subscription(["org.apache.kafka."], name="producers")
        assert listed(config_resources(client, 0, [])) == [(16, "producers")]
        assert listed(config_resources(client, 1, [16, 4])) == [
            (16, "producers"),
            (4, "1"),
            (4, "2"),
        ]
        refused = config_resources(client, 1, [2, 64])
        assert (refused.error_code, refused.config_resources) == (ErrorCode.UNSUPPORTED_VERSION, [])


# -- DescribeQuorum (55) -------------------------------------------------------------------------


def describe_quorum(client: WireClient, version: int, topics: list[dict[str, Any]]) -> Any:
    return client.call(ApiKey.DescribeQuorum, version, topics=topics)


METADATA_PARTITION = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_answers_a_single_voter(
    kafka_broker: KafkaCluster, client: WireClient, version: int
) -> None:
    response = describe_quorum(client, version, METADATA_PARTITION)
    assert response.error_code == ErrorCode.NO_ERROR
    [topic] = response.topics
    [partition] = topic.partitions
    assert (topic.topic_name, partition.partition_index, partition.error_code) == (
        "__cluster_metadata",
        0,
        ErrorCode.NO_ERROR,
    )
    assert (partition.leader_id, partition.leader_epoch, partition.observers) == (1, 1, [])
    [voter] = partition.current_voters
    assert (voter.replica_id, voter.log_end_offset) == (1, partition.high_watermark)
    if version >= 1:
        assert voter.last_caught_up_timestamp > 0
    if version >= 2:
        host, _, port = kafka_broker.bootstrap_servers.rpartition(":")
        [node] = response.nodes
        assert node.node_id == 1
        assert [(e.name, e.host, e.port) for e in node.listeners] == [
            ("PLAINTEXT", host, int(port))
        ]


@pytest.mark.minibroker(nodes=3)
def test_describe_quorum_in_a_cluster_has_the_other_nodes_as_observers(
    kafka_broker: KafkaCluster,
) -> None:
    kafka_broker.stop_node(1)
    with WireClient(kafka_broker.address(3)) as client:
        [partition] = describe_quorum(client, 2, METADATA_PARTITION).topics[0].partitions
    assert partition.leader_id == 2
    assert [v.replica_id for v in partition.current_voters] == [2]
    assert [o.replica_id for o in partition.observers] == [3]


def test_describe_quorum_refuses_another_partition(client: WireClient) -> None:
    response = describe_quorum(
        client, 2, [{"topic_name": "orders", "partitions": [{"partition_index": 0}]}]
    )
    assert response.error_code == ErrorCode.NO_ERROR
    [partition] = response.topics[0].partitions
    assert (partition.error_code, partition.error_message) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        "This server does not host this topic-partition.",
    )
    two = describe_quorum(
        client,
        2,
        [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}] * 2}],
    )
    assert [p.error_code for p in two.topics[0].partitions] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ] * 2


# -- real clients --------------------------------------------------------------------------------


def java(kafka: KafkaCluster, op: str, **fields: Any) -> dict[str, Any]:
    return run_ok("java-4.3", {"op": op, "bootstrap": kafka.bootstrap_servers, **fields})


@pytest.mark.clients
def test_java_describe_topics_pages_through_describe_topic_partitions(
    kafka_broker: KafkaCluster,
) -> None:
    kafka_broker.create_topic("jt-many", partitions=5)
    kafka_broker.create_topic("jt-one", partitions=1)
    result = java(
        kafka_broker,
        "describe_topics",
        topics=["jt-many", "jt-one", "jt-missing"],
        partition_limit=2,
    )
    by_name = {topic["name"]: topic for topic in result["topics"]}
    assert [p["partition"] for p in by_name["jt-many"]["partitions"]] == [0, 1, 2, 3, 4]
    assert by_name["jt-many"]["partitions"][4] == {
        "partition": 4,
        "leader": 1,
        "replicas": [1],
        "isr": [1],
    }
    assert by_name["jt-one"]["error_name"] is None
    assert by_name["jt-missing"]["error_name"] == "UNKNOWN_TOPIC_OR_PARTITION"
    sent = kafka_broker.requests(ApiKey.DescribeTopicPartitions)
    assert {request.body.response_partition_limit for request in sent} == {2}
    cursors = [
        None if r.body.cursor is None else (r.body.cursor.topic_name, r.body.cursor.partition_index)
        for r in sent
    ]
    # names sorted: jt-many, jt-missing (counts for nothing), jt-one fills the third page
    assert cursors == [None, ("jt-many", 2), ("jt-many", 4)]


@pytest.mark.clients
def test_java_describe_topics_lists_internal_topics_through_describe_topic_partitions(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    kafka_broker.create_topic("jt-plain", partitions=2)
    commit_v9(client, "jt-group", "jt-plain", 0, 1)
    result = java(kafka_broker, "describe_topics", topics=None)
    by_name = {topic["name"]: topic for topic in result["topics"]}
    assert by_name["__consumer_offsets"]["internal"] is True
    assert by_name["jt-plain"]["internal"] is False
    assert kafka_broker.requests(ApiKey.DescribeTopicPartitions)


@pytest.mark.clients
@pytest.mark.minibroker(nodes=3)
def test_java_describe_metadata_quorum(kafka_broker: KafkaCluster) -> None:
    result = java(kafka_broker, "describe_quorum")
    assert (result["leader_id"], result["leader_epoch"]) == (1, 1)
    assert [voter["replica_id"] for voter in result["voters"]] == [1]
    assert sorted(observer["replica_id"] for observer in result["observers"]) == [2, 3]
    host, _, port = kafka_broker.address(1).rpartition(":")
    assert result["nodes"] == [
        {"id": 1, "endpoints": [{"name": "PLAINTEXT", "host": host, "port": int(port)}]}
    ]
    assert {r.api_version for r in kafka_broker.requests(ApiKey.DescribeQuorum)} == {2}


@pytest.mark.clients
def test_java_list_transactions_with_an_id_pattern(
    kafka_broker: KafkaCluster, client: WireClient
) -> None:
    init_transactional_ids(client, ["app-1", "app-2", "other-1"])
    result = java(kafka_broker, "list_transactions", pattern="app-.*")
    assert sorted(t["transactional_id"] for t in result["transactions"]) == ["app-1", "app-2"]
    assert [
        r.body.transactional_id_pattern for r in kafka_broker.requests(ApiKey.ListTransactions)
    ] == ["app-.*"]
    assert {r.api_version for r in kafka_broker.requests(ApiKey.ListTransactions)} == {2}
    refused = run_client(
        "java-4.3",
        {
            "op": "list_transactions",
            "bootstrap": kafka_broker.bootstrap_servers,
            "pattern": "app-(",
        },
    )
    assert (refused["ok"], refused["error_name"]) == (False, "INVALID_REGULAR_EXPRESSION")


@pytest.mark.clients
def test_java_consumer_commits_and_fetches_by_topic_id(kafka_broker: KafkaCluster) -> None:
    kafka_broker.create_topic("jc", partitions=2)
    offsets = [
        {"topic": "jc", "partition": 0, "offset": 5, "metadata": "five"},
        {"topic": "jc", "partition": 1, "offset": 9, "metadata": ""},
    ]
    # Java 4.3's KIP-848 consumer commits by topic id (v10) once its metadata has the topic's
    # id; a commit sent right after assign(), before the metadata answer, goes by name (v9), as
    # it would to Kafka. Its classic consumer always commits by name (v9).
    for _ in range(3):
        kafka_broker.clear_requests()
        result = java(
            kafka_broker,
            "commit_offsets",
            group="jc-ids",
            offsets=offsets,
            config={"group.protocol": "consumer"},
        )
        if {r.api_version for r in kafka_broker.requests(ApiKey.OffsetCommit)} == {10}:
            break
    assert sorted((o["partition"], o["offset"], o["metadata"]) for o in result["offsets"]) == [
        (0, 5, "five"),
        (1, 9, ""),
    ]
    assert {r.api_version for r in kafka_broker.requests(ApiKey.OffsetCommit)} == {10}
    assert {r.api_version for r in kafka_broker.requests(ApiKey.OffsetFetch)} == {10}
    committed = kafka_broker.requests(ApiKey.OffsetCommit)[0].body
    assert [t.topic_id for t in committed.topics] == [topic_id(kafka_broker, "jc")]
    assert kafka_broker.committed_offsets("jc-ids") == {("jc", 0): 5, ("jc", 1): 9}
    kafka_broker.clear_requests()
    classic = java(kafka_broker, "commit_offsets", group="jc-ids", offsets=offsets[:1])
    assert [o["offset"] for o in classic["offsets"]] == [5]
    assert {r.api_version for r in kafka_broker.requests(ApiKey.OffsetCommit)} == {9}


@pytest.mark.clients
def test_confluent_lists_the_max_timestamp_offset(kafka_broker: KafkaCluster) -> None:
    kafka_broker.create_topic("cm", partitions=2)
    for timestamp in (1_000, 7_000, 3_000):
        kafka_broker.produce("cm", b"v", partition=0, timestamp_ms=timestamp)
    result = run_ok(
        "confluent-kafka",
        {
            "op": "list_offsets",
            "bootstrap": kafka_broker.bootstrap_servers,
            "topic": "cm",
            "spec": "max_timestamp",
        },
    )
    by_partition = {o["partition"]: (o["offset"], o["timestamp"]) for o in result["offsets"]}
    assert by_partition == {0: (1, 7_000), 1: (-1, -1)}
    [request] = kafka_broker.requests(ApiKey.ListOffsets)
    assert request.api_version >= 7
    assert {p.timestamp for t in request.body.topics for p in t.partitions} == {-3}


@pytest.mark.clients
def test_java_lists_config_resources(kafka_broker: KafkaCluster, client: WireClient) -> None:
    kafka_broker.create_topic("jl")
    commit_v9(client, "jl-group", "jl", 0, 1)
    result = java(kafka_broker, "list_config_resources", types=["topic", "group", "broker"])
    assert sorted((r["type"], r["name"]) for r in result["resources"]) == [
        ("broker", "1"),
        ("group", "jl-group"),
        ("topic", "__consumer_offsets"),
        ("topic", "jl"),
    ]
    [request] = kafka_broker.requests(ApiKey.ListConfigResources)
    assert (request.api_version, sorted(request.body.resource_types)) == (1, [2, 4, 32])


@pytest.mark.clients
def test_describing_an_unknown_group_as_each_java_client_version_does(
    kafka_broker: KafkaCluster,
) -> None:
    job = {"op": "describe_groups", "bootstrap": kafka_broker.bootstrap_servers}
    [new] = run_ok("java-4.3", {**job, "groups": ["nope"]})["groups"]
    assert (new["error_name"], new["error"].split(": ", 1)[1]) == (
        "GROUP_ID_NOT_FOUND",
        "Group nope not found.",
    )
    [old] = run_ok("java-3.9", {**job, "groups": ["nope"]})["groups"]
    assert (old["error_name"], old["state"]) == (None, "Dead")
    assert [r.api_version for r in kafka_broker.requests(ApiKey.DescribeGroups)] == [6, 5]
