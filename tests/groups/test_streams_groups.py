"""KIP-1071 streams groups over raw StreamsGroupHeartbeat requests: members joining with a
topology, member epochs, the sticky task assignor's active and standby tasks, revocation
before a task moves, leaving and session timeouts, and every bad-input error with Kafka's
message (cases from Kafka's GroupMetadataManagerTest and StickyTaskAssignorTest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.groups.streamshelp import (
    STREAMS_SETTINGS,
    E,
    Member,
    create_topic,
    describe,
    heartbeat,
    join,
    ok,
    settle,
    statuses,
    subtopology,
    tasks,
    topic_info,
    topology,
    wait_for,
)
from tests.wire import WireClient


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=STREAMS_SETTINGS) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def stateless(source: str) -> dict[str, object]:
    return topology(subtopology("0", [source]))


def stateful(source: str, changelog: str) -> dict[str, object]:
    return topology(subtopology("0", [source], changelogs=[changelog]))


# ---- joining, epochs, active tasks ----------------------------------------------------------


def test_first_member_gets_every_active_task(client: WireClient) -> None:
    create_topic(client, "st-in1", 4)
    response = ok(join(client, "st-g1", stateless("st-in1")))
    assert response.member_epoch == 1  # one bump for the new member and the valid topology
    assert response.heartbeat_interval_ms == 50
    assert (response.acceptable_recovery_lag, response.task_offset_interval_ms) == (0, 0)
    assert tasks(response.active_tasks) == {"0": [0, 1, 2, 3]}
    assert tasks(response.standby_tasks) == {}
    assert tasks(response.warmup_tasks) == {}
    assert statuses(response) == []
    (group,) = describe(client, "st-g1")
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Stable", 1, 1)


def test_a_heartbeat_without_changes_leaves_the_tasks_out(client: WireClient) -> None:
    create_topic(client, "st-in2", 2)
    member = Member(client, "st-g2", stateless("st-in2"))
    response = member.beat()
    assert response.member_epoch == member.epoch
    assert response.active_tasks is None and response.standby_tasks is None


def test_tasks_move_only_after_the_owner_revokes_them(client: WireClient) -> None:
    create_topic(client, "st-in3", 4)
    first = Member(client, "st-g3", stateless("st-in3"))
    assert first.active == {"0": [0, 1, 2, 3]}
    second = Member(client, "st-g3", stateless("st-in3"))
    # The target gives the second member half, but the first one still owns them.
    assert second.active == {}
    (group,) = describe(client, "st-g3")
    assert group.group_state == "Reconciling"
    revoking = first.beat()
    assert first.epoch == revoking.member_epoch  # revocation keeps the epoch
    assert sum(len(p) for p in first.active.values()) == 2
    first.beat()  # reports the revoked tasks gone: moves to the new epoch
    assert first.epoch == describe(client, "st-g3")[0].assignment_epoch
    second.beat()
    assert sum(len(p) for p in second.active.values()) == 2
    assert set(first.active["0"]) | set(second.active["0"]) == {0, 1, 2, 3}
    (group,) = describe(client, "st-g3")
    assert group.group_state == "Stable"


def test_tasks_are_spread_over_processes_and_their_members(client: WireClient) -> None:
    create_topic(client, "st-in4", 6)
    topo = stateless("st-in4")
    members = [Member(client, "st-g4", topo, process_id=f"p{i % 2}") for i in range(3)]
    settle(members)
    counts = sorted(sum(len(p) for p in m.active.values()) for m in members)
    assert counts == [2, 2, 2]
    owned = sorted(p for m in members for p in m.active.get("0", []))
    assert owned == [0, 1, 2, 3, 4, 5]


def test_assignment_is_sticky_when_a_member_leaves(client: WireClient) -> None:
    create_topic(client, "st-in5", 6)
    topo = stateless("st-in5")
    members = [Member(client, "st-g5", topo) for _ in range(3)]
    settle(members)
    kept = {m.member_id: set(m.active["0"]) for m in members[:2]}
    members[2].leave()
    settle(members[:2])
    for member in members[:2]:
        assert kept[member.member_id] <= set(member.active["0"])
        assert len(member.active["0"]) == 3


def test_stateful_tasks_get_standbys_on_another_process(client: WireClient) -> None:
    create_topic(client, "st-in6", 2)
    topo = stateful("st-in6", "st-g6-store-changelog")
    alter_group_config(client, "st-g6", "streams.num.standby.replicas", "1")
    members = [Member(client, "st-g6", topo, process_id=f"p{i}") for i in range(2)]
    settle(members)
    for member, other in (members, members[::-1]):
        assert len(member.active["0"]) == 1
        assert member.standby == other.active  # the standby of the other one's task
    (group,) = describe(client, "st-g6")
    assert group.group_state == "Stable"


def test_no_standby_on_the_process_that_runs_the_active_task(client: WireClient) -> None:
    create_topic(client, "st-in7", 2)
    alter_group_config(client, "st-g7", "streams.num.standby.replicas", "1")
    topo = stateful("st-in7", "st-g7-store-changelog")
    members = [Member(client, "st-g7", topo, process_id="same") for _ in range(2)]
    settle(members)
    assert all(m.standby == {} for m in members)
    assert sorted(p for m in members for p in m.active["0"]) == [0, 1]


def test_changing_num_standby_replicas_rebalances(client: WireClient) -> None:
    create_topic(client, "st-in8", 2)
    topo = stateful("st-in8", "st-g8-store-changelog")
    members = [Member(client, "st-g8", topo, process_id=f"p{i}") for i in range(2)]
    settle(members)
    assert all(m.standby == {} for m in members)
    epoch = describe(client, "st-g8")[0].group_epoch
    alter_group_config(client, "st-g8", "streams.num.standby.replicas", "1")
    settle(members)
    assert describe(client, "st-g8")[0].group_epoch == epoch + 1
    assert all(len(m.standby.get("0", [])) == 1 for m in members)


def test_leaving_answers_epoch_minus_one_and_frees_the_tasks(client: WireClient) -> None:
    create_topic(client, "st-in9", 2)
    topo = stateless("st-in9")
    first, second = Member(client, "st-g9", topo), Member(client, "st-g9", topo)
    settle([first, second])
    left = first.leave()
    assert (left.member_id, left.member_epoch) == (first.member_id, -1)
    second.beat()
    assert second.active == {"0": [0, 1]}
    assert [m.member_id for m in describe(client, "st-g9")[0].members] == [second.member_id]


def test_a_member_that_misses_its_session_is_fenced(client: WireClient) -> None:
    create_topic(client, "st-in10", 2)
    topo = stateless("st-in10")
    gone = Member(client, "st-g10", topo)
    stays = Member(client, "st-g10", topo)

    def only_one_left() -> bool:
        stays.beat()
        return len(describe(client, "st-g10")[0].members) == 1

    wait_for(only_one_left)
    settle([stays])
    assert stays.active == {"0": [0, 1]}
    response = heartbeat(
        client, "st-g10", gone.member_id, gone.epoch, active={}, standby={}, warmup={}
    )
    assert (response.error_code, response.error_message) == (
        E.UNKNOWN_MEMBER_ID,
        f"Member {gone.member_id} is not a member of group st-g10.",
    )


def test_a_member_that_does_not_revoke_in_time_is_fenced(client: WireClient) -> None:
    create_topic(client, "st-in11", 2)
    topo = stateless("st-in11")
    slow = Member(client, "st-g11", topo, rebalance_timeout_ms=300)
    other = Member(client, "st-g11", topo)
    slow.beat()  # told to revoke one task: it never reports it revoked

    def fenced() -> bool:
        other.beat()
        return [m.member_id for m in describe(client, "st-g11")[0].members] == [other.member_id]

    wait_for(fenced)


# ---- member epochs ------------------------------------------------------------------------


def test_an_epoch_ahead_of_the_coordinator_is_fenced(client: WireClient) -> None:
    create_topic(client, "st-in12", 1)
    member = Member(client, "st-g12", stateless("st-in12"))
    response = heartbeat(client, "st-g12", member.member_id, member.epoch + 1)
    assert (response.error_code, response.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        f"The streams group member has a greater member epoch ({member.epoch + 1}) than the "
        f"one known by the group coordinator ({member.epoch}). The member must abandon all "
        "its partitions and rejoin.",
    )


def test_the_previous_epoch_is_accepted_with_owned_tasks_in_the_assignment(
    client: WireClient,
) -> None:
    create_topic(client, "st-in13", 2)
    topo = stateless("st-in13")
    first = Member(client, "st-g13", topo)
    second = Member(client, "st-g13", topo)
    settle([first, second])
    previous = first.epoch - 1
    # The answer with the new epoch was lost: the previous epoch with owned tasks within the
    # assignment is still accepted.
    lost = ok(
        heartbeat(
            client, "st-g13", first.member_id, previous, active=first.active, standby={}, warmup={}
        )
    )
    assert lost.member_epoch == first.epoch
    owned_elsewhere = {"0": [0, 1]}
    stale = heartbeat(
        client, "st-g13", first.member_id, previous, active=owned_elsewhere, standby={}, warmup={}
    )
    assert (stale.error_code, stale.error_message) == (
        E.FENCED_MEMBER_EPOCH,
        f"The streams group member has a smaller member epoch ({previous}) than the one known "
        f"by the group coordinator ({first.epoch}). The member must abandon all its partitions "
        "and rejoin.",
    )


def test_rejoining_with_epoch_0_keeps_the_member(client: WireClient) -> None:
    create_topic(client, "st-in14", 2)
    topo = stateless("st-in14")
    member = Member(client, "st-g14", topo)
    again = ok(
        join(client, "st-g14", topo, member_id=member.member_id, process_id=member.process_id)
    )
    assert again.member_epoch == member.epoch
    assert tasks(again.active_tasks) == {"0": [0, 1]}


# ---- errors, with Kafka's messages --------------------------------------------------------


INVALID = [
    ({"member_id": " "}, "MemberId can't be empty."),
    ({"group": " "}, "GroupId can't be empty."),
    ({"instance_id": ""}, "InstanceId can't be empty."),
    ({"rack_id": ""}, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
    ({"active": {"0": [0]}}, "ActiveTasks must be empty when (re-)joining."),
    ({"standby": {"0": [0]}}, "StandbyTasks must be empty when (re-)joining."),
    ({"warmup": {"0": [0]}}, "WarmupTasks must be empty when (re-)joining."),
    ({"topo": None}, "Topology must be non-null when (re-)joining."),
    ({"warmup": None}, "WarmupTasks must be empty when (re-)joining."),
    (
        {"epoch": 5, "topo": None, "standby": None, "warmup": None},
        "If one task-type is non-null, all must be non-null.",
    ),
    ({"group": "\x00 \t"}, "GroupId can't be empty."),
    ({"epoch": -3}, "MemberEpoch is -3, but must be greater than or equal to -2."),
    (
        {"epoch": 5, "active": None, "standby": None, "warmup": None},
        "Topology can only be provided when (re-)joining.",
    ),
    (
        {"epoch": -2, "active": None, "standby": None, "warmup": None, "topo": None},
        "InstanceId can't be null.",
    ),
]


@pytest.mark.parametrize(("changes", "message"), INVALID, ids=[m for _, m in INVALID])
def test_invalid_requests_answer_invalid_request(
    client: WireClient, changes: dict[str, object], message: str
) -> None:
    request: dict[str, object] = {
        "group": "st-invalid",
        "member_id": "m",
        "epoch": 0,
        "topo": stateless("st-invalid-in"),
        "active": {},
        "standby": {},
        "warmup": {},
        "rebalance_timeout_ms": 1000,
        "process_id": "p",
    }
    request.update(changes)
    group = str(request.pop("group"))
    member_id = str(request.pop("member_id"))
    epoch = int(str(request.pop("epoch")))
    response = heartbeat(client, group, member_id, epoch, **request)  # type: ignore[arg-type]
    assert (response.error_code, response.error_message) == (E.INVALID_REQUEST, message)
    assert response.member_epoch == 0


def test_source_topic_regex_is_not_supported(client: WireClient) -> None:
    topo = topology(subtopology("0", [], regex=["in-.*"]))
    response = join(client, "st-regex", topo)
    assert (response.error_code, response.error_message) == (
        E.INVALID_REQUEST,
        "Regular expressions for source topics are not supported yet.",
    )


def test_a_changelog_topic_with_a_partition_count_is_an_invalid_topology(
    client: WireClient,
) -> None:
    topo = topology(subtopology("0", ["x"]))
    topo["subtopologies"][0]["state_changelog_topics"] = [
        {"name": "x-changelog", "partitions": 3, "replication_factor": 0, "topic_configs": []}
    ]
    response = join(client, "st-badlog", topo)
    assert (response.error_code, response.error_message) == (
        E.STREAMS_INVALID_TOPOLOGY,
        "Changelog topic x-changelog must have an undefined partition count, but it is set to 3.",
    )


def test_a_refused_join_changes_nothing(client: WireClient) -> None:
    """Kafka applies a heartbeat's records only when it succeeds: a refused join neither
    creates the group nor adds the member."""
    create_topic(client, "st-in25", 1)
    bad = topology(subtopology("0", ["st-in25"], repartition_sources=[topic_info("orphan")]))
    assert join(client, "st-refused", bad).error_code == E.STREAMS_INVALID_TOPOLOGY
    assert describe(client, "st-refused")[0].error_code == E.GROUP_ID_NOT_FOUND
    create_topic(client, "st-in23", 1)
    first = Member(client, "st-g23", stateless("st-in23"))
    other = join(client, "st-g23", stateless("st-other-in"))
    assert other.error_code == E.INVALID_REQUEST
    (group,) = describe(client, "st-g23")
    assert [m.member_id for m in group.members] == [first.member_id]
    assert group.group_epoch == first.epoch


def test_a_copartition_index_out_of_range_is_an_unknown_server_error(client: WireClient) -> None:
    create_topic(client, "st-in24", 1)
    topo = topology(
        subtopology(
            "0",
            ["st-in24"],
            copartition=[
                {"source_topics": [3], "source_topic_regex": [], "repartition_source_topics": []}
            ],
        )
    )
    response = join(client, "st-g24", topo)
    assert (response.error_code, response.error_message) == (E.UNKNOWN_SERVER_ERROR, None)
    assert describe(client, "st-g24")[0].error_code == E.GROUP_ID_NOT_FOUND


def test_static_members_are_not_supported(client: WireClient) -> None:
    response = join(client, "st-static", stateless("st-static-in"), instance_id="i1")
    assert (response.error_code, response.error_message) == (
        E.UNKNOWN_SERVER_ERROR,
        None,
    )


def test_unknown_group_and_unknown_member(client: WireClient) -> None:
    response = heartbeat(client, "st-nogroup", "m", 3)
    assert (response.error_code, response.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Streams group st-nogroup not found.",
    )
    create_topic(client, "st-in15", 1)
    Member(client, "st-g15", stateless("st-in15"))
    response = heartbeat(client, "st-g15", "stranger", 3)
    assert (response.error_code, response.error_message) == (
        E.UNKNOWN_MEMBER_ID,
        "Member stranger is not a member of group st-g15.",
    )
    response = heartbeat(client, "st-g15", "stranger", -1)
    assert response.error_code == E.UNKNOWN_MEMBER_ID


def test_tasks_outside_the_topology_are_invalid(client: WireClient) -> None:
    create_topic(client, "st-in16", 2)
    member = Member(client, "st-g16", stateless("st-in16"))
    response = heartbeat(
        client, "st-g16", member.member_id, member.epoch, active={"0": [5]}, standby={}, warmup={}
    )
    assert (response.error_code, response.error_message) == (
        E.INVALID_REQUEST,
        "Task 5 for subtopology 0 is invalid. Number of tasks for this subtopology: 2",
    )
    response = heartbeat(
        client, "st-g16", member.member_id, member.epoch, active={"9": [0]}, standby={}, warmup={}
    )
    assert (response.error_code, response.error_message) == (
        E.INVALID_REQUEST,
        "Subtopology 9 does not exist in the topology.",
    )


def test_a_different_topology_at_the_same_epoch_is_refused(client: WireClient) -> None:
    create_topic(client, "st-in17", 1)
    create_topic(client, "st-in17b", 1)
    Member(client, "st-g17", stateless("st-in17"))
    response = join(client, "st-g17", stateless("st-in17b"))
    assert (response.error_code, response.error_message) == (
        E.INVALID_REQUEST,
        "Topology updates are not supported yet.",
    )


def test_an_older_topology_epoch_gets_stale_topology(client: WireClient) -> None:
    create_topic(client, "st-in18", 2)
    Member(client, "st-g18", topology(subtopology("0", ["st-in18"]), epoch=3))
    response = ok(join(client, "st-g18", topology(subtopology("0", ["st-in18"]), epoch=2)))
    assert statuses(response) == [
        (0, "The member's topology epoch 2 is behind the group's topology epoch 3.")
    ]


def test_shutdown_application_is_told_to_every_member(client: WireClient) -> None:
    create_topic(client, "st-in19", 2)
    topo = stateless("st-in19")
    first, second = Member(client, "st-g19", topo), Member(client, "st-g19", topo)
    first.beat(shutdown=True)
    response = second.beat()
    assert statuses(response) == [
        (
            4,
            f"Streams group member {first.member_id} encountered a fatal error and requested "
            "a shutdown for the entire application.",
        )
    ]


def test_max_size_is_enforced() -> None:
    settings = {**STREAMS_SETTINGS, "group.streams.max.size": "1"}
    with ThreadedBroker(settings=settings) as running, WireClient(running.bootstrap_servers) as c:
        create_topic(c, "in", 1)
        ok(join(c, "g", stateless("in")))
        response = join(c, "g", stateless("in"))
        assert (response.error_code, response.error_message) == (
            E.GROUP_MAX_SIZE_REACHED,
            "The streams group has reached its maximum capacity of 1 members.",
        )


def test_initial_rebalance_delay_answers_assignment_delayed() -> None:
    settings = {**STREAMS_SETTINGS, "group.streams.initial.rebalance.delay.ms": "500"}
    with ThreadedBroker(settings=settings) as running, WireClient(running.bootstrap_servers) as c:
        create_topic(c, "in", 2)
        member = Member(c, "g", stateless("in"))
        assert member.active == {}
        assert statuses(member.last) == [
            (5, "Assignment delayed due to the configured initial rebalance delay.")
        ]

        def assigned() -> bool:
            member.beat()
            return member.active == {"0": [0, 1]}

        wait_for(assigned)


def test_the_assignment_interval_defers_a_new_target(client: WireClient) -> None:
    create_topic(client, "st-in22", 2)
    alter_group_config(client, "st-g22", "streams.assignment.interval.ms", "700")
    topo = stateless("st-in22")
    first = Member(client, "st-g22", topo)
    assert first.active == {"0": [0, 1]}
    second = Member(client, "st-g22", topo)
    # Joined right after the first target: it reconciles to that target, with no tasks.
    assert (second.epoch, second.active) == (first.epoch, {})
    assert statuses(second.last) == [
        (5, "Assignment delayed due to the configured assignment interval.")
    ]
    assert describe(client, "st-g22")[0].group_state == "Assigning"

    def spread() -> bool:
        settle([first, second], rounds=2)
        return len(first.active.get("0", [])) == len(second.active.get("0", [])) == 1

    wait_for(spread)
    assert statuses(second.last) == []


# ---- endpoints (interactive queries) ---------------------------------------------------------


def endpoints(response: object) -> dict[tuple[str, int], tuple[dict[str, list[int]], ...]]:
    return {
        (e.user_endpoint.host, e.user_endpoint.port): (
            {t.topic: t.partitions for t in e.active_partitions},
            {t.topic: t.partitions for t in e.standby_partitions},
        )
        for e in response.partitions_by_user_endpoint or ()  # type: ignore[attr-defined]
    }


def test_partitions_by_user_endpoint_follow_the_endpoint_information_epoch(
    client: WireClient,
) -> None:
    create_topic(client, "st-in20", 2)
    topo = stateless("st-in20")
    first = Member(client, "st-g20", topo, endpoint=("host-a", 9001))
    # The group was created by this heartbeat: Kafka answers endpoint epoch 0 (its bump is
    # on a group object the replay replaces) but lists the endpoints.
    assert first.last.endpoint_information_epoch == 0
    assert endpoints(first.last) == {("host-a", 9001): ({"st-in20": [0, 1]}, {})}
    quiet = first.beat(endpoint_epoch=0)
    assert quiet.partitions_by_user_endpoint is None
    second = Member(client, "st-g20", topo, endpoint=("host-b", 9002))
    settle([first, second])
    response = first.beat(endpoint_epoch=0)
    assert response.endpoint_information_epoch > 0
    served = endpoints(response)
    assert set(served) == {("host-a", 9001), ("host-b", 9002)}
    assert sorted(p for active, _ in served.values() for p in active["st-in20"]) == [0, 1]
    assert second.last.endpoint_information_epoch == response.endpoint_information_epoch


# ---- GROUP configs ------------------------------------------------------------------------


def test_group_configs_set_the_heartbeat_interval_and_session_timeout(
    client: WireClient,
) -> None:
    create_topic(client, "st-in21", 1)
    alter_group_config(client, "st-g21", "streams.heartbeat.interval.ms", "20")
    alter_group_config(client, "st-g21", "streams.session.timeout.ms", "300")
    member = Member(client, "st-g21", stateless("st-in21"))
    assert member.last.heartbeat_interval_ms == 20
    wait_for(lambda: describe(client, "st-g21")[0].members == [], timeout_s=5)


# ---- helpers ------------------------------------------------------------------------------


def alter_group_config(client: WireClient, group: str, name: str, value: str) -> None:
    from minibroker.protocol.api_keys import ApiKey

    response = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            {
                "resource_type": 32,
                "resource_name": group,
                "configs": [{"name": name, "config_operation": 0, "value": value}],
            }
        ],
        validate_only=False,
    )
    assert response.responses[0].error_code == E.NO_ERROR, response.responses[0].error_message
