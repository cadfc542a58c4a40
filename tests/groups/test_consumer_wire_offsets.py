"""KIP-848 consumer groups and the other group APIs over raw requests: OffsetCommit and
OffsetFetch checked by member epoch, ListGroups, DescribeGroups, DeleteGroups and
OffsetDelete."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_consumer_wire_heartbeat import (
    CONSUMER_SETTINGS,
    create_topic,
    heartbeat,
    join,
)
from tests.groups.wirehelp import commit, fetch_offsets
from tests.wire import WireClient


@pytest.fixture(scope="module")
def client() -> Iterator[WireClient]:
    # A long session: members of these groups must outlive the test's requests.
    settings = {**CONSUMER_SETTINGS, "group.consumer.session.timeout.ms": "30000"}
    with ThreadedBroker(settings=settings) as broker, WireClient(broker.bootstrap_servers) as wire:
        create_topic(wire, "off", 2)
        create_topic(wire, "other", 1)
        yield wire


def member_group(client: WireClient, group: str) -> None:
    """`group` with member "m" at epoch 1 owning both partitions of "off"."""
    assert join(client, group, "m", ["off"]).member_epoch == 1


def fetch_v9(client: WireClient, group: str, member_id: str | None, epoch: int) -> Any:
    response = client.call(
        ApiKey.OffsetFetch,
        9,
        groups=[
            {
                "group_id": group,
                "member_id": member_id,
                "member_epoch": epoch,
                "topics": [{"name": "off", "partition_indexes": [0]}],
            }
        ],
        require_stable=False,
    )
    return response.groups[0]


def test_commit_by_member_epoch(client: WireClient) -> None:
    member_group(client, "c-commit")
    ok = commit(client, "c-commit", {("off", 0): 5}, member_id="m", generation=1, version=9)
    assert ok == {("off", 0): ErrorCode.NO_ERROR}
    stale = commit(client, "c-commit", {("off", 0): 6}, member_id="m", generation=0, version=9)
    assert stale == {("off", 0): ErrorCode.STALE_MEMBER_EPOCH}
    unknown = commit(client, "c-commit", {("off", 0): 6}, member_id="x", generation=1, version=9)
    assert unknown == {("off", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    admin = commit(client, "c-commit", {("off", 0): 6}, version=9)
    assert admin == {("off", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    old = commit(client, "c-commit", {("off", 0): 6}, member_id="m", generation=1, version=8)
    assert old == {("off", 0): ErrorCode.UNSUPPORTED_VERSION}
    assert fetch_offsets(client, "c-commit", {"off": [0]})[("off", 0)][0] == 5


def test_offset_fetch_v9_checks_the_member(client: WireClient) -> None:
    member_group(client, "c-fetch")
    commit(client, "c-fetch", {("off", 0): 7}, member_id="m", generation=1, version=9)
    fetched = fetch_v9(client, "c-fetch", "m", 1)
    assert fetched.error_code == ErrorCode.NO_ERROR
    assert fetched.topics[0].partitions[0].committed_offset == 7
    assert fetch_v9(client, "c-fetch", "m", 3).error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch_v9(client, "c-fetch", "x", 1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert fetch_v9(client, "c-fetch", None, -1).error_code == ErrorCode.NO_ERROR


def test_list_and_describe_groups(client: WireClient) -> None:
    member_group(client, "c-list")
    listed = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=["consumer"])
    mine = {g.group_id: g for g in listed.groups}["c-list"]
    assert (mine.protocol_type, mine.group_state, mine.group_type) == (
        "consumer",
        "Stable",
        "consumer",
    )
    classic_only = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=["classic"])
    assert "c-list" not in {g.group_id for g in classic_only.groups}
    v6 = client.call(
        ApiKey.DescribeGroups, 6, groups=["c-list"], include_authorized_operations=False
    )
    described = v6.groups[0]
    assert (described.error_code, described.error_message, described.group_state) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group c-list is not a classic group.",
        "Dead",
    )
    v5 = client.call(
        ApiKey.DescribeGroups, 5, groups=["c-list"], include_authorized_operations=False
    )
    assert (v5.groups[0].error_code, v5.groups[0].group_state) == (ErrorCode.NO_ERROR, "Dead")
    unknown = client.call(
        ApiKey.ConsumerGroupDescribe, 0, group_ids=["nope"], include_authorized_operations=False
    )
    assert unknown.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert unknown.groups[0].error_message == "Group nope not found."


def test_delete_group_only_when_empty(client: WireClient) -> None:
    member_group(client, "c-delete")
    busy = client.call(ApiKey.DeleteGroups, 2, groups_names=["c-delete"])
    assert busy.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    assert heartbeat(client, "c-delete", "m", -1).error_code == ErrorCode.NO_ERROR
    done = client.call(ApiKey.DeleteGroups, 2, groups_names=["c-delete"])
    assert done.results[0].error_code == ErrorCode.NO_ERROR
    gone = client.call(
        ApiKey.ConsumerGroupDescribe, 0, group_ids=["c-delete"], include_authorized_operations=False
    )
    assert gone.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_delete_refuses_subscribed_topics(client: WireClient) -> None:
    member_group(client, "c-odel")
    commit(client, "c-odel", {("off", 1): 1}, member_id="m", generation=1, version=9)
    response = client.call(
        ApiKey.OffsetDelete,
        0,
        group_id="c-odel",
        topics=[
            {"name": "off", "partitions": [{"partition_index": 1}]},
            {"name": "other", "partitions": [{"partition_index": 0}]},
        ],
    )
    errors = {t.name: t.partitions[0].error_code for t in response.topics}
    assert errors == {"off": ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, "other": ErrorCode.NO_ERROR}
