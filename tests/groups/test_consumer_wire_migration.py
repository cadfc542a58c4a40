"""Classic members and KIP-848 consumer groups over raw requests (the default
`group.consumer.migration.policy`, bidirectional): a classic member inside a consumer group,
the online upgrade of a classic group and the downgrade when the last consumer-protocol
member leaves."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.groups.consumer.protocol import encode_assignment, parse_assignment
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_consumer_wire_heartbeat import (
    CONSUMER_SETTINGS,
    assigned,
    create_topic,
    describe,
    heartbeat,
    join,
    wait_for,
)
from tests.groups.wirehelp import commit, sync
from tests.groups.wirehelp import heartbeat as classic_heartbeat
from tests.groups.wirehelp import join as classic_join
from tests.wire import WireClient

SETTINGS = {**CONSUMER_SETTINGS, "group.consumer.session.timeout.ms": "30000"}


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 (no owned partitions)."""
    body = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        body += struct.pack(">h", len(topic)) + topic.encode()
    return body + struct.pack(">i", -1)


def subscription_owning(topic: str, owned: list[int]) -> bytes:
    """A ConsumerProtocolSubscription v1 reporting owned partitions (cooperative clients)."""
    name = struct.pack(">h", len(topic)) + topic.encode()
    body = struct.pack(">hi", 1, 1) + name + struct.pack(">i", -1)
    body += struct.pack(">i", 1) + name + struct.pack(">i", len(owned))
    return body + b"".join(struct.pack(">i", partition) for partition in owned)


@pytest.fixture(scope="module")
def client() -> Iterator[WireClient]:
    with ThreadedBroker(settings=SETTINGS) as broker, WireClient(broker.bootstrap_servers) as wire:
        yield wire


def join_classic(client: WireClient, group: str, topic: str, member_id: str = "") -> Any:
    protocols = [("range", subscription(topic))]
    response = classic_join(client, group, member_id, protocols=protocols)
    if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        response = classic_join(client, group, response.member_id, protocols=protocols)
    return response


def list_type(client: WireClient, group: str) -> tuple[str, str]:
    listed = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=[])
    found = {g.group_id: g for g in listed.groups}[group]
    return found.group_type, found.group_state


