"""Authorization of the group, offset, share-group and transaction APIs over the wire, as
Kafka 4.3 checks them: a broker with the StandardAuthorizer, the PLAINTEXT principal
User:ANONYMOUS, and ACLs granted per test (no ACL on a resource denies it)."""

from __future__ import annotations

import uuid
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.groups.wirehelp import commit, join
from tests.wire import WireClient

ME = "User:ANONYMOUS"
E = ErrorCode
READ, WRITE, DELETE, DESCRIBE = 3, 4, 6, 8


def topic_id(client: WireClient, name: str) -> uuid.UUID:
    """The topic's id, by Metadata (the principal needs DESCRIBE on it)."""
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": name, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    assert metadata.topics[0].error_code == E.NO_ERROR
    return uuid.UUID(str(metadata.topics[0].topic_id))


def errors_by_partition(topics: Any, partitions: str = "partitions") -> dict[tuple[str, int], int]:
    return {
        (topic.name, p.partition_index): p.error_code
        for topic in topics
        for p in getattr(topic, partitions)
    }


# ---- FindCoordinator ---------------------------------------------------------------------


def test_find_coordinator_needs_describe_on_the_key(
    broker: KafkaBroker, client: WireClient
) -> None:
    denied = client.call(ApiKey.FindCoordinator, 3, key="g", key_type=0)
    assert (denied.error_code, denied.error_message) == (
        E.GROUP_AUTHORIZATION_FAILED,
        "Group authorization failed.",
    )
    assert (denied.node_id, denied.host, denied.port) == (-1, "", -1)
    broker.add_acl(ME, "DESCRIBE", group="g")
    assert client.call(ApiKey.FindCoordinator, 3, key="g", key_type=0).error_code == E.NO_ERROR

    batched = client.call(ApiKey.FindCoordinator, 4, key_type=0, coordinator_keys=["g", "other"])
    assert [(c.key, c.error_code, c.error_message) for c in batched.coordinators] == [
        ("g", E.NO_ERROR, None),
        ("other", E.GROUP_AUTHORIZATION_FAILED, None),
    ]
    txn = client.call(ApiKey.FindCoordinator, 4, key_type=1, coordinator_keys=["tx"])
    assert txn.coordinators[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_find_coordinator_share_key_needs_cluster_action(
    broker: KafkaBroker, client: WireClient
) -> None:
    share_key = f"g:{uuid.uuid4()}:0"
    denied = client.call(ApiKey.FindCoordinator, 6, key_type=2, coordinator_keys=[share_key])
    assert [(c.error_code, c.error_message, c.node_id) for c in denied.coordinators] == [
        (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.", -1)
    ]
    broker.add_acl(ME, "CLUSTER_ACTION", cluster=True)
    allowed = client.call(ApiKey.FindCoordinator, 6, key_type=2, coordinator_keys=[share_key])
    assert allowed.coordinators[0].error_code != E.CLUSTER_AUTHORIZATION_FAILED


# ---- classic group membership ------------------------------------------------------------


def test_classic_group_apis_need_read_on_the_group(broker: KafkaBroker, client: WireClient) -> None:
    joined = join(client, "g", version=7)
    assert (joined.error_code, joined.generation_id, joined.protocol_name) == (
        E.GROUP_AUTHORIZATION_FAILED,
        -1,
        None,
    )
    sync = client.call(
        ApiKey.SyncGroup,
        5,
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    )
    assert sync.error_code == E.GROUP_AUTHORIZATION_FAILED
    beat = client.call(
        ApiKey.Heartbeat, 4, group_id="g", generation_id=1, member_id="m", group_instance_id=None
    )
    assert beat.error_code == E.GROUP_AUTHORIZATION_FAILED
    leave = client.call(
        ApiKey.LeaveGroup, 5, group_id="g", members=[{"member_id": "m", "group_instance_id": None}]
    )
    assert (leave.error_code, leave.members) == (E.GROUP_AUTHORIZATION_FAILED, [])

    broker.add_acl(ME, "READ", group="g")
    assert join(client, "g", version=7).error_code == E.MEMBER_ID_REQUIRED


def test_sync_group_checks_the_protocol_before_authorization(client: WireClient) -> None:
    sync = client.call(
        ApiKey.SyncGroup,
        5,
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        protocol_type=None,
        protocol_name=None,
        assignments=[],
    )
    assert sync.error_code == E.INCONSISTENT_GROUP_PROTOCOL


# ---- offsets -----------------------------------------------------------------------------


def test_offset_commit_checks_the_group_then_each_topic(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("a")
    broker.create_topic("b")
    wanted = {("a", 0): 5, ("b", 0): 7}
    assert commit(client, "g", wanted) == {
        ("a", 0): E.GROUP_AUTHORIZATION_FAILED,
        ("b", 0): E.GROUP_AUTHORIZATION_FAILED,
    }
    broker.add_acl(ME, "READ", group="g")
    broker.add_acl(ME, "READ", topic="a")
    assert commit(client, "g", wanted) == {
        ("a", 0): E.NO_ERROR,
        ("b", 0): E.TOPIC_AUTHORIZATION_FAILED,
    }
    assert broker.committed_offsets("g") == {("a", 0): 5}


def _fetch_group(client: WireClient, group: str, topics: list[str] | None) -> Any:
    wanted = None if topics is None else [{"name": t, "partition_indexes": [0]} for t in topics]
    response = client.call(
        ApiKey.OffsetFetch,
        8,
        groups=[{"group_id": group, "topics": wanted}],
        require_stable=False,
    )
    return response.groups[0]


def test_offset_fetch_checks_the_group_then_hides_or_refuses_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    for name in ("a", "b"):
        broker.create_topic(name)
        broker.add_acl(ME, "READ", topic=name)
    broker.add_acl(ME, "READ", group="g")
    assert commit(client, "g", {("a", 0): 5, ("b", 0): 7}) == {("a", 0): 0, ("b", 0): 0}
    broker.remove_acls(principal=ME)

    assert _fetch_group(client, "g", ["a"]).error_code == E.GROUP_AUTHORIZATION_FAILED
    old = client.call(ApiKey.OffsetFetch, 7, group_id="g", topics=None, require_stable=False)
    assert (old.error_code, old.topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    v1 = client.call(
        ApiKey.OffsetFetch, 1, group_id="g", topics=[{"name": "a", "partition_indexes": [0]}]
    )
    assert [(p.error_code, p.committed_offset) for p in v1.topics[0].partitions] == [
        (E.GROUP_AUTHORIZATION_FAILED, -1)
    ]

    broker.add_acl(ME, "DESCRIBE", group="g")
    broker.add_acl(ME, "DESCRIBE", topic="a")
    named = _fetch_group(client, "g", ["b", "a"])
    assert named.error_code == E.NO_ERROR
    assert [
        (t.name, t.partitions[0].committed_offset, t.partitions[0].error_code) for t in named.topics
    ] == [("a", 5, E.NO_ERROR), ("b", -1, E.TOPIC_AUTHORIZATION_FAILED)]
    every = _fetch_group(client, "g", None)
    assert [(t.name, t.partitions[0].committed_offset) for t in every.topics] == [("a", 5)]


def test_offset_delete_needs_delete_on_the_group_and_read_on_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    def delete() -> Any:
        return client.call(
            ApiKey.OffsetDelete,
            0,
            group_id="g",
            topics=[{"name": n, "partitions": [{"partition_index": 0}]} for n in ("a", "b")],
        )

    for name in ("a", "b"):
        broker.create_topic(name)
        broker.add_acl(ME, "READ", topic=name)
    broker.add_acl(ME, "READ", group="g")
    assert commit(client, "g", {("a", 0): 5, ("b", 0): 7}) == {("a", 0): 0, ("b", 0): 0}
    broker.remove_acls(topic="b")
    assert (delete().error_code, delete().topics) == (E.GROUP_AUTHORIZATION_FAILED, [])
    broker.add_acl(ME, "DELETE", group="g")
    deleted = delete()
    assert deleted.error_code == E.NO_ERROR
    assert errors_by_partition(deleted.topics) == {
        ("a", 0): E.NO_ERROR,
        ("b", 0): E.TOPIC_AUTHORIZATION_FAILED,
    }
    assert broker.committed_offsets("g") == {("b", 0): 7}


# ---- group administration ----------------------------------------------------------------


def _make_groups(broker: KafkaBroker, client: WireClient, *groups: str) -> None:
    """Groups that exist (each with a committed offset), then no ACLs at all."""
    broker.create_topic("t")
    broker.add_acl(ME, "READ", topic="t")
    for group in groups:
        broker.add_acl(ME, "READ", group=group)
        assert commit(client, group, {("t", 0): 1}) == {("t", 0): E.NO_ERROR}
    broker.remove_acls(principal=ME)


def test_describe_groups_refuses_first_and_reports_authorized_operations(
    broker: KafkaBroker, client: WireClient
) -> None:
    _make_groups(broker, client, "g1", "g2")
    broker.add_acl(ME, "DESCRIBE", group="g2")
    described = client.call(
        ApiKey.DescribeGroups, 5, groups=["g2", "g1"], include_authorized_operations=True
    )
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("g1", E.GROUP_AUTHORIZATION_FAILED),
        ("g2", E.NO_ERROR),
    ]
    assert set(described.groups[1].authorized_operations) == {DESCRIBE}
    broker.add_acl(ME, "DELETE", group="g2")
    again = client.call(ApiKey.DescribeGroups, 5, groups=["g2"], include_authorized_operations=True)
    assert set(again.groups[0].authorized_operations) == {DESCRIBE, DELETE}


def test_list_groups_shows_describable_groups_or_all_with_cluster_describe(
    broker: KafkaBroker, client: WireClient
) -> None:
    _make_groups(broker, client, "g1", "g2")

    def listed() -> list[str]:
        response = client.call(ApiKey.ListGroups, 4, states_filter=[])
        return sorted(group.group_id for group in response.groups)

    assert listed() == []
    broker.add_acl(ME, "DESCRIBE", group="g1")
    assert listed() == ["g1"]
    broker.add_acl(ME, "DESCRIBE", cluster=True)
    assert listed() == ["g1", "g2"]


def test_delete_groups_needs_delete_per_group(broker: KafkaBroker, client: WireClient) -> None:
    _make_groups(broker, client, "g1", "g2")
    broker.add_acl(ME, "DELETE", group="g2")
    deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["g1", "g2", "g1"])
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("g2", E.NO_ERROR),
        ("g1", E.GROUP_AUTHORIZATION_FAILED),
    ]
    assert broker.committed_offsets("g1") == {("t", 0): 1}


# ---- KIP-848 consumer groups ------------------------------------------------------------


def _cg_heartbeat(
    client: WireClient, group: str, topics: list[str] | None, regex: str | None = None
) -> Any:
    return client.call(
        ApiKey.ConsumerGroupHeartbeat,
        1,
        group_id=group,
        member_id=str(uuid.uuid4()),
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        server_assignor=None,
        topic_partitions=[],
    )


def test_consumer_group_heartbeat_needs_read_group_and_describe_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("t")
    denied = _cg_heartbeat(client, "cg", ["t"])
    assert (denied.error_code, denied.member_epoch, denied.error_message) == (
        E.GROUP_AUTHORIZATION_FAILED,
        0,
        None,
    )
    broker.add_acl(ME, "READ", group="cg")
    assert _cg_heartbeat(client, "cg", ["t"]).error_code == E.TOPIC_AUTHORIZATION_FAILED
    broker.add_acl(ME, "DESCRIBE", topic="t")
    joined = _cg_heartbeat(client, "cg", ["t"])
    assert (joined.error_code, joined.member_epoch) == (E.NO_ERROR, 1)


def test_regex_subscription_resolves_to_describable_topics_only(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("rx-a")
    broker.create_topic("rx-b")
    broker.add_acl(ME, "READ", group="cg")
    broker.add_acl(ME, "DESCRIBE", topic="rx-a")
    joined = _cg_heartbeat(client, "cg", None, regex="rx-.*")
    assert joined.error_code == E.NO_ERROR
    assigned = {uuid.UUID(str(t.topic_id)) for t in joined.assignment.topic_partitions}
    assert assigned == {topic_id(client, "rx-a")}


def test_consumer_group_describe_operations_and_hidden_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("t")
    broker.add_acl(ME, "READ", group="cg")
    broker.add_acl(ME, "DESCRIBE", topic="t")
    assert _cg_heartbeat(client, "cg", ["t"]).error_code == E.NO_ERROR

    def describe(*groups: str) -> list[Any]:
        response = client.call(
            ApiKey.ConsumerGroupDescribe,
            1,
            group_ids=list(groups),
            include_authorized_operations=True,
        )
        return list(response.groups)

    denied, described = describe("cg", "other")  # refused groups come first
    assert (denied.group_id, denied.error_code) == ("other", E.GROUP_AUTHORIZATION_FAILED)
    assert described.error_code == E.NO_ERROR
    assert described.authorized_operations == (1 << READ) | (1 << DESCRIBE)
    broker.remove_acls(topic="t")
    hidden = describe("cg")[0]
    assert (hidden.error_code, hidden.error_message, hidden.members) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        "The group has described topic(s) that the client is not authorized to describe.",
        [],
    )


# ---- KIP-932 share groups ---------------------------------------------------------------


def _share_heartbeat(client: WireClient, group: str, member: str, topics: list[str]) -> Any:
    return client.call(
        ApiKey.ShareGroupHeartbeat,
        1,
        group_id=group,
        member_id=member,
        member_epoch=0,
        rack_id=None,
        subscribed_topic_names=topics,
    )


def _share_fetch(client: WireClient, group: str, member: str, topic: uuid.UUID) -> Any:
    return client.call(
        ApiKey.ShareFetch,
        1,
        group_id=group,
        member_id=member,
        share_session_epoch=0,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=100,
        batch_size=100,
        topics=[
            {
                "topic_id": topic,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": []}],
            }
        ],
        forgotten_topics_data=[],
    )


def test_share_group_heartbeat_and_describe(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("t")
    member = str(uuid.uuid4())
    assert _share_heartbeat(client, "sg", member, ["t"]).error_code == E.GROUP_AUTHORIZATION_FAILED
    broker.add_acl(ME, "READ", group="sg")
    assert _share_heartbeat(client, "sg", member, ["t"]).error_code == E.TOPIC_AUTHORIZATION_FAILED
    broker.add_acl(ME, "DESCRIBE", topic="t")
    assert _share_heartbeat(client, "sg", member, ["t"]).error_code == E.NO_ERROR
    described = client.call(
        ApiKey.ShareGroupDescribe, 1, group_ids=["sg", "x"], include_authorized_operations=True
    ).groups
    assert [(g.group_id, g.error_code) for g in described] == [
        ("x", E.GROUP_AUTHORIZATION_FAILED),
        ("sg", E.NO_ERROR),
    ]
    assert described[1].authorized_operations == (1 << READ) | (1 << DESCRIBE)


def test_share_fetch_and_acknowledge_need_read_on_group_and_topic(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("t")
    broker.add_acl(ME, "DESCRIBE", topic="t")
    tid = topic_id(client, "t")
    member = str(uuid.uuid4())
    assert _share_fetch(client, "sg", member, tid).error_code == E.GROUP_AUTHORIZATION_FAILED
    ack = client.call(
        ApiKey.ShareAcknowledge,
        1,
        group_id="sg",
        member_id=member,
        share_session_epoch=1,
        topics=[],
    )
    assert ack.error_code == E.GROUP_AUTHORIZATION_FAILED
    broker.add_acl(ME, "READ", group="sg")
    fetched = _share_fetch(client, "sg", member, tid)
    assert fetched.error_code == E.NO_ERROR
    partition = fetched.responses[0].partitions[0]
    assert (partition.error_code, partition.acquired_records) == (E.TOPIC_AUTHORIZATION_FAILED, [])


def test_share_group_offsets_admin_apis(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("a")
    broker.create_topic("b")
    described = client.call(
        ApiKey.DescribeShareGroupOffsets,
        1,
        groups=[{"group_id": "sg", "topics": [{"topic_name": "a", "partitions": [0]}]}],
    ).groups[0]
    assert described.error_code == E.GROUP_AUTHORIZATION_FAILED

    def alter() -> Any:
        return client.call(
            ApiKey.AlterShareGroupOffsets,
            0,
            group_id="sg",
            topics=[
                {"topic_name": n, "partitions": [{"partition_index": 0, "start_offset": 0}]}
                for n in ("a", "b")
            ],
        )

    refused = alter()
    assert (refused.error_code, refused.error_message, refused.responses) == (
        E.GROUP_AUTHORIZATION_FAILED,
        "Group authorization failed.",
        [],
    )
    broker.add_acl(ME, "READ", group="sg")
    broker.add_acl(ME, "READ", topic="a")
    altered = alter()
    assert [(t.topic_name, t.partitions[0].error_code) for t in altered.responses] == [
        ("b", E.TOPIC_AUTHORIZATION_FAILED),
        ("a", E.NO_ERROR),
    ]
    named = client.call(
        ApiKey.DescribeShareGroupOffsets,
        1,
        groups=[
            {"group_id": "sg", "topics": [{"topic_name": n, "partitions": [0]} for n in ("b", "a")]}
        ],
    ).groups[0]
    assert [
        (t.topic_name, t.partitions[0].start_offset, t.partitions[0].error_code)
        for t in named.topics
    ] == [
        ("a", 0, E.NO_ERROR),
        ("b", -1, E.TOPIC_AUTHORIZATION_FAILED),
    ]

    def delete() -> Any:
        return client.call(
            ApiKey.DeleteShareGroupOffsets,
            0,
            group_id="sg",
            topics=[{"topic_name": n} for n in ("a", "b")],
        )

    assert delete().error_code == E.GROUP_AUTHORIZATION_FAILED  # READ is not DELETE
    broker.add_acl(ME, "DELETE", group="sg")
    deleted = delete()
    assert [(t.topic_name, t.error_code) for t in deleted.responses] == [
        ("b", E.TOPIC_AUTHORIZATION_FAILED),
        ("a", E.NO_ERROR),
    ]


# ---- transactions ------------------------------------------------------------------------


def _init(client: WireClient, transactional_id: str | None) -> Any:
    return client.call(
        ApiKey.InitProducerId,
        5,
        transactional_id=transactional_id,
        transaction_timeout_ms=60000,
        producer_id=-1,
        producer_epoch=-1,
    )


def test_init_producer_id(broker: KafkaBroker, client: WireClient) -> None:
    denied = _init(client, "tx")
    assert (denied.error_code, denied.producer_id, denied.producer_epoch) == (
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        -1,
        -1,
    )
    assert _init(client, None).error_code == E.CLUSTER_AUTHORIZATION_FAILED
    broker.add_acl(ME, "WRITE", topic="some-topic")  # WRITE on any topic allows idempotence
    assert _init(client, None).error_code == E.NO_ERROR
    broker.remove_acls(principal=ME)
    broker.add_acl(ME, "IDEMPOTENT_WRITE", cluster=True)
    assert _init(client, None).error_code == E.NO_ERROR
    broker.add_acl(ME, "WRITE", transactional_id="tx")
    assert _init(client, "tx").error_code == E.NO_ERROR


def _add_partitions(
    client: WireClient, producer: Any, topics: list[str]
) -> dict[tuple[str, int], int]:
    response = client.call(
        ApiKey.AddPartitionsToTxn,
        3,
        v3_and_below_transactional_id="tx",
        v3_and_below_producer_id=producer.producer_id,
        v3_and_below_producer_epoch=producer.producer_epoch,
        v3_and_below_topics=[{"name": t, "partitions": [0]} for t in topics],
    )
    return {
        (topic.name, p.partition_index): p.partition_error_code
        for topic in response.results_by_topic_v3_and_below
        for p in topic.results_by_partition
    }


def test_add_partitions_to_txn_checks_the_id_then_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("a")
    broker.create_topic("b")
    broker.add_acl(ME, "WRITE", transactional_id="tx")
    producer = _init(client, "tx")
    broker.remove_acls(transactional_id="tx")
    assert _add_partitions(client, producer, ["a"]) == {
        ("a", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    }
    broker.add_acl(ME, "WRITE", transactional_id="tx")
    broker.add_acl(ME, "WRITE", topic="a")
    assert _add_partitions(client, producer, ["a", "b", "__consumer_offsets"]) == {
        ("a", 0): E.OPERATION_NOT_ATTEMPTED,
        ("b", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED,
    }
    assert _add_partitions(client, producer, ["a"]) == {("a", 0): E.NO_ERROR}

    batched = client.call(
        ApiKey.AddPartitionsToTxn,
        4,
        transactions=[
            {
                "transactional_id": "tx",
                "producer_id": producer.producer_id,
                "producer_epoch": producer.producer_epoch,
                "verify_only": True,
                "topics": [{"name": "a", "partitions": [0]}],
            }
        ],
    )
    assert (batched.error_code, batched.results_by_transaction) == (
        E.CLUSTER_AUTHORIZATION_FAILED,
        [],
    )


def test_offsets_in_transactions_check_the_id_before_the_group(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("a")
    broker.create_topic("b")

    def add_offsets() -> int:
        response = client.call(
            ApiKey.AddOffsetsToTxn,
            3,
            transactional_id="tx",
            producer_id=0,
            producer_epoch=0,
            group_id="g",
        )
        return int(response.error_code)

    def txn_commit() -> dict[tuple[str, int], int]:
        response = client.call(
            ApiKey.TxnOffsetCommit,
            3,
            transactional_id="tx",
            group_id="g",
            producer_id=0,
            producer_epoch=0,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": n,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
                for n in ("a", "b")
            ],
        )
        return errors_by_partition(response.topics)

    assert add_offsets() == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert set(txn_commit().values()) == {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    end = client.call(
        ApiKey.EndTxn, 3, transactional_id="tx", producer_id=0, producer_epoch=0, committed=True
    )
    assert end.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    broker.add_acl(ME, "WRITE", transactional_id="tx")
    assert add_offsets() == E.GROUP_AUTHORIZATION_FAILED
    assert set(txn_commit().values()) == {E.GROUP_AUTHORIZATION_FAILED}
    broker.add_acl(ME, "READ", group="g")
    broker.add_acl(ME, "READ", topic="a")
    errors = txn_commit()
    assert errors[("b", 0)] == E.TOPIC_AUTHORIZATION_FAILED
    assert errors[("a", 0)] not in (E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED)


def test_describe_and_list_transactions(broker: KafkaBroker, client: WireClient) -> None:
    broker.create_topic("a")
    broker.create_topic("b")
    for txn in ("tx", "other"):
        broker.add_acl(ME, "WRITE", transactional_id=txn)
    broker.add_acl(ME, "WRITE", topic="a")
    broker.add_acl(ME, "WRITE", topic="b")
    producer = _init(client, "tx")
    assert _init(client, "other").error_code == E.NO_ERROR
    assert _add_partitions(client, producer, ["a", "b"]) == {("a", 0): 0, ("b", 0): 0}
    broker.remove_acls(principal=ME)

    def describe() -> Any:
        return client.call(ApiKey.DescribeTransactions, 0, transactional_ids=["tx"])

    assert describe().transaction_states[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    broker.add_acl(ME, "DESCRIBE", transactional_id="tx")
    broker.add_acl(ME, "DESCRIBE", topic="a")
    state = describe().transaction_states[0]
    assert (state.error_code, [t.topic for t in state.topics]) == (E.NO_ERROR, ["a"])

    listed = client.call(
        ApiKey.ListTransactions, 1, state_filters=[], producer_id_filters=[], duration_filter=-1
    )
    assert [t.transactional_id for t in listed.transaction_states] == ["tx"]
