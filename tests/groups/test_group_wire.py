"""The group coordinator over raw requests: rebalances, errors, offsets, admin, restarts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from minibroker.groups.store import OFFSETS_TOPIC
from minibroker.log.segmented import SegmentedLog
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import Record, iter_records
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.conftest import GROUP_SETTINGS
from tests.groups.wirehelp import (
    commit,
    fetch_offsets,
    form_group,
    heartbeat,
    join,
    join_two_step,
    sync,
    wait_until,
)
from tests.wire import WireClient


@pytest.fixture
def client(group_bootstrap: str) -> Iterator[WireClient]:
    with WireClient(group_bootstrap) as wire:
        yield wire


def create_topic(client: WireClient, name: str, partitions: int) -> None:
    response = client.call(
        ApiKey.CreateTopics,
        5,
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
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def test_advertised_group_api_ranges(client: WireClient) -> None:
    response = client.call(
        ApiKey.ApiVersions, 3, client_software_name="t", client_software_version="1"
    )
    ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert ranges[ApiKey.FindCoordinator] == (0, 6)
    assert ranges[ApiKey.JoinGroup] == (0, 9)
    assert ranges[ApiKey.SyncGroup] == (0, 5)
    assert ranges[ApiKey.Heartbeat] == (0, 4)
    assert ranges[ApiKey.LeaveGroup] == (0, 5)
    assert ranges[ApiKey.OffsetCommit] == (2, 10)
    assert ranges[ApiKey.OffsetFetch] == (1, 10)
    assert ranges[ApiKey.ListGroups] == (0, 5)
    assert ranges[ApiKey.DescribeGroups] == (0, 6)
    assert ranges[ApiKey.DeleteGroups] == (0, 2)
    assert ranges[ApiKey.OffsetDelete] == (0, 0)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_unbatched(
    client: WireClient, group_broker: ThreadedBroker, version: int
) -> None:
    response = client.call(ApiKey.FindCoordinator, version, key="g", key_type=0)
    assert response.error_code == ErrorCode.NO_ERROR
    assert (response.host, response.port) == ("127.0.0.1", group_broker.port)
    assert response.node_id == 1


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched(
    client: WireClient, group_broker: ThreadedBroker, version: int
) -> None:
    response = client.call(ApiKey.FindCoordinator, version, key_type=0, coordinator_keys=["a", "b"])
    assert [c.key for c in response.coordinators] == ["a", "b"]
    assert all(c.error_code == ErrorCode.NO_ERROR for c in response.coordinators)
    assert all(c.port == group_broker.port for c in response.coordinators)


def test_find_coordinator_unknown_key_type(client: WireClient) -> None:
    response = client.call(ApiKey.FindCoordinator, 3, key="g", key_type=5)
    assert response.error_code == ErrorCode.INVALID_REQUEST


def test_offsets_topic_is_created_internal_and_compacted(client: WireClient) -> None:
    client.call(ApiKey.FindCoordinator, 2, key="g", key_type=0)
    response = client.call(ApiKey.Metadata, 9, topics=None, allow_auto_topic_creation=False)
    offsets = [t for t in response.topics if t.name == "__consumer_offsets"]
    assert len(offsets) == 1 and offsets[0].is_internal
    assert len(offsets[0].partitions) == 5
    configs = client.call(
        ApiKey.DescribeConfigs,
        1,
        resources=[
            {
                "resource_type": 2,
                "resource_name": "__consumer_offsets",
                "configuration_keys": ["cleanup.policy"],
            }
        ],
        include_synonyms=False,
    )
    assert configs.results[0].configs[0].value == "compact"


def test_single_member_two_step_join_sync_heartbeat(client: WireClient) -> None:
    first = join(client, "g1")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("wire-")
    joined = join(client, "g1", first.member_id)
    assert joined.error_code == ErrorCode.NO_ERROR
    assert joined.generation_id == 1
    assert joined.leader == joined.member_id == first.member_id
    assert joined.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, b"m")]
    synced = sync(client, "g1", joined.member_id, 1, {joined.member_id: b"assignment"})
    assert (synced.error_code, synced.assignment) == (ErrorCode.NO_ERROR, b"assignment")
    assert heartbeat(client, "g1", joined.member_id, 1) == ErrorCode.NO_ERROR
    assert heartbeat(client, "g1", joined.member_id, 0) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(client, "g1", "nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(client, "other", "nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_old_join_versions_assign_member_id_at_once(client: WireClient, version: int) -> None:
    joined = join(client, "old", version=version)
    assert joined.error_code == ErrorCode.NO_ERROR
    assert joined.member_id and joined.generation_id == 1


@pytest.mark.parametrize("version", [7, 9])
def test_join_v7_plus_carries_protocol_type(client: WireClient, version: int) -> None:
    joined = join_two_step(client, "g7", version=version)
    assert joined.protocol_type == "consumer"
    synced = client.call(
        ApiKey.SyncGroup,
        5,
        group_id="g7",
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[{"member_id": joined.member_id, "assignment": b"x"}],
    )
    assert (synced.error_code, synced.protocol_type, synced.protocol_name) == (
        0,
        "consumer",
        "range",
    )


def test_join_errors(client: WireClient) -> None:
    assert join(client, "").error_code == ErrorCode.INVALID_GROUP_ID
    assert join(client, "g", session_ms=50).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert join(client, "g", session_ms=1_800_001).error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    assert join(client, "g", "unknown-member").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert join(client, "g", protocols=[]).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert client.call(ApiKey.ListGroups, 0).groups == []
    member = join_two_step(client, "g")
    other = join(client, "g", protocols=[("roundrobin", b"")], version=3)
    assert other.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert member.error_code == ErrorCode.NO_ERROR


def test_second_member_triggers_rebalance(group_bootstrap: str) -> None:
    with (
        WireClient(group_bootstrap) as a,
        WireClient(group_bootstrap) as b,
        ThreadPoolExecutor() as pool,
    ):
        leader = join_two_step(a, "g", protocols=[("range", b"A")])
        assert sync(a, "g", leader.member_id, 1, {leader.member_id: b"all"}).assignment == b"all"
        b_id = join(b, "g", protocols=[("range", b"B")]).member_id
        b_join = pool.submit(join, b, "g", b_id, protocols=[("range", b"B")])
        wait_until(
            lambda: heartbeat(a, "g", leader.member_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
        )
        rejoined = join(a, "g", leader.member_id, protocols=[("range", b"A")])
        follower = b_join.result(10)
        assert rejoined.generation_id == follower.generation_id == 2
        assert rejoined.leader == follower.leader == leader.member_id
        assert sorted(m.metadata for m in rejoined.members) == [b"A", b"B"]
        assert follower.members == []
        b_sync = pool.submit(sync, b, "g", b_id, 2)
        leader_sync = sync(a, "g", leader.member_id, 2, {leader.member_id: b"p0", b_id: b"p1"})
        assert leader_sync.assignment == b"p0"
        assert b_sync.result(10).assignment == b"p1"
        assert heartbeat(a, "g", leader.member_id, 2) == ErrorCode.NO_ERROR


def test_leave_group_rebalances_to_the_remaining_member(group_bootstrap: str) -> None:
    with (
        WireClient(group_bootstrap) as a,
        WireClient(group_bootstrap) as b,
        ThreadPoolExecutor() as pool,
    ):
        a_id, b_id, generation = form_group(a, b, "g", pool)
        response = b.call(
            ApiKey.LeaveGroup,
            3,
            group_id="g",
            members=[{"member_id": b_id, "group_instance_id": None}],
        )
        assert response.error_code == ErrorCode.NO_ERROR
        assert [m.error_code for m in response.members] == [ErrorCode.NO_ERROR]
        assert heartbeat(a, "g", a_id, generation) == ErrorCode.REBALANCE_IN_PROGRESS
        alone = join(a, "g", a_id)
        assert alone.generation_id == generation + 1
        assert [m.member_id for m in alone.members] == [a_id]


def test_leave_group_v0_answers_member_error_at_top_level(client: WireClient) -> None:
    joined = join(client, "g", version=0)
    response = client.call(ApiKey.LeaveGroup, 0, group_id="g", member_id="nobody")
    assert response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    response = client.call(ApiKey.LeaveGroup, 1, group_id="g", member_id=joined.member_id)
    assert response.error_code == ErrorCode.NO_ERROR
    described = client.call(ApiKey.DescribeGroups, 0, groups=["g"])
    assert described.groups[0].group_state == "Empty"


def test_expired_session_removes_member_and_rebalances(group_bootstrap: str) -> None:
    with (
        WireClient(group_bootstrap) as a,
        WireClient(group_bootstrap) as b,
        ThreadPoolExecutor() as pool,
    ):
        a_id, b_id, generation = form_group(a, b, "g", pool, b_session_ms=300)
        # b never heartbeats: its session expires and the group rebalances.
        wait_until(lambda: heartbeat(a, "g", a_id, generation) == ErrorCode.REBALANCE_IN_PROGRESS)
        alone = join(a, "g", a_id)
        assert [m.member_id for m in alone.members] == [a_id]
        assert heartbeat(b, "g", b_id, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_drops_members_that_do_not_rejoin(group_bootstrap: str) -> None:
    with (
        WireClient(group_bootstrap) as a,
        WireClient(group_bootstrap) as b,
        WireClient(group_bootstrap) as c,
        ThreadPoolExecutor() as pool,
    ):
        a_id, b_id, generation = form_group(a, b, "g", pool, rebalance_ms=300)
        # A third member forces a rebalance; b never rejoins and is dropped after 300 ms.
        c_id = join(c, "g", rebalance_ms=300).member_id
        c_join = pool.submit(join, c, "g", c_id, rebalance_ms=300)
        wait_until(lambda: heartbeat(a, "g", a_id, generation) == ErrorCode.REBALANCE_IN_PROGRESS)
        a_rejoined = join(a, "g", a_id, rebalance_ms=300)
        c_joined = c_join.result(10)
        assert a_rejoined.generation_id == c_joined.generation_id == generation + 1
        assert {m.member_id for m in a_rejoined.members} == {a_id, c_id}
        assert heartbeat(b, "g", b_id, generation) == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_errors(client: WireClient) -> None:
    joined = join_two_step(client, "g")
    assert sync(client, "g", joined.member_id, 9).error_code == ErrorCode.ILLEGAL_GENERATION
    assert sync(client, "g", "x", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert sync(client, "nope", "x", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_member_rejoins_without_rebalance(client: WireClient) -> None:
    first = join(client, "s", instance_id="i-1", version=5)
    assert first.error_code == ErrorCode.NO_ERROR
    sync(client, "s", first.member_id, 1, {first.member_id: b"mine"}, instance_id="i-1")
    again = join(client, "s", instance_id="i-1", version=9)
    assert again.error_code == ErrorCode.NO_ERROR
    assert again.generation_id == 1
    assert again.member_id != first.member_id
    assert again.skip_assignment and again.leader == again.member_id
    assert [m.group_instance_id for m in again.members] == ["i-1"]
    synced = sync(client, "s", again.member_id, 1, instance_id="i-1")
    assert synced.assignment == b"mine"
    fenced = heartbeat(client, "s", first.member_id, 1, instance_id="i-1")
    assert fenced == ErrorCode.FENCED_INSTANCE_ID
    assert heartbeat(client, "s", again.member_id, 1, instance_id="i-1") == ErrorCode.NO_ERROR
    leave = client.call(
        ApiKey.LeaveGroup, 4, group_id="s", members=[{"member_id": "", "group_instance_id": "i-1"}]
    )
    assert [m.error_code for m in leave.members] == [ErrorCode.NO_ERROR]


def test_static_leader_below_v9_gets_no_members(client: WireClient) -> None:
    first = join(client, "s", instance_id="i-1", version=5)
    sync(client, "s", first.member_id, 1, {first.member_id: b"mine"}, instance_id="i-1")
    again = join(client, "s", instance_id="i-1", version=5)
    assert (again.error_code, again.generation_id, again.members) == (0, 1, [])


def test_simple_group_commit_and_fetch(client: WireClient) -> None:
    create_topic(client, "t", 2)
    errors = commit(
        client, "simple", {("t", 0): 10, ("t", 1): 20, ("missing", 0): 1}, metadata="md"
    )
    assert errors == {
        ("t", 0): 0,
        ("t", 1): 0,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert fetch_offsets(client, "simple", {"t": [0, 1, 2]}) == {
        ("t", 0): (10, 3, "md"),
        ("t", 1): (20, 3, "md"),
        ("t", 2): (-1, -1, ""),
    }
    assert fetch_offsets(client, "simple", None) == {
        ("t", 0): (10, 3, "md"),
        ("t", 1): (20, 3, "md"),
    }
    assert fetch_offsets(client, "unknown", {"t": [0]}) == {("t", 0): (-1, -1, "")}


@pytest.mark.parametrize("version", [2, 3, 5, 7, 9])
def test_commit_versions(client: WireClient, version: int) -> None:
    create_topic(client, "t", 1)
    assert commit(client, "g", {("t", 0): 5}, version=version) == {("t", 0): 0}
    assert fetch_offsets(client, "g", {"t": [0]}, version=1)[("t", 0)][0] == 5


def test_commit_checks_membership(client: WireClient) -> None:
    create_topic(client, "t", 1)
    assert commit(client, "nogroup", {("t", 0): 1}, generation=1, member_id="m") == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    joined = join_two_step(client, "g")
    assert commit(client, "g", {("t", 0): 1}) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    sync(client, "g", joined.member_id, 1, {joined.member_id: b""})
    assert commit(client, "g", {("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(client, "g", {("t", 0): 1}, member_id=joined.member_id, generation=2) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    assert commit(client, "g", {("t", 0): 7}, member_id=joined.member_id, generation=1) == {
        ("t", 0): 0
    }
    too_long = "x" * 4097
    assert commit(client, "g2", {("t", 0): 1}, metadata=too_long) == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }


def test_offset_fetch_v8_batches_groups(client: WireClient) -> None:
    create_topic(client, "t", 1)
    commit(client, "a", {("t", 0): 1})
    commit(client, "b", {("t", 0): 2})
    response = client.call(
        ApiKey.OffsetFetch,
        8,
        groups=[
            {"group_id": "a", "topics": [{"name": "t", "partition_indexes": [0]}]},
            {"group_id": "b", "topics": None},
        ],
        require_stable=True,
    )
    found = {
        g.group_id: [
            (t.name, p.partition_index, p.committed_offset) for t in g.topics for p in t.partitions
        ]
        for g in response.groups
    }
    assert found == {"a": [("t", 0, 1)], "b": [("t", 0, 2)]}


def test_commits_and_groups_survive_restart(group_broker: ThreadedBroker) -> None:
    with WireClient(group_broker.bootstrap_servers) as client:
        create_topic(client, "t", 3)
        assert commit(client, "simple", {("t", 0): 11, ("t", 2): 33}, metadata="x") == {
            ("t", 0): 0,
            ("t", 2): 0,
        }
        joined = join_two_step(client, "g")
        sync(client, "g", joined.member_id, 1, {joined.member_id: b"asg"})
        commit(client, "g", {("t", 1): 5}, member_id=joined.member_id, generation=1)
        commit(client, "gone", {("t", 1): 5})
        assert client.call(ApiKey.DeleteGroups, 1, groups_names=["gone"]).results[0].error_code == 0
    group_broker.restart()
    with WireClient(group_broker.bootstrap_servers) as client:
        assert fetch_offsets(client, "simple", None) == {
            ("t", 0): (11, 3, "x"),
            ("t", 2): (33, 3, "x"),
        }
        assert fetch_offsets(client, "g", None) == {("t", 1): (5, 3, "")}
        assert fetch_offsets(client, "gone", None) == {}
        assert heartbeat(client, "g", joined.member_id, 1) == ErrorCode.NO_ERROR
        synced = sync(client, "g", joined.member_id, 1)
        assert synced.assignment == b"asg"
        listed = client.call(ApiKey.ListGroups, 4, states_filter=[])
        assert {(g.group_id, g.group_state) for g in listed.groups} == {
            ("simple", "Empty"),
            ("g", "Stable"),
        }


def test_consumer_offsets_stay_right_after_compaction_and_restart(tmp_path: Path) -> None:
    settings = {
        **GROUP_SETTINGS,
        "offsets.topic.num.partitions": "1",
        "offsets.topic.segment.bytes": "1500",
        "log.cleaner.backoff.ms": "20",
    }
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "t", 3)
            for round_ in range(40):
                commit(client, "g", {("t", round_ % 3): round_}, metadata=f"m{round_}")
            commit(client, "gone", {("t", 0): 1})
            assert (
                client.call(ApiKey.DeleteGroups, 1, groups_names=["gone"]).results[0].error_code
                == 0
            )
            commit(client, "g", {("t", 0): 100})

        async def stored() -> tuple[int, int]:
            assert broker.broker is not None
            log = broker.broker.logs.get(OFFSETS_TOPIC, 0)
            assert isinstance(log, SegmentedLog)
            return log.first_dirty_offset, len(read_all_records(log))

        deadline = time.monotonic() + 30
        while (found := broker.call(stored())) and (found[0] == 0 or found[1] >= 40):
            assert time.monotonic() < deadline, f"not compacted: {found}"
            time.sleep(0.02)
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            assert fetch_offsets(client, "g", None) == {
                ("t", 0): (100, 3, ""),
                ("t", 1): (37, 3, "m37"),
                ("t", 2): (38, 3, "m38"),
            }
            assert fetch_offsets(client, "gone", None) == {}
            listed = client.call(ApiKey.ListGroups, 4, states_filter=[])
            assert {g.group_id for g in listed.groups} == {"g"}


def read_all_records(log: SegmentedLog) -> list[Record]:
    records: list[Record] = []
    offset = log.log_start_offset
    while data := log.read(offset, 1 << 20):
        for batch in split_batches(data):
            records += iter_records(batch)
            offset = BatchHeader.parse(batch).last_offset + 1
    return records


def test_list_and_describe_groups(client: WireClient) -> None:
    create_topic(client, "t", 1)
    commit(client, "simple", {("t", 0): 1})
    joined = join_two_step(client, "active")
    sync(client, "active", joined.member_id, 1, {joined.member_id: b"asg"})
    listed = client.call(ApiKey.ListGroups, 5, states_filter=["stable"], types_filter=["Classic"])
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups] == [
        ("active", "consumer", "Stable", "classic")
    ]
    assert len(client.call(ApiKey.ListGroups, 0).groups) == 2
    assert (
        client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=["consumer"]).groups == []
    )
    described = client.call(
        ApiKey.DescribeGroups,
        5,
        groups=["active", "simple", "nope"],
        include_authorized_operations=True,
    )
    by_id = {g.group_id: g for g in described.groups}
    active = by_id["active"]
    assert (active.group_state, active.protocol_type, active.protocol_data) == (
        "Stable",
        "consumer",
        "range",
    )
    assert [
        (m.member_id, m.client_id, m.member_metadata, m.member_assignment) for m in active.members
    ] == [(joined.member_id, "wire", b"m", b"asg")]
    # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: Kafka 4.x's group operations
    assert set(active.authorized_operations) == {3, 6, 8, 10, 11}
    assert (by_id["simple"].group_state, by_id["simple"].protocol_type) == ("Empty", "")
    assert (by_id["nope"].group_state, by_id["nope"].error_code) == ("Dead", 0)


def test_delete_groups(client: WireClient) -> None:
    create_topic(client, "t", 1)
    commit(client, "simple", {("t", 0): 1})
    join_two_step(client, "active")
    response = client.call(ApiKey.DeleteGroups, 2, groups_names=["simple", "active", "nope", ""])
    assert [(r.group_id, r.error_code) for r in response.results] == [
        ("simple", ErrorCode.NO_ERROR),
        ("active", ErrorCode.NON_EMPTY_GROUP),
        ("nope", ErrorCode.GROUP_ID_NOT_FOUND),
        ("", ErrorCode.INVALID_GROUP_ID),
    ]
    assert fetch_offsets(client, "simple", None) == {}


def test_delete_topics_removes_its_committed_offsets(group_broker: ThreadedBroker) -> None:
    with WireClient(group_broker.bootstrap_servers) as client:
        create_topic(client, "t", 2)
        create_topic(client, "u", 1)
        commit(client, "both", {("t", 0): 1, ("t", 1): 2, ("u", 0): 3})
        commit(client, "only-t", {("t", 0): 4})
        joined = join_two_step(client, "active")
        sync(client, "active", joined.member_id, 1, {joined.member_id: b""})
        commit(client, "active", {("t", 1): 5}, member_id=joined.member_id, generation=1)
        deleted = client.call(ApiKey.DeleteTopics, 4, topic_names=["t"], timeout_ms=5000)
        assert deleted.responses[0].error_code == ErrorCode.NO_ERROR

        def remaining() -> dict[str, object]:
            return {g: fetch_offsets(client, g, None) for g in ("both", "only-t", "active")}

        expected = {"both": {("u", 0): (3, 3, "")}, "only-t": {}, "active": {}}
        assert remaining() == expected
        assert fetch_offsets(client, "both", {"t": [0]}) == {("t", 0): (-1, -1, "")}
        listed = client.call(ApiKey.ListGroups, 4, states_filter=[])
        assert {g.group_id for g in listed.groups} == {"both", "active"}
    group_broker.restart()  # the tombstones are in __consumer_offsets
    with WireClient(group_broker.bootstrap_servers) as client:
        assert remaining() == expected


def test_offset_delete(client: WireClient) -> None:
    create_topic(client, "t", 2)
    create_topic(client, "u", 1)
    commit(client, "simple", {("t", 0): 1, ("t", 1): 2})

    def delete(group: str, topics: dict[str, list[int]]) -> tuple[int, dict[tuple[str, int], int]]:
        response = client.call(
            ApiKey.OffsetDelete,
            0,
            group_id=group,
            topics=[
                {"name": n, "partitions": [{"partition_index": p} for p in ps]}
                for n, ps in topics.items()
            ],
        )
        return response.error_code, {
            (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
        }

    assert delete("simple", {"t": [0], "zz": [0]}) == (
        0,
        {("t", 0): 0, ("zz", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION},
    )
    assert fetch_offsets(client, "simple", None) == {("t", 1): (2, 3, "")}
    assert delete("nope", {"t": [0]}) == (ErrorCode.GROUP_ID_NOT_FOUND, {})
    subscription = b"\x00\x01" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x00"
    joined = join_two_step(client, "active", protocols=[("range", subscription)])
    sync(client, "active", joined.member_id, 1, {joined.member_id: b""})
    assert delete("active", {"t": [0], "u": [0]}) == (
        0,
        {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): 0},
    )
