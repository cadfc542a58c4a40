"""Streams groups seen by the other group APIs, over the wire: StreamsGroupDescribe (every
field, unknown groups, other kinds of groups), ListGroups with the "streams" type, DescribeGroups
(not a classic group), DeleteGroups, OffsetCommit and OffsetFetch checked by member epoch as
Kafka's StreamsGroup validates them, the `streams.version` feature, and releases before 4.2
not advertising the streams APIs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing import KafkaBroker
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.streamshelp import (
    STREAMS_SETTINGS,
    E,
    Member,
    create_topic,
    describe,
    heartbeat,
    join,
    settle,
    subtopology,
    topology,
)
from tests.groups.wirehelp import commit
from tests.wire import WireClient

INT32_MIN = -(2**31)


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    settings = {**STREAMS_SETTINGS, "group.streams.session.timeout.ms": "30000"}
    with ThreadedBroker(settings=settings) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def app(source: str) -> dict[str, Any]:
    return topology(
        subtopology("0", [source], changelogs=[f"{source}-store-changelog"]),
        subtopology("1", [source]),
        epoch=2,
    )


# ---- StreamsGroupDescribe -------------------------------------------------------------------


def test_describe_shows_the_group_its_topology_and_members(client: WireClient) -> None:
    create_topic(client, "ad-in1", 2)
    member = Member(
        client,
        "ad-g1",
        app("ad-in1"),
        process_id="proc-1",
        endpoint=("localhost", 8080),
        client_tags={"zone": "a"},
        rack_id="rack-1",
    )
    member.beat(task_offsets=[("0", 0, 42)])
    (group,) = describe(client, "ad-g1", operations=True)
    assert (group.error_code, group.error_message) == (E.NO_ERROR, None)
    assert (group.group_id, group.group_state) == ("ad-g1", "Stable")
    assert group.group_epoch == group.assignment_epoch == member.epoch
    assert group.authorized_operations != INT32_MIN
    assert group.topology.epoch == 2
    sub0, sub1 = group.topology.subtopologies
    assert (sub0.subtopology_id, sub0.source_topics) == ("0", ["ad-in1"])
    assert [(t.name, t.partitions) for t in sub0.state_changelog_topics] == [
        ("ad-in1-store-changelog", 2)
    ]
    assert (sub1.subtopology_id, sub1.state_changelog_topics) == ("1", [])
    (described,) = group.members
    assert described.member_id == member.member_id
    assert described.member_epoch == member.epoch
    assert (described.process_id, described.rack_id, described.topology_epoch) == (
        "proc-1",
        "rack-1",
        2,
    )
    assert (described.user_endpoint.host, described.user_endpoint.port) == ("localhost", 8080)
    assert [(kv.key, kv.value) for kv in described.client_tags] == [("zone", "a")]
    assert [(o.subtopology_id, o.partition, o.offset) for o in described.task_offsets] == [
        ("0", 0, 42)
    ]
    assert described.is_classic is False
    assert described.instance_id is None
    for assignment in (described.assignment, described.target_assignment):
        assert {t.subtopology_id: t.partitions for t in assignment.active_tasks} == {
            "0": [0, 1],
            "1": [0, 1],
        }
        assert assignment.standby_tasks == assignment.warmup_tasks == []


def test_describe_unknown_and_other_groups(client: WireClient) -> None:
    create_topic(client, "ad-in2", 1)
    commit(client, "ad-offsets-only", {("ad-in2", 0): 5})
    missing, other = describe(client, "ad-none", "ad-offsets-only")
    assert (missing.error_code, missing.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group ad-none not found.",
    )
    assert (other.error_code, other.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group ad-offsets-only is not a streams group.",
    )
    assert missing.topology is None and missing.members == []
    assert missing.authorized_operations == INT32_MIN


def test_an_empty_classic_group_with_offsets_becomes_a_streams_group(client: WireClient) -> None:
    create_topic(client, "ad-in3", 1)
    commit(client, "ad-g3", {("ad-in3", 0): 7})
    Member(client, "ad-g3", app("ad-in3"))
    assert describe(client, "ad-g3")[0].error_code == E.NO_ERROR
    fetched = offset_fetch(client, "ad-g3", None, -1)
    assert fetched.error_code == E.NO_ERROR
    assert fetched.topics[0].partitions[0].committed_offset == 7


def test_a_consumer_heartbeat_on_a_streams_group_is_refused(client: WireClient) -> None:
    create_topic(client, "ad-in4", 1)
    Member(client, "ad-g4", app("ad-in4"))
    response = client.call(
        ApiKey.ConsumerGroupHeartbeat,
        1,
        group_id="ad-g4",
        member_id="c1",
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=["ad-in4"],
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=[],
    )
    assert (response.error_code, response.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group ad-g4 is not a consumer group.",
    )


# ---- ListGroups, DescribeGroups, DeleteGroups ------------------------------------------------


def list_groups(client: WireClient, types: list[str]) -> dict[str, tuple[str, str, str]]:
    response = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=types)
    return {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in response.groups}


def test_list_groups_shows_streams_groups_and_filters_by_type(client: WireClient) -> None:
    create_topic(client, "ad-in5", 1)
    Member(client, "ad-g5", app("ad-in5")).beat()  # ready once its changelog topic exists
    join(client, "ad-g5-notready", topology(subtopology("0", ["ad-missing"])))
    listed = list_groups(client, ["streams"])
    assert listed["ad-g5"] == ("streams", "streams", "Stable")
    assert listed["ad-g5-notready"] == ("streams", "streams", "NotReady")
    assert all(kind == "streams" for kind, _, _ in listed.values())
    assert "ad-g5" not in list_groups(client, ["consumer"])
    response = client.call(ApiKey.ListGroups, 5, states_filter=["notready"], types_filter=[])
    assert "ad-g5-notready" in {g.group_id for g in response.groups}


def test_describe_groups_says_it_is_not_a_classic_group(client: WireClient) -> None:
    create_topic(client, "ad-in6", 1)
    Member(client, "ad-g6", app("ad-in6"))
    response = client.call(
        ApiKey.DescribeGroups, 6, groups=["ad-g6"], include_authorized_operations=False
    )
    (group,) = response.groups
    assert (group.error_code, group.error_message, group.group_state) == (
        E.GROUP_ID_NOT_FOUND,
        "Group ad-g6 is not a classic group.",
        "Dead",
    )


def delete_group(client: WireClient, group: str) -> int:
    response = client.call(ApiKey.DeleteGroups, 2, groups_names=[group])
    return int(response.results[0].error_code)


def test_delete_groups_refuses_members_and_deletes_an_empty_group(client: WireClient) -> None:
    create_topic(client, "ad-in7", 1)
    member = Member(client, "ad-g7", app("ad-in7"))
    assert delete_group(client, "ad-g7") == E.NON_EMPTY_GROUP
    member.leave()
    assert describe(client, "ad-g7")[0].group_state == "Empty"
    assert delete_group(client, "ad-g7") == E.NO_ERROR
    assert describe(client, "ad-g7")[0].error_code == E.GROUP_ID_NOT_FOUND
    assert "ad-g7" not in list_groups(client, [])


# ---- offsets by member epoch ----------------------------------------------------------------


def offset_fetch(client: WireClient, group: str, member_id: str | None, epoch: int) -> Any:
    response = client.call(
        ApiKey.OffsetFetch,
        9,
        groups=[
            {
                "group_id": group,
                "member_id": member_id,
                "member_epoch": epoch,
                "topics": None,
            }
        ],
        require_stable=False,
    )
    return response.groups[0]


def test_offset_commit_is_checked_by_member_epoch(client: WireClient) -> None:
    create_topic(client, "ad-in8", 2)
    first = Member(client, "ad-g8", app("ad-in8"))
    second = Member(client, "ad-g8", app("ad-in8"))
    settle([first, second])
    offsets = {("ad-in8", 0): 3}
    assert commit(
        client, "ad-g8", offsets, member_id=first.member_id, generation=first.epoch, version=9
    ) == {("ad-in8", 0): E.NO_ERROR}
    assert commit(
        client, "ad-g8", offsets, member_id=first.member_id, generation=first.epoch - 1, version=9
    ) == {("ad-in8", 0): E.STALE_MEMBER_EPOCH}
    assert commit(client, "ad-g8", offsets, member_id="stranger", generation=1, version=9) == {
        ("ad-in8", 0): E.UNKNOWN_MEMBER_ID
    }
    # An admin commit (epoch -1) only while the group has no members.
    assert commit(client, "ad-g8", offsets, version=9) == {("ad-in8", 0): E.UNKNOWN_MEMBER_ID}
    # Members of a streams group commit with OffsetCommit v9+.
    assert commit(
        client, "ad-g8", offsets, member_id=first.member_id, generation=first.epoch, version=8
    ) == {("ad-in8", 0): E.UNSUPPORTED_VERSION}


def test_offset_fetch_is_checked_by_member_epoch(client: WireClient) -> None:
    create_topic(client, "ad-in9", 1)
    member = Member(client, "ad-g9", app("ad-in9"))
    assert offset_fetch(client, "ad-g9", member.member_id, member.epoch).error_code == E.NO_ERROR
    assert (
        offset_fetch(client, "ad-g9", member.member_id, member.epoch + 1).error_code
        == E.STALE_MEMBER_EPOCH
    )
    assert offset_fetch(client, "ad-g9", "stranger", 1).error_code == E.UNKNOWN_MEMBER_ID
    assert offset_fetch(client, "ad-g9", None, -1).error_code == E.NO_ERROR


# ---- streams.version and releases ------------------------------------------------------------


def test_streams_version_0_answers_unsupported_version() -> None:
    with KafkaBroker(storage="memory") as kafka, WireClient(kafka.bootstrap_servers) as client:
        update = client.call(
            ApiKey.UpdateFeatures,
            2,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "streams.version", "max_version_level": 0, "upgrade_type": 2}
            ],
            validate_only=False,
        )
        assert update.error_code == E.NO_ERROR
        response = join(client, "g", topology(subtopology("0", ["in"])))
        assert (response.error_code, response.error_message) == (E.UNSUPPORTED_VERSION, None)
        (group,) = describe(client, "g")
        assert (group.error_code, group.error_message) == (E.UNSUPPORTED_VERSION, None)


def api_versions(settings: dict[str, str]) -> tuple[dict[int, tuple[int, int]], dict[str, int]]:
    with (
        ThreadedBroker(settings=settings) as running,
        WireClient(running.bootstrap_servers) as client,
    ):
        response = client.call(
            ApiKey.ApiVersions, 3, client_software_name="t", client_software_version="1"
        )
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        finalized = {f.name: f.max_version_level for f in response.finalized_features}
        return keys, finalized


@pytest.mark.parametrize(("release", "served"), [("4.1", False), ("4.2", True), ("4.3", True)])
def test_streams_apis_are_advertised_from_kafka_4_2(release: str, served: bool) -> None:
    keys, finalized = api_versions({"minibroker.emulate.kafka.version": release})
    assert (ApiKey.StreamsGroupHeartbeat in keys) is served
    assert (ApiKey.StreamsGroupDescribe in keys) is served
    if served:
        assert keys[ApiKey.StreamsGroupHeartbeat] == keys[ApiKey.StreamsGroupDescribe] == (0, 0)
        assert finalized.get("streams.version") == 1
    else:
        assert "streams.version" not in finalized


def test_a_stale_member_epoch_heartbeat_after_leave_is_unknown(client: WireClient) -> None:
    create_topic(client, "ad-in10", 1)
    member = Member(client, "ad-g10", app("ad-in10"))
    member.leave()
    response = heartbeat(client, "ad-g10", member.member_id, member.epoch)
    assert response.error_code == E.UNKNOWN_MEMBER_ID


def test_a_classic_join_converts_only_an_empty_streams_group(client: WireClient) -> None:
    create_topic(client, "ad-in11", 1)
    member = Member(client, "ad-g11", app("ad-in11"))
    commit(
        client,
        "ad-g11",
        {("ad-in11", 0): 4},
        member_id=member.member_id,
        generation=member.epoch,
        version=9,
    )
    refused = classic_join(client, "ad-g11")
    assert refused.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    member.leave()
    joined = classic_join(client, "ad-g11")
    assert joined.error_code == E.MEMBER_ID_REQUIRED
    assert describe(client, "ad-g11")[0].error_message == "Group ad-g11 is not a streams group."
    fetched = offset_fetch(client, "ad-g11", None, -1)
    assert fetched.topics[0].partitions[0].committed_offset == 4


def classic_join(client: WireClient, group: str) -> Any:
    return client.call(
        ApiKey.JoinGroup,
        9,
        group_id=group,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b""}],
        reason=None,
    )


def test_a_commit_at_an_older_epoch_is_checked_per_task(client: WireClient) -> None:
    """KIP-1251 (Kafka 4.3.1): a member may commit at an older epoch the partitions of the
    active tasks it holds since that epoch or before."""
    create_topic(client, "ad-in12", 4)
    topo = topology(subtopology("0", ["ad-in12"]))
    first = Member(client, "ad-g12", topo)
    older = first.epoch
    second = Member(client, "ad-g12", topo)
    settle([first, second])
    assert first.epoch > older
    kept = first.active["0"][0]
    moved = second.active["0"][0]

    def commit_at(member: Member, epoch: int, partition: int) -> int:
        answer = commit(
            client,
            "ad-g12",
            {("ad-in12", partition): 1},
            member_id=member.member_id,
            generation=epoch,
            version=9,
        )
        return answer[("ad-in12", partition)]

    assert commit_at(first, older, kept) == E.NO_ERROR
    assert commit_at(first, older, moved) == E.STALE_MEMBER_EPOCH
    assert commit_at(second, second.epoch - 1, moved) == E.STALE_MEMBER_EPOCH
    assert commit_at(first, first.epoch + 1, kept) == E.STALE_MEMBER_EPOCH
