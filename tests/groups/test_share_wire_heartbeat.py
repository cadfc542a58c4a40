"""KIP-932 share groups over raw ShareGroupHeartbeat / ShareGroupDescribe requests: joining,
partitions shared between members by the simple assignor, topics created and grown later,
leaving, session timeouts, every bad-input error code with Kafka's message, and share groups
in ListGroups, DescribeGroups and DeleteGroups."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.config import ConfigError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

E = ErrorCode
# Short timeouts (Kafka lets the bounds be lowered) keep expiry tests quick.
SHARE_SETTINGS = {
    "offsets.topic.num.partitions": "3",
    "group.share.min.session.timeout.ms": "100",
    "group.share.session.timeout.ms": "600",
    "group.share.min.heartbeat.interval.ms": "10",
    "group.share.heartbeat.interval.ms": "50",
}
_NewPartitions = struct_type(ApiKey.CreatePartitions, "request", "CreatePartitionsTopic")


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=SHARE_SETTINGS) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def create_topic(client: WireClient, name: str, partitions: int) -> uuid.UUID:
    response = client.call(
        ApiKey.CreateTopics,
        7,
        topics=[
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout_ms=5000,
        validate_only=False,
    )
    assert response.topics[0].error_code == E.NO_ERROR
    return uuid.UUID(str(response.topics[0].topic_id))


def grow_topic(client: WireClient, name: str, count: int) -> None:
    response = client.call(
        ApiKey.CreatePartitions,
        3,
        topics=[_NewPartitions(name=name, count=count, assignments=None)],
        timeout_ms=1000,
        validate_only=False,
    )
    assert response.results[0].error_code == E.NO_ERROR


def heartbeat(
    client: WireClient,
    group: str,
    member_id: str,
    epoch: int,
    topics: list[str] | None = None,
    rack_id: str | None = None,
) -> Any:
    return client.call(
        ApiKey.ShareGroupHeartbeat,
        1,
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        rack_id=rack_id,
        subscribed_topic_names=topics,
    )


def assigned(response: Any) -> dict[uuid.UUID, set[int]]:
    assert response.error_code == E.NO_ERROR, response.error_message
    assert response.assignment is not None
    return {
        uuid.UUID(str(t.topic_id)): set(t.partitions) for t in response.assignment.topic_partitions
    }


def describe(client: WireClient, group: str, operations: bool = True) -> Any:
    response = client.call(
        ApiKey.ShareGroupDescribe, 1, group_ids=[group], include_authorized_operations=operations
    )
    return response.groups[0]


def described_assignments(client: WireClient, group: str) -> dict[str, dict[str, list[int]]]:
    return {
        member.member_id: {t.topic_name: t.partitions for t in member.assignment.topic_partitions}
        for member in describe(client, group).members
    }


def commit_offset(client: WireClient, group: str, topic: str) -> ErrorCode:
    """Commit offset 1 of partition 0 as a simple consumer (no member, epoch -1)."""
    response = client.call(
        ApiKey.OffsetCommit,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[{"name": topic, "partitions": [{"partition_index": 0, "committed_offset": 1}]}],
    )
    return ErrorCode(response.topics[0].partitions[0].error_code)


def wait_for(check: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


# ---- membership and assignment ----------------------------------------------------------------


def test_join_gets_every_partition_and_the_heartbeat_interval(client: WireClient) -> None:
    topic_id = create_topic(client, "solo", 3)
    joined = heartbeat(client, "s-solo", "m1", 0, ["solo"])
    assert (joined.error_code, joined.error_message) == (E.NO_ERROR, None)
    assert (joined.member_id, joined.member_epoch, joined.heartbeat_interval_ms) == ("m1", 1, 50)
    assert assigned(joined) == {topic_id: {0, 1, 2}}
    again = heartbeat(client, "s-solo", "m1", 1)
    assert (again.error_code, again.member_epoch, again.assignment) == (E.NO_ERROR, 1, None)
    full = heartbeat(client, "s-solo", "m1", 1, ["solo"])
    assert assigned(full) == {topic_id: {0, 1, 2}}


def test_two_members_both_get_the_partition_of_a_one_partition_topic(client: WireClient) -> None:
    topic_id = create_topic(client, "shared", 1)
    assert assigned(heartbeat(client, "s-shared", "a", 0, ["shared"])) == {topic_id: {0}}
    second = heartbeat(client, "s-shared", "b", 0, ["shared"])
    assert (second.member_epoch, assigned(second)) == (2, {topic_id: {0}})
    # The first member moves to the new epoch; its partitions did not change.
    first = heartbeat(client, "s-shared", "a", 1)
    assert (first.error_code, first.member_epoch, first.assignment) == (E.NO_ERROR, 2, None)
    assert described_assignments(client, "s-shared") == {"a": {"shared": [0]}, "b": {"shared": [0]}}


def test_more_partitions_than_members_are_split_evenly(client: WireClient) -> None:
    topic_id = create_topic(client, "split", 4)
    assert assigned(heartbeat(client, "s-split", "a", 0, ["split"])) == {topic_id: {0, 1, 2, 3}}
    second = assigned(heartbeat(client, "s-split", "b", 0, ["split"]))
    first = assigned(heartbeat(client, "s-split", "a", 1))
    assert first[topic_id] | second[topic_id] == {0, 1, 2, 3}
    assert len(first[topic_id]) == len(second[topic_id]) == 2


def test_a_topic_created_later_and_new_partitions_are_picked_up(client: WireClient) -> None:
    joined = heartbeat(client, "s-later", "m", 0, ["later"])
    assert (joined.member_epoch, assigned(joined)) == (1, {})
    topic_id = create_topic(client, "later", 1)
    created = heartbeat(client, "s-later", "m", 1)
    assert (created.member_epoch, assigned(created)) == (2, {topic_id: {0}})
    grow_topic(client, "later", 3)
    grown = heartbeat(client, "s-later", "m", 2)
    assert (grown.member_epoch, assigned(grown)) == (3, {topic_id: {0, 1, 2}})


def test_a_deleted_topic_leaves_the_assignment(client: WireClient) -> None:
    kept_id = create_topic(client, "kept", 1)
    create_topic(client, "doomed", 2)
    heartbeat(client, "s-deleted", "m", 0, ["kept", "doomed"])
    response = client.call(ApiKey.DeleteTopics, 6, topics=[{"name": "doomed"}], timeout_ms=5000)
    assert response.responses[0].error_code == E.NO_ERROR
    after = heartbeat(client, "s-deleted", "m", 1)
    assert (after.member_epoch, assigned(after)) == (2, {kept_id: {0}})


def test_a_changed_subscription_bumps_the_epoch(client: WireClient) -> None:
    first_id = create_topic(client, "sub-1", 1)
    second_id = create_topic(client, "sub-2", 2)
    assert assigned(heartbeat(client, "s-sub", "m", 0, ["sub-1"])) == {first_id: {0}}
    changed = heartbeat(client, "s-sub", "m", 1, ["sub-2"])
    assert (changed.member_epoch, assigned(changed)) == (2, {second_id: {0, 1}})


def test_leave_removes_the_member_and_bumps_the_group_epoch(client: WireClient) -> None:
    create_topic(client, "leaving", 1)
    heartbeat(client, "s-leave", "a", 0, ["leaving"])
    heartbeat(client, "s-leave", "b", 0, ["leaving"])
    left = heartbeat(client, "s-leave", "b", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (E.NO_ERROR, "b", -1)
    group = describe(client, "s-leave")
    assert [m.member_id for m in group.members] == ["a"]
    assert (group.group_epoch, group.group_state) == (3, "Stable")
    again = heartbeat(client, "s-leave", "b", -1)
    assert (again.error_code, again.error_message) == (
        E.UNKNOWN_MEMBER_ID,
        "Member b is not a member of group s-leave.",
    )
    assert heartbeat(client, "s-leave", "a", 1).member_epoch == 3
    heartbeat(client, "s-leave", "a", -1)
    assert describe(client, "s-leave").group_state == "Empty"


def test_session_timeout_fences_the_member(client: WireClient) -> None:
    create_topic(client, "expiring", 1)
    heartbeat(client, "s-expire", "m", 0, ["expiring"])
    wait_for(lambda: describe(client, "s-expire").group_state == "Empty")
    assert describe(client, "s-expire").group_epoch == 2
    late = heartbeat(client, "s-expire", "m", 1)
    assert late.error_code == E.UNKNOWN_MEMBER_ID
    rejoined = heartbeat(client, "s-expire", "m", 0, ["expiring"])
    assert (rejoined.error_code, rejoined.member_epoch) == (E.NO_ERROR, 3)


# ---- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member_id", "epoch", "topics", "rack_id", "error", "message"),
    [
        ("", 0, ["t"], None, E.INVALID_REQUEST, "MemberId can't be empty."),
        ("m", 0, ["t"], " ", E.INVALID_REQUEST, "RackId can't be empty."),
        (
            "m",
            0,
            None,
            None,
            E.INVALID_REQUEST,
            "SubscribedTopicNames must be set in first request.",
        ),
        ("m", 0, [], None, E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."),
        ("m", -2, None, None, E.INVALID_REQUEST, "MemberEpoch is invalid."),
        ("m", 3, None, None, E.GROUP_ID_NOT_FOUND, "Share group s-bad not found."),
        ("m", -1, None, None, E.GROUP_ID_NOT_FOUND, "Group s-bad not found."),
    ],
)
def test_bad_heartbeats_get_kafkas_errors(
    client: WireClient,
    member_id: str,
    epoch: int,
    topics: list[str] | None,
    rack_id: str | None,
    error: ErrorCode,
    message: str,
) -> None:
    response = heartbeat(client, "s-bad", member_id, epoch, topics, rack_id)
    assert (response.error_code, response.error_message) == (error, message)
    assert (response.member_id, response.member_epoch, response.assignment) == (None, -1, None)


def test_empty_group_id_is_invalid(client: WireClient) -> None:
    response = heartbeat(client, "", "m", 0, ["t"])
    assert (response.error_code, response.error_message) == (
        E.INVALID_REQUEST,
        "GroupId can't be empty.",
    )


def test_member_epoch_errors(client: WireClient) -> None:
    create_topic(client, "epochs", 1)
    heartbeat(client, "s-epochs", "m", 0, ["epochs"])
    ahead = heartbeat(client, "s-epochs", "m", 5)
    assert (ahead.error_code, ahead.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        "The share group member has a greater member epoch (5) than the one known by the group "
        "coordinator (1). The member must abandon all its partitions and rejoin.",
    )
    heartbeat(client, "s-epochs", "other", 0, ["epochs"])
    assert heartbeat(client, "s-epochs", "m", 1).member_epoch == 2
    # The previous epoch is accepted: the answer with the new one may have been lost.
    lost = heartbeat(client, "s-epochs", "m", 1)
    assert (lost.error_code, lost.member_epoch) == (E.NO_ERROR, 2)
    behind = heartbeat(client, "s-epochs", "m", 0, ["epochs"])
    assert (behind.error_code, behind.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        "The share group member has a smaller member epoch (0) than the one known by the group "
        "coordinator (2), and it does not match the previous member epoch (1). The member must "
        "abandon all its partitions and rejoin.",
    )
    unknown = heartbeat(client, "s-epochs", "nobody", 2)
    assert (unknown.error_code, unknown.error_message) == (
        E.UNKNOWN_MEMBER_ID,
        "Member nobody is not a member of group s-epochs.",
    )


def test_group_max_size_reached() -> None:
    with (
        ThreadedBroker(settings={**SHARE_SETTINGS, "group.share.max.size": "1"}) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        create_topic(client, "full", 1)
        assert heartbeat(client, "s-full", "a", 0, ["full"]).error_code == E.NO_ERROR
        refused = heartbeat(client, "s-full", "b", 0, ["full"])
        assert (refused.error_code, refused.error_message) == (
            E.GROUP_MAX_SIZE_REACHED,
            "The share group has reached its maximum capacity of 1 members.",
        )
        assert heartbeat(client, "s-full", "a", 1).error_code == E.NO_ERROR


# ---- describe, other kinds of groups, list, delete -------------------------------------------


def test_describe_shows_members_and_their_assignment(client: WireClient) -> None:
    topic_id = create_topic(client, "described", 2)
    heartbeat(client, "s-describe", "m", 0, ["described", "missing"], rack_id="r1")
    group = describe(client, "s-describe")
    assert (group.error_code, group.error_message, group.group_state) == (
        E.NO_ERROR,
        None,
        "Stable",
    )
    assert (group.group_epoch, group.assignment_epoch, group.assignor_name) == (1, 1, "simple")
    assert group.authorized_operations != -(2**31)
    [member] = group.members
    assert (member.member_id, member.rack_id, member.member_epoch) == ("m", "r1", 1)
    assert member.subscribed_topic_names == ["described", "missing"]
    [topic] = member.assignment.topic_partitions
    assert (uuid.UUID(str(topic.topic_id)), topic.topic_name, topic.partitions) == (
        topic_id,
        "described",
        [0, 1],
    )
    assert describe(client, "s-describe", operations=False).authorized_operations == -(2**31)
    unknown = describe(client, "s-nobody")
    assert (unknown.error_code, unknown.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group s-nobody not found.",
    )


def test_a_group_id_belongs_to_one_kind_of_group(client: WireClient) -> None:
    create_topic(client, "kinds", 1)
    heartbeat(client, "s-kinds", "m", 0, ["kinds"])
    consumer = client.call(
        ApiKey.ConsumerGroupHeartbeat,
        1,
        group_id="s-kinds",
        member_id="c",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["kinds"],
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=[],
    )
    assert (consumer.error_code, consumer.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group s-kinds is not a consumer group.",
    )
    consumer_described = client.call(
        ApiKey.ConsumerGroupDescribe, 1, group_ids=["s-kinds"], include_authorized_operations=False
    ).groups[0]
    assert (consumer_described.error_code, consumer_described.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group s-kinds is not a consumer group.",
    )
    joined = client.call(
        ApiKey.JoinGroup,
        9,
        group_id="s-kinds",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
        reason=None,
    )
    assert joined.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    classic = client.call(
        ApiKey.DescribeGroups, 6, groups=["s-kinds"], include_authorized_operations=False
    ).groups[0]
    assert (classic.error_code, classic.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group s-kinds is not a classic group.",
    )
    assert commit_offset(client, "s-kinds", "kinds") == E.GROUP_ID_NOT_FOUND
    fetched = client.call(
        ApiKey.OffsetFetch,
        9,
        groups=[
            {
                "group_id": "s-kinds",
                "member_id": None,
                "member_epoch": -1,
                "topics": [{"name": "kinds", "partition_indexes": [0]}],
            }
        ],
        require_stable=False,
    )
    assert fetched.groups[0].error_code == E.GROUP_ID_NOT_FOUND
    deleted = client.call(
        ApiKey.OffsetDelete,
        0,
        group_id="s-kinds",
        topics=[{"name": "kinds", "partitions": [{"partition_index": 0}]}],
    )
    assert deleted.error_code == E.GROUP_ID_NOT_FOUND
    # Offsets committed by a simple consumer make a classic group: not a share group.
    assert commit_offset(client, "s-offsets", "kinds") == E.NO_ERROR
    refused = heartbeat(client, "s-offsets", "m", 0, ["kinds"])
    assert (refused.error_code, refused.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group s-offsets is not a share group.",
    )
    assert describe(client, "s-offsets").error_message == "Group s-offsets is not a share group."


def test_list_groups_filters_share_groups_by_type(client: WireClient) -> None:
    create_topic(client, "listed", 1)
    heartbeat(client, "s-listed", "m", 0, ["listed"])
    listed = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=["Share"])
    [group] = [g for g in listed.groups if g.group_id == "s-listed"]
    assert (group.group_type, group.protocol_type, group.group_state) == (
        "share",
        "share",
        "Stable",
    )
    assert all(g.group_type == "share" for g in listed.groups)
    others = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=["consumer"])
    assert "s-listed" not in {g.group_id for g in others.groups}
    empty = client.call(ApiKey.ListGroups, 5, states_filter=["empty"], types_filter=["share"])
    assert "s-listed" not in {g.group_id for g in empty.groups}


def test_delete_groups_deletes_an_empty_share_group(client: WireClient) -> None:
    create_topic(client, "deleted", 1)
    heartbeat(client, "s-delete", "m", 0, ["deleted"])
    busy = client.call(ApiKey.DeleteGroups, 2, groups_names=["s-delete"])
    assert busy.results[0].error_code == E.NON_EMPTY_GROUP
    heartbeat(client, "s-delete", "m", -1)
    deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["s-delete"])
    assert deleted.results[0].error_code == E.NO_ERROR
    assert describe(client, "s-delete").error_code == E.GROUP_ID_NOT_FOUND


def test_group_configs_set_the_heartbeat_interval(client: WireClient) -> None:
    altered = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            {
                "resource_type": 32,
                "resource_name": "s-configured",
                "configs": [
                    {"name": "share.heartbeat.interval.ms", "config_operation": 0, "value": "70"}
                ],
            }
        ],
        validate_only=False,
    )
    assert altered.responses[0].error_code == E.NO_ERROR
    create_topic(client, "configured", 1)
    joined = heartbeat(client, "s-configured", "m", 0, ["configured"])
    assert joined.heartbeat_interval_ms == 70


# ---- broker settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {
                "group.share.max.heartbeat.interval.ms": "60000",
                "group.share.heartbeat.interval.ms": "50000",
            },
            "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms",
        ),
        ({"group.share.session.timeout.ms": "1000"}, "group.share.session.timeout.ms must be"),
        ({"group.share.max.heartbeat.interval.ms": "4000"}, "group.share.heartbeat.interval.ms"),
        ({"group.share.max.size": "0"}, "group.share.max.size must be between 1 and 1000"),
        ({"group.share.max.size": "1001"}, "group.share.max.size must be between 1 and 1000"),
        ({"group.share.assignors": "uniform"}, "group.share.assignors must name one assignor"),
        ({"group.share.assignors": "simple,simple"}, "group.share.assignors must name one"),
    ],
)
def test_bad_share_settings_are_refused_at_start(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        KafkaBroker(storage="memory", config=settings).start()


def test_kafkas_assignor_class_name_is_accepted() -> None:
    name = "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"
    with KafkaBroker(storage="memory", config={"group.share.assignors": name}) as kafka:
        assert kafka.bootstrap_servers


# ---- what ShareFetch reads, the Python testing API --------------------------------------------


def test_member_assignment_is_what_the_member_was_answered(
    client: WireClient, broker: ThreadedBroker
) -> None:
    topic_id = create_topic(client, "fetched", 2)
    heartbeat(client, "s-fetch", "a", 0, ["fetched"])
    second = assigned(heartbeat(client, "s-fetch", "b", 0, ["fetched"]))
    commit_offset(client, "s-fetch-classic", "fetched")

    async def read(group: str, member_id: str) -> set[tuple[uuid.UUID, int]] | None:
        assert broker.broker is not None
        return broker.broker.groups.share.member_assignment(group, member_id)

    # "a" has not heartbeated since "b" joined: it still has both partitions.
    assert broker.call(read("s-fetch", "a")) == {(topic_id, 0), (topic_id, 1)}
    assert broker.call(read("s-fetch", "b")) == {(topic_id, p) for p in second[topic_id]}
    assert broker.call(read("s-fetch", "nobody")) is None
    assert broker.call(read("s-none", "a")) is None
    assert broker.call(read("s-fetch-classic", "a")) is None


# ---- the Python testing API -----------------------------------------------------------------


def test_share_group_snapshot() -> None:
    with KafkaBroker(storage="memory") as kafka, WireClient(kafka.bootstrap_servers) as client:
        kafka.create_topic("snap", partitions=1)
        heartbeat(client, "s-snap", "a", 0, ["snap"])
        heartbeat(client, "s-snap", "b", 0, ["snap"])
        view = kafka.share_group("s-snap")
        assert view is not None
        assert (view.state, view.group_epoch, view.assignment_epoch) == ("Stable", 2, 2)
        assert view.members["a"].member_epoch == 1
        assert view.members["a"].target == view.members["b"].assigned == {"snap": [0]}
        assert kafka.share_group("s-none") is None
