"""Authorization of the data-path and admin APIs over the wire, as Kafka 4.3 checks them: a
broker with the StandardAuthorizer, the PLAINTEXT principal User:ANONYMOUS, and ACLs granted
per test (no ACL on a resource denies it)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import RecordInput, build_batch
from minibroker.testing import KafkaBroker
from tests.wire import WireClient

ME = "User:ANONYMOUS"
E = ErrorCode
ZERO_ID = uuid.UUID(int=0)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS = 9, 10, 11
TOPIC_AUTHORIZATION_FAILED_MESSAGE = "Topic authorization failed."


def batch(*, transactional: bool = False) -> bytes:
    records: list[RecordInput] = [(None, b"value", [], 1_000)]
    if not transactional:
        return build_batch(records)
    return build_batch(
        records, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True
    )


def produce(client: WireClient, *topics: str, transactional_id: str | None = None) -> Any:
    return client.call(
        ApiKey.Produce,
        9,
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            {
                "name": topic,
                "partition_data": [
                    {"index": 0, "records": batch(transactional=transactional_id is not None)}
                ],
            }
            for topic in topics
        ],
    )


def produce_errors(response: Any) -> dict[str, int]:
    return {
        topic.name: partition.error_code
        for topic in response.responses
        for partition in topic.partition_responses
    }


def metadata(client: WireClient, version: int = 12, **fields: Any) -> Any:
    defaults: dict[str, Any] = {
        "topics": None,
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    if 8 <= version <= 10:
        defaults["include_cluster_authorized_operations"] = False
    return client.call(ApiKey.Metadata, version, **{**defaults, **fields})


def named(*names: str) -> list[dict[str, Any]]:
    return [{"name": name, "topic_id": ZERO_ID} for name in names]


def topic_id(broker: KafkaBroker, client: WireClient, name: str) -> uuid.UUID:
    broker.add_acl(ME, "DESCRIBE", topic=name)
    found = metadata(client, topics=named(name)).topics[0]
    broker.remove_acls(principal=ME, topic=name)
    return uuid.UUID(str(found.topic_id))


def partition_errors(topics: Any, name_field: str = "name") -> dict[str, int]:
    return {
        getattr(topic, name_field): partition.error_code
        for topic in topics
        for partition in topic.partitions
    }


# ---- Produce -----------------------------------------------------------------------------


def test_produce_needs_write_on_the_topic(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("allowed")
    broker.create_topic("denied")
    broker.add_acl(ME, "WRITE", topic="allowed")
    response = produce(client, "allowed", "denied")
    assert produce_errors(response) == {
        "allowed": E.NO_ERROR,
        "denied": E.TOPIC_AUTHORIZATION_FAILED,
    }


def test_produce_to_an_unknown_topic_is_refused_before_its_existence_is_checked(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.add_acl(ME, "WRITE", topic="known-to-acls")
    response = produce(client, "known-to-acls", "secret")
    assert produce_errors(response) == {
        "known-to-acls": E.UNKNOWN_TOPIC_OR_PARTITION,
        "secret": E.TOPIC_AUTHORIZATION_FAILED,
    }


def test_transactional_produce_needs_write_on_the_transactional_id(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("txn")
    broker.add_acl(ME, "WRITE", topic="txn")
    response = produce(client, "txn", transactional_id="tx")
    assert produce_errors(response) == {"txn": E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    broker.add_acl(ME, "WRITE", transactional_id="tx")
    # Past the ACL check, the coordinator's verification answers (no transaction begun).
    response = produce(client, "txn", transactional_id="tx")
    assert produce_errors(response)["txn"] != E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


# ---- Fetch -------------------------------------------------------------------------------


def fetch(
    client: WireClient,
    topics: list[str],
    *,
    replica_id: int = -1,
    session_id: int = 0,
    epoch: int = -1,
) -> Any:
    return client.call(
        ApiKey.Fetch,
        12,
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=[
            {
                "topic": topic,
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
            for topic in topics
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def fetch_errors(response: Any) -> dict[str, int]:
    return {
        topic.topic: partition.error_code
        for topic in response.responses
        for partition in topic.partitions
    }


def test_consumer_fetch_needs_read_on_the_topic(broker: KafkaBroker, client: WireClient) -> None:
    for name in ("readable", "hidden"):
        broker.create_topic(name)
        broker.produce(name, b"v")
    broker.add_acl(ME, "READ", topic="readable")
    response = fetch(client, ["readable", "hidden", "missing"])
    assert fetch_errors(response) == {
        "readable": E.NO_ERROR,
        "hidden": E.TOPIC_AUTHORIZATION_FAILED,
        "missing": E.TOPIC_AUTHORIZATION_FAILED,
    }
    by_topic = {topic.topic: topic.partitions[0] for topic in response.responses}
    assert by_topic["readable"].records
    assert (by_topic["hidden"].high_watermark, by_topic["hidden"].records) == (-1, b"")


def test_refused_partitions_stay_in_the_fetch_session(
    broker: KafkaBroker, client: WireClient
) -> None:
    for name in ("readable", "hidden"):
        broker.create_topic(name)
    broker.add_acl(ME, "READ", topic="readable")
    full = fetch(client, ["readable", "hidden"], epoch=0)
    assert full.session_id != 0
    assert fetch_errors(full)["hidden"] == E.TOPIC_AUTHORIZATION_FAILED
    incremental = fetch(client, [], session_id=full.session_id, epoch=1)
    # Nothing changed on the readable partition; the refused one is answered again.
    assert fetch_errors(incremental) == {"hidden": E.TOPIC_AUTHORIZATION_FAILED}
    broker.add_acl(ME, "READ", topic="hidden")
    again = fetch(client, [], session_id=full.session_id, epoch=2)
    assert fetch_errors(again) == {"hidden": E.NO_ERROR}


def test_follower_fetch_needs_cluster_action(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("replicated")
    broker.add_acl(ME, "READ", topic="replicated")
    refused = fetch(client, ["replicated"], replica_id=1)
    assert fetch_errors(refused) == {"replicated": E.TOPIC_AUTHORIZATION_FAILED}
    broker.add_acl(ME, "CLUSTER_ACTION", cluster=True)
    assert fetch_errors(fetch(client, ["replicated"], replica_id=1)) == {"replicated": E.NO_ERROR}


def test_fetch_by_unknown_topic_id_stays_unknown_topic_id(
    broker: KafkaBroker, client: WireClient
) -> None:
    unknown = uuid.uuid4()
    response = client.call(
        ApiKey.Fetch,
        13,
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic_id": unknown,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1024,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    assert response.responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_ID


# ---- ListOffsets, OffsetForLeaderEpoch, DescribeProducers --------------------------------


def test_list_offsets_needs_describe_and_lists_refused_topics_last(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("hidden")
    broker.create_topic("seen")
    broker.add_acl(ME, "DESCRIBE", topic="seen")
    response = client.call(
        ApiKey.ListOffsets,
        7,
        replica_id=-1,
        isolation_level=0,
        topics=[
            {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for name in ("hidden", "seen")
        ],
    )
    assert [topic.name for topic in response.topics] == ["seen", "hidden"]
    assert partition_errors(response.topics) == {
        "seen": E.NO_ERROR,
        "hidden": E.TOPIC_AUTHORIZATION_FAILED,
    }
    refused = response.topics[1].partitions[0]
    assert (refused.offset, refused.timestamp) == (-1, -1)


def offset_for_leader_epoch(client: WireClient, *topics: str) -> Any:
    return client.call(
        ApiKey.OffsetForLeaderEpoch,
        4,
        replica_id=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
            }
            for topic in topics
        ],
    )


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("a")
    broker.create_topic("b")
    broker.add_acl(ME, "DESCRIBE", topic="b")
    response = offset_for_leader_epoch(client, "a", "b")
    assert partition_errors(response.topics, "topic") == {
        "a": E.TOPIC_AUTHORIZATION_FAILED,
        "b": E.NO_ERROR,
    }
    assert [topic.topic for topic in response.topics] == ["b", "a"]
    broker.add_acl(ME, "CLUSTER_ACTION", cluster=True)
    response = offset_for_leader_epoch(client, "a", "b")
    assert partition_errors(response.topics, "topic") == {"a": E.NO_ERROR, "b": E.NO_ERROR}


def test_describe_producers_needs_read(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("described")
    broker.create_topic("private")
    broker.add_acl(ME, "READ", topic="described")
    response = client.call(
        ApiKey.DescribeProducers,
        0,
        topics=[{"name": name, "partition_indexes": [0]} for name in ("described", "private")],
    )
    results = {topic.name: topic.partitions[0] for topic in response.topics}
    assert results["described"].error_code == E.NO_ERROR
    assert (results["private"].error_code, results["private"].error_message) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        TOPIC_AUTHORIZATION_FAILED_MESSAGE,
    )


# ---- Metadata ----------------------------------------------------------------------------


def test_metadata_all_topics_leaves_out_the_undescribable(
    broker: KafkaBroker, client: WireClient
) -> None:
    for name in ("visible", "invisible"):
        broker.create_topic(name)
    broker.add_acl(ME, "DESCRIBE", topic="visible")
    assert [topic.name for topic in metadata(client).topics] == ["visible"]
    assert [topic.name for topic in metadata(client, version=0, topics=[]).topics] == ["visible"]


def test_metadata_named_topic_not_describable_is_topic_authorization_failed(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("exists")
    broker.create_topic("__consumer_offsets")
    broker.create_topic("shown")
    broker.add_acl(ME, "DESCRIBE", topic="shown")
    topics = metadata(client, topics=named("exists", "shown", "absent", "__consumer_offsets"))
    by_name = {topic.name: topic for topic in topics.topics}
    assert topics.topics[0].name == "shown"
    for name in ("exists", "absent", "__consumer_offsets"):
        refused = by_name[name]
        assert refused.error_code == E.TOPIC_AUTHORIZATION_FAILED  # not UNKNOWN_TOPIC_OR_...
        assert refused.topic_id is None  # the zero id
        assert (refused.is_internal, refused.partitions) == (False, [])
    assert by_name["shown"].error_code == E.NO_ERROR


def test_metadata_by_topic_id_refused_answers_the_id_without_the_name(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("by-id")
    known = topic_id(broker, client, "by-id")
    response = metadata(client, topics=[{"name": None, "topic_id": known}])
    refused = response.topics[0]
    assert refused.error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert (refused.name, uuid.UUID(str(refused.topic_id))) == (None, known)


def test_metadata_auto_creation_needs_create(broker: KafkaBroker, client: WireClient) -> None:
    broker.add_acl(ME, "DESCRIBE", topic="auto-", pattern="prefixed")
    refused = metadata(client, topics=named("auto-1"), allow_auto_topic_creation=True)
    assert refused.topics[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert "auto-1" not in broker.topics()
    not_asked = metadata(client, topics=named("auto-1"))
    assert not_asked.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    broker.add_acl(ME, "CREATE", topic="auto-1")
    created = metadata(client, topics=named("auto-1"), allow_auto_topic_creation=True)
    assert created.topics[0].error_code in (E.NO_ERROR, E.LEADER_NOT_AVAILABLE)
    broker.add_acl(ME, "CREATE", cluster=True)
    created = metadata(client, topics=named("auto-2"), allow_auto_topic_creation=True)
    assert created.topics[0].error_code in (E.NO_ERROR, E.LEADER_NOT_AVAILABLE)
    assert {"auto-1", "auto-2"} <= set(broker.topics())


def test_metadata_authorized_operations_are_the_principals(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("ops")
    broker.add_acl(ME, "READ", topic="ops")
    broker.add_acl(ME, "ALTER_CONFIGS", topic="ops")
    topics = metadata(
        client, version=10, topics=named("ops"), include_topic_authorized_operations=True
    )
    # READ implies DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS.
    assert topics.topics[0].authorized_operations == {
        READ,
        DESCRIBE,
        DESCRIBE_CONFIGS,
        ALTER_CONFIGS,
    }
    no_describe = metadata(client, version=8, include_cluster_authorized_operations=True)
    assert no_describe.authorized_operations == set()  # 0: no DESCRIBE on the cluster
    broker.add_acl(ME, "ALTER", cluster=True)
    with_describe = metadata(client, version=8, include_cluster_authorized_operations=True)
    assert with_describe.authorized_operations == {ALTER, DESCRIBE}


# ---- DescribeTopicPartitions, DescribeCluster --------------------------------------------


def test_describe_topic_partitions_needs_describe(broker: KafkaBroker, client: WireClient) -> None:
    for name in ("a-open", "b-closed"):
        broker.create_topic(name)
    broker.add_acl(ME, "WRITE", topic="a-open")
    response = client.call(
        ApiKey.DescribeTopicPartitions,
        0,
        topics=[{"name": "b-closed"}, {"name": "a-open"}],
        response_partition_limit=100,
        cursor=None,
    )
    assert [(topic.name, topic.error_code) for topic in response.topics] == [
        ("a-open", E.NO_ERROR),
        ("b-closed", E.TOPIC_AUTHORIZATION_FAILED),
    ]
    assert response.topics[0].topic_authorized_operations == (1 << WRITE) | (1 << DESCRIBE)
    assert response.topics[1].topic_authorized_operations == -(2**31)
    everything = client.call(
        ApiKey.DescribeTopicPartitions, 0, topics=[], response_partition_limit=100, cursor=None
    )
    assert [topic.name for topic in everything.topics] == ["a-open"]


def test_describe_cluster_operations_need_describe_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    def operations() -> Any:
        return client.call(
            ApiKey.DescribeCluster,
            1,
            include_cluster_authorized_operations=True,
            endpoint_type=1,
        ).authorized_operations

    broker.add_acl(ME, "ALTER_CONFIGS", cluster=True)
    assert operations() == set()  # 0 (not INT32_MIN), though ALTER_CONFIGS is allowed
    broker.add_acl(ME, "DESCRIBE", cluster=True)
    assert operations() == {DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS}


# ---- CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords -------------------------


def create_topics(client: WireClient, *names: str) -> dict[str, Any]:
    response = client.call(
        ApiKey.CreateTopics,
        7,
        topics=[
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name in names
        ],
        timeout_ms=5000,
        validate_only=False,
    )
    return {topic.name: topic for topic in response.topics}


def test_create_topics_needs_create(broker: KafkaBroker, client: WireClient) -> None:
    broker.add_acl(ME, "CREATE", topic="mine")
    broker.add_acl(ME, "DESCRIBE_CONFIGS", topic="mine")
    results = create_topics(client, "theirs", "mine")
    assert list(results) == ["mine", "theirs"]
    assert (results["theirs"].error_code, results["theirs"].error_message) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        "Authorization failed.",
    )
    mine = results["mine"]
    assert (mine.error_code, mine.topic_config_error_code, mine.num_partitions) == (
        E.NO_ERROR,
        E.NO_ERROR,
        1,
    )
    assert mine.configs
    assert set(broker.topics()) >= {"mine"} and "theirs" not in broker.topics()


def test_create_topics_without_describe_configs_hides_the_configs(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.add_acl(ME, "CREATE", cluster=True)
    created = create_topics(client, "quiet")["quiet"]
    assert (created.error_code, created.topic_config_error_code) == (
        E.NO_ERROR,
        E.TOPIC_AUTHORIZATION_FAILED,
    )
    assert (created.num_partitions, created.replication_factor, created.configs) == (-1, -1, [])
    assert uuid.UUID(str(created.topic_id)) != ZERO_ID
    assert "quiet" in broker.topics()


def delete_topics(client: WireClient, *entries: dict[str, Any]) -> list[Any]:
    response = client.call(ApiKey.DeleteTopics, 6, topics=list(entries), timeout_ms=5000)
    return list(response.responses)


def test_delete_topics_by_name_needs_describe_then_delete(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("kept")
    broker.create_topic("gone")
    broker.add_acl(ME, "DESCRIBE", topic="kept")
    broker.add_acl(ME, "DELETE", topic="gone")
    results = delete_topics(
        client,
        {"name": "kept", "topic_id": ZERO_ID},
        {"name": "gone", "topic_id": ZERO_ID},
        {"name": "nowhere", "topic_id": ZERO_ID},
    )
    errors = {result.name: (result.error_code, result.error_message) for result in results}
    assert errors == {
        "kept": (E.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED_MESSAGE),
        "gone": (E.NO_ERROR, None),
        "nowhere": (E.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED_MESSAGE),
    }
    assert "kept" in broker.topics() and "gone" not in broker.topics()


def test_delete_topics_by_id_names_the_topic_only_when_describable(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("secret")
    broker.create_topic("known")
    secret, known = topic_id(broker, client, "secret"), topic_id(broker, client, "known")
    broker.add_acl(ME, "DESCRIBE", topic="known")
    results = delete_topics(
        client, {"name": None, "topic_id": secret}, {"name": None, "topic_id": known}
    )
    answered = {uuid.UUID(str(result.topic_id)): result for result in results}
    assert (answered[secret].name, answered[secret].error_code) == (
        None,
        E.TOPIC_AUTHORIZATION_FAILED,
    )
    assert (answered[known].name, answered[known].error_code) == (
        "known",
        E.TOPIC_AUTHORIZATION_FAILED,
    )
    broker.add_acl(ME, "DELETE", cluster=True)
    assert delete_topics(client, {"name": None, "topic_id": secret})[0].error_code == E.NO_ERROR


def test_create_partitions_needs_alter(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("grow")
    broker.create_topic("fixed")
    broker.add_acl(ME, "ALTER", topic="grow")
    response = client.call(
        ApiKey.CreatePartitions,
        3,
        topics=[
            {"name": name, "count": 2, "assignments": None} for name in ("fixed", "grow", "none")
        ],
        timeout_ms=5000,
        validate_only=False,
    )
    errors = {result.name: (result.error_code, result.error_message) for result in response.results}
    assert errors == {
        "fixed": (E.TOPIC_AUTHORIZATION_FAILED, None),
        "none": (E.TOPIC_AUTHORIZATION_FAILED, None),
        "grow": (E.NO_ERROR, None),
    }


def test_delete_records_needs_delete(broker: KafkaBroker, client: WireClient) -> None:
    for name in ("trim", "keep"):
        broker.create_topic(name)
        broker.produce(name, b"v")
    broker.add_acl(ME, "DELETE", topic="trim")
    response = client.call(
        ApiKey.DeleteRecords,
        2,
        topics=[
            {"name": name, "partitions": [{"partition_index": 0, "offset": 1}]}
            for name in ("trim", "keep")
        ],
        timeout_ms=5000,
    )
    results = {topic.name: topic.partitions[0] for topic in response.topics}
    assert (results["trim"].error_code, results["trim"].low_watermark) == (E.NO_ERROR, 1)
    assert (results["keep"].error_code, results["keep"].low_watermark) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        -1,
    )


# ---- Configs -----------------------------------------------------------------------------

TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE, CLIENT_METRICS_RESOURCE = 2, 4, 32, 16


def describe_configs(client: WireClient, *resources: tuple[int, str]) -> list[Any]:
    response = client.call(
        ApiKey.DescribeConfigs,
        4,
        resources=[
            {"resource_type": kind, "resource_name": name, "configuration_keys": None}
            for kind, name in resources
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    return list(response.results)


def test_describe_configs_checks_the_resource_it_describes(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("configured")
    broker.create_topic("closed")
    broker.add_acl(ME, "ALTER_CONFIGS", topic="configured")  # implies DESCRIBE_CONFIGS
    results = describe_configs(
        client,
        (TOPIC_RESOURCE, "closed"),
        (BROKER_RESOURCE, str(broker.node_ids[0])),
        (TOPIC_RESOURCE, "configured"),
        (GROUP_RESOURCE, "g"),
        (CLIENT_METRICS_RESOURCE, "sub"),
    )
    answers = [(r.resource_name, r.error_code, r.error_message) for r in results]
    assert answers[0] == ("configured", E.NO_ERROR, "")
    assert results[0].configs
    assert answers[1:] == [
        ("closed", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        (str(broker.node_ids[0]), E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        ("g", E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
        ("sub", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    ]
    broker.add_acl(ME, "DESCRIBE_CONFIGS", cluster=True)
    broker_result = describe_configs(client, (BROKER_RESOURCE, str(broker.node_ids[0])))[0]
    assert broker_result.error_code == E.NO_ERROR


def alter_configs(
    client: WireClient, incremental: bool, *resources: tuple[int, str, str, str]
) -> list[tuple[str, int, str | None]]:
    entries = [
        {
            "resource_type": kind,
            "resource_name": name,
            "configs": [
                {"name": key, "value": value, "config_operation": 0}
                if incremental
                else {"name": key, "value": value}
            ],
        }
        for kind, name, key, value in resources
    ]
    api, version = (ApiKey.IncrementalAlterConfigs, 1) if incremental else (ApiKey.AlterConfigs, 2)
    response = client.call(api, version, resources=entries, validate_only=False)
    return [(r.resource_name, r.error_code, r.error_message) for r in response.responses]


@pytest.mark.parametrize("incremental", [True, False])
def test_alter_configs_need_alter_configs(
    broker: KafkaBroker, client: WireClient, incremental: bool
) -> None:
    broker.create_topic("tuned")
    broker.create_topic("locked")
    broker.add_acl(ME, "ALTER_CONFIGS", topic="tuned")
    answers = alter_configs(
        client,
        incremental,
        (TOPIC_RESOURCE, "tuned", "retention.ms", "1000"),
        (TOPIC_RESOURCE, "locked", "retention.ms", "1000"),
        (GROUP_RESOURCE, "g", "consumer.session.timeout.ms", "50000"),
        (BROKER_RESOURCE, "", "log.retention.ms", "1000"),
        # The broker checks a broker resource's configs before the controller's ACLs.
        (BROKER_RESOURCE, str(broker.node_ids[0]), "broker.id", "7"),
    )
    assert answers[0] == ("tuned", E.NO_ERROR, None)
    assert answers[1] == ("locked", E.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
    assert answers[2] == ("g", E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    assert answers[3] == ("", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    assert answers[4][1] == E.INVALID_REQUEST
    configs = describe_configs(client, (TOPIC_RESOURCE, "tuned"))[0].configs
    assert {c.name: c.value for c in configs}["retention.ms"] == "1000"


def test_broker_logger_changes_need_alter_configs_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    answers = alter_configs(client, True, (8, "no-such-id", "kafka", "DEBUG"))
    # Kafka checks the ACL before the broker logger's name.
    assert answers == [
        ("no-such-id", E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    ]
    broker.add_acl(ME, "ALTER_CONFIGS", cluster=True)
    assert alter_configs(client, True, (8, "no-such-id", "kafka", "DEBUG"))[0][1] == (
        E.INVALID_REQUEST
    )


def test_list_config_resources_needs_describe_configs_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("listed")
    refused = client.call(ApiKey.ListConfigResources, 1, resource_types=[TOPIC_RESOURCE])
    assert (refused.error_code, refused.config_resources) == (
        E.CLUSTER_AUTHORIZATION_FAILED,
        [],
    )
    broker.add_acl(ME, "DESCRIBE_CONFIGS", cluster=True)
    listed = client.call(ApiKey.ListConfigResources, 1, resource_types=[TOPIC_RESOURCE])
    assert listed.error_code == E.NO_ERROR
    assert [r.resource_name for r in listed.config_resources] == ["listed"]


# ---- Cluster-level admin -----------------------------------------------------------------


def test_describe_log_dirs_needs_describe_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    refused = client.call(ApiKey.DescribeLogDirs, 4, topics=None)
    assert (refused.error_code, refused.results) == (E.CLUSTER_AUTHORIZATION_FAILED, [])
    broker.add_acl(ME, "DESCRIBE", cluster=True)
    described = client.call(ApiKey.DescribeLogDirs, 4, topics=None)
    assert described.error_code == E.NO_ERROR and len(described.results) == 1


def test_describe_user_scram_credentials_needs_describe_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.add_user("alice", "secret")
    refused = client.call(ApiKey.DescribeUserScramCredentials, 0, users=[{"name": "alice"}])
    assert (refused.error_code, refused.error_message) == (
        E.CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
    )
    assert [(r.user, r.error_code) for r in refused.results] == [
        ("", E.CLUSTER_AUTHORIZATION_FAILED)
    ]
    broker.add_acl(ME, "DESCRIBE", cluster=True)
    described = client.call(ApiKey.DescribeUserScramCredentials, 0, users=[{"name": "alice"}])
    assert [(r.user, r.error_code) for r in described.results] == [("alice", E.NO_ERROR)]


def test_alter_user_scram_credentials_needs_alter_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.add_user("bob", "secret")

    def delete_bob() -> Any:
        return client.call(
            ApiKey.AlterUserScramCredentials,
            0,
            deletions=[{"name": "bob", "mechanism": 1}],
            upsertions=[],
        ).results

    refused = delete_bob()
    assert [(r.user, r.error_code) for r in refused] == [("bob", E.CLUSTER_AUTHORIZATION_FAILED)]
    assert refused[0].error_message.endswith("is not authorized.")
    broker.add_acl(ME, "ALTER", cluster=True)
    assert [(r.user, r.error_code) for r in delete_bob()] == [("bob", E.NO_ERROR)]


def test_update_features_needs_alter_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    def update() -> Any:
        return client.call(
            ApiKey.UpdateFeatures,
            1,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "transaction.version", "max_version_level": 2, "upgrade_type": 1}
            ],
            validate_only=True,
        )

    refused = update()
    assert (refused.error_code, refused.results) == (E.CLUSTER_AUTHORIZATION_FAILED, [])
    assert refused.error_message.endswith("is not authorized.")
    broker.add_acl(ME, "ALTER", cluster=True)
    assert update().error_code == E.NO_ERROR


def test_describe_quorum_needs_describe_on_the_cluster(
    broker: KafkaBroker, client: WireClient
) -> None:
    def describe() -> Any:
        return client.call(
            ApiKey.DescribeQuorum,
            2,
            topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}],
        )

    refused = describe()
    assert (refused.error_code, refused.error_message, refused.topics) == (
        E.CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
        [],
    )
    broker.add_acl(ME, "DESCRIBE", cluster=True)
    assert describe().topics[0].partitions[0].error_code == E.NO_ERROR


def test_api_versions_and_telemetry_need_no_acl(client: WireClient) -> None:
    assert client.call(ApiKey.ApiVersions, 3).error_code == E.NO_ERROR
    subscriptions = client.call(ApiKey.GetTelemetrySubscriptions, 0, client_instance_id=ZERO_ID)
    assert subscriptions.error_code == E.NO_ERROR