def test_classic_member_joins_a_consumer_group(client: WireClient) -> None:
    topic = create_topic(client, "mix", 2)
    join(client, "g-mix", "a", ["mix"])
    joined = join_classic(client, "g-mix", "mix")
    assert (joined.error_code, joined.generation_id, joined.leader) == (ErrorCode.NO_ERROR, 2, "")
    classic_id = joined.member_id
    waiting = sync(client, "g-mix", classic_id, 2)
    assert (waiting.error_code, parse_assignment(waiting.assignment)) == (ErrorCode.NO_ERROR, {})

    revoking = heartbeat(client, "g-mix", "a", 1, owned={topic: [0, 1]})
    kept = sorted(assigned(revoking)[topic])
    heartbeat(client, "g-mix", "a", 1, owned={topic: kept})
    # The partition is free: the classic member is told to rejoin, and gets it.
    assert classic_heartbeat(client, "g-mix", classic_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = join_classic(client, "g-mix", "mix", classic_id)
    assert rejoined.generation_id == 2
    synced = sync(client, "g-mix", classic_id, 2)
    assert parse_assignment(synced.assignment) == {"mix": sorted({0, 1} - set(kept))}
    assert classic_heartbeat(client, "g-mix", classic_id, 2) == ErrorCode.NO_ERROR
    types = {m.member_id: m.member_type for m in describe(client, "g-mix").members}
    assert types == {"a": 1, classic_id: 0}
    assert classic_heartbeat(client, "g-mix", classic_id, 1) == ErrorCode.ILLEGAL_GENERATION
    mine = sorted({0, 1} - set(kept))[0]
    ok = commit(client, "g-mix", {("mix", mine): 3}, member_id=classic_id, generation=2)
    assert ok == {("mix", mine): ErrorCode.NO_ERROR}  # v8: classic members may use it
    old = commit(client, "g-mix", {("mix", mine): 4}, member_id=classic_id, generation=1)
    assert old == {("mix", mine): ErrorCode.ILLEGAL_GENERATION}
    assert classic_heartbeat(client, "g-mix", "a", 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_upgrade_then_downgrade(client: WireClient) -> None:
    topic = create_topic(client, "roll", 2)
    first = join_classic(client, "g-roll", "roll")
    classic_id = first.member_id
    assert first.generation_id == 1
    sync(client, "g-roll", classic_id, 1, {classic_id: encode_assignment({"roll": [0, 1]})})
    assert list_type(client, "g-roll") == ("classic", "Stable")

    upgraded = join(client, "g-roll", "new", ["roll"])
    assert upgraded.error_code == ErrorCode.NO_ERROR
    assert upgraded.member_epoch == 2
    assert list_type(client, "g-roll")[0] == "consumer"
    group = describe(client, "g-roll")
    assert {m.member_id: m.member_epoch for m in group.members} == {classic_id: 1, "new": 2}
    # The classic member must give a partition up: it rejoins and is assigned the other.
    assert classic_heartbeat(client, "g-roll", classic_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    # A cooperative member rejoins still owning both: it revokes one first.
    owning_both = [("range", subscription_owning("roll", [0, 1]))]
    rejoined = classic_join(client, "g-roll", classic_id, protocols=owning_both)
    assert rejoined.generation_id == 1  # revoking: it keeps its epoch
    keeping = sync(client, "g-roll", classic_id, 1)
    assert keeping.error_code == ErrorCode.NO_ERROR
    kept = parse_assignment(keeping.assignment)["roll"]
    assert len(kept) == 1
    assert classic_heartbeat(client, "g-roll", classic_id, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    owned = [("range", subscription_owning("roll", kept))]
    done = classic_join(client, "g-roll", classic_id, protocols=owned)
    assert done.generation_id == 2
    assert parse_assignment(sync(client, "g-roll", classic_id, 2).assignment) == {"roll": kept}
    assert classic_heartbeat(client, "g-roll", classic_id, 2) == ErrorCode.NO_ERROR
    after = heartbeat(client, "g-roll", "new", 2, owned={})
    assert len(assigned(after)[topic]) == 1

    assert heartbeat(client, "g-roll", "new", -1).error_code == ErrorCode.NO_ERROR
    assert list_type(client, "g-roll") == ("classic", "PreparingRebalance")
    assert classic_heartbeat(client, "g-roll", classic_id, 3) == ErrorCode.REBALANCE_IN_PROGRESS


def test_classic_member_leaves_a_consumer_group(client: WireClient) -> None:
    create_topic(client, "out", 1)
    join(client, "g-out", "a", ["out"])
    classic_id = join_classic(client, "g-out", "out").member_id
    response = client.call(
        ApiKey.LeaveGroup,
        4,
        group_id="g-out",
        members=[{"member_id": classic_id, "group_instance_id": None}, {"member_id": "a"}],
    )
    assert [m.error_code for m in response.members] == [
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert [m.member_id for m in describe(client, "g-out").members] == ["a"]


def test_consumer_member_takes_over_a_classic_static_member(client: WireClient) -> None:
    topic = create_topic(client, "inst", 1)
    join(client, "g-inst", "a", ["inst"])
    protocols = [("range", subscription("inst"))]
    old = classic_join(client, "g-inst", "", instance_id="i1", protocols=protocols)
    assert old.error_code == ErrorCode.NO_ERROR
    taken = join(client, "g-inst", "new", ["inst"], instance_id="i1")
    assert taken.error_code == ErrorCode.NO_ERROR
    members = {m.member_id: m.instance_id for m in describe(client, "g-inst").members}
    assert members == {"a": None, "new": "i1"}
    assert classic_heartbeat(client, "g-inst", old.member_id, 2, instance_id="i1") == (
        ErrorCode.FENCED_INSTANCE_ID
    )
    assert heartbeat(client, "g-inst", "a", 1, owned={topic: [0]}).error_code == ErrorCode.NO_ERROR


def test_classic_member_that_does_not_rejoin_is_removed(client: WireClient) -> None:
    create_topic(client, "slow", 2)
    join(client, "g-slow", "a", ["slow"])
    protocols = [("range", subscription("slow"))]
    first = classic_join(client, "g-slow", "", protocols=protocols, session_ms=30_000)
    joined = classic_join(
        client, "g-slow", first.member_id, protocols=protocols, session_ms=30_000, rebalance_ms=300
    )
    sync(client, "g-slow", joined.member_id, joined.generation_id)
    join(client, "g-slow", "b", ["slow"])
    told = classic_heartbeat(client, "g-slow", joined.member_id, joined.generation_id)
    assert told == ErrorCode.REBALANCE_IN_PROGRESS
    # Its session (30 s) would keep it; not rejoining within 300 ms removes it.
    wait_for(
        lambda: joined.member_id not in {m.member_id for m in describe(client, "g-slow").members}
    )
