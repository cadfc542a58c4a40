"""KIP-848 consumer groups over raw ConsumerGroupHeartbeat / ConsumerGroupDescribe requests:
joining, incremental reconciliation between two members, leaving, static membership,
session timeouts, regex subscriptions and every bad-input error code."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

# Short timeouts (Kafka lets the bounds be lowered) keep expiry tests quick.
CONSUMER_SETTINGS = {
    "offsets.topic.num.partitions": "3",
    "group.consumer.min.session.timeout.ms": "100",
    "group.consumer.session.timeout.ms": "600",
    "group.consumer.min.heartbeat.interval.ms": "10",
    "group.consumer.heartbeat.interval.ms": "50",
}
REBALANCE_MS = 30_000


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=CONSUMER_SETTINGS) as running:
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
    assert response.topics[0].error_code == ErrorCode.NO_ERROR
    return uuid.UUID(str(response.topics[0].topic_id))


def heartbeat(
    client: WireClient,
    group: str,
    member_id: str,
    epoch: int,
    *,
    version: int = 1,
    topics: list[str] | None = None,
    regex: str | None = None,
    owned: dict[uuid.UUID, list[int]] | None = None,
    instance_id: str | None = None,
    assignor: str | None = None,
    rebalance_ms: int = -1,
) -> Any:
    fields: dict[str, Any] = {
        "group_id": group,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": instance_id,
        "rack_id": None,
        "rebalance_timeout_ms": rebalance_ms,
        "subscribed_topic_names": topics,
        "server_assignor": assignor,
        "topic_partitions": None
        if owned is None
        else [{"topic_id": t, "partitions": sorted(p)} for t, p in owned.items()],
    }
    if version >= 1:
        fields["subscribed_topic_regex"] = regex
    return client.call(ApiKey.ConsumerGroupHeartbeat, version, **fields)


def join(
    client: WireClient,
    group: str,
    member_id: str,
    topics: list[str] | None = None,
    **kwargs: Any,
) -> Any:
    return heartbeat(
        client, group, member_id, 0, topics=topics, owned={}, rebalance_ms=REBALANCE_MS, **kwargs
    )


def assigned(response: Any) -> dict[uuid.UUID, set[int]]:
    assert response.assignment is not None
    return {
        uuid.UUID(str(t.topic_id)): set(t.partitions) for t in response.assignment.topic_partitions
    }


def describe(client: WireClient, group: str, version: int = 1) -> Any:
    response = client.call(
        ApiKey.ConsumerGroupDescribe, version, group_ids=[group], include_authorized_operations=True
    )
    return response.groups[0]


def wait_for(check: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_join_gets_every_partition_and_the_heartbeat_interval(client: WireClient) -> None:
    topic_id = create_topic(client, "solo", 3)
    response = join(client, "g-solo", "m1", ["solo"])
    assert response.error_code == ErrorCode.NO_ERROR
    assert (response.member_id, response.member_epoch) == ("m1", 1)
    assert response.heartbeat_interval_ms == 50
    assert assigned(response) == {topic_id: {0, 1, 2}}
    again = heartbeat(client, "g-solo", "m1", 1)
    assert (again.error_code, again.member_epoch, again.assignment) == (ErrorCode.NO_ERROR, 1, None)
    group = describe(client, "g-solo")
    assert (group.error_code, group.group_state) == (ErrorCode.NO_ERROR, "Stable")
    assert (group.group_epoch, group.assignment_epoch, group.assignor_name) == (1, 1, "uniform")
    [member] = group.members
    assert (member.member_id, member.member_epoch, member.member_type) == ("m1", 1, 1)
    assert member.subscribed_topic_names == ["solo"]
    [owned] = member.assignment.topic_partitions
    assert (owned.topic_name, sorted(owned.partitions)) == ("solo", [0, 1, 2])


def test_v0_coordinator_generates_the_member_id(client: WireClient) -> None:
    create_topic(client, "v0", 1)
    response = join(client, "g-v0", "", ["v0"], version=0)
    assert response.error_code == ErrorCode.NO_ERROR
    assert response.member_id
    assert response.member_epoch == 1


def test_partition_is_revoked_before_it_moves_to_another_member(client: WireClient) -> None:
    topic = create_topic(client, "two", 4)
    first = join(client, "g-two", "a", ["two"])
    assert assigned(first) == {topic: {0, 1, 2, 3}}

    second = join(client, "g-two", "b", ["two"])
    assert second.member_epoch == 2  # the group epoch, its partitions still owned by "a"
    assert assigned(second) == {}
    assert describe(client, "g-two").group_state == "Reconciling"

    # "a" is asked to revoke two partitions; it stays at epoch 1 until it does.
    revoking = heartbeat(client, "g-two", "a", 1, owned={topic: [0, 1, 2, 3]})
    assert revoking.member_epoch == 1
    kept = assigned(revoking)[topic]
    assert len(kept) == 2
    waiting = heartbeat(client, "g-two", "b", 2, owned={})
    assert waiting.assignment is None or assigned(waiting) == {}

    acked = heartbeat(client, "g-two", "a", 1, owned={topic: sorted(kept)})
    assert acked.member_epoch == 2
    given = heartbeat(client, "g-two", "b", 2, owned={})
    assert assigned(given) == {topic: {0, 1, 2, 3} - kept}

    group = describe(client, "g-two")
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Stable", 2, 2)
    epochs = {m.member_id: m.member_epoch for m in group.members}
    assert epochs == {"a": 2, "b": 2}


def test_leave_gives_the_partitions_to_the_rest(client: WireClient) -> None:
    topic = create_topic(client, "leave", 2)
    join(client, "g-leave", "a", ["leave"])
    join(client, "g-leave", "b", ["leave"])
    a = heartbeat(client, "g-leave", "a", 1, owned={topic: [0, 1]})
    heartbeat(client, "g-leave", "a", 1, owned={topic: sorted(assigned(a)[topic])})
    left = heartbeat(client, "g-leave", "b", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (ErrorCode.NO_ERROR, "b", -1)
    after = heartbeat(client, "g-leave", "a", 2, owned={topic: sorted(assigned(a)[topic])})
    assert after.member_epoch == 3
    assert assigned(after) == {topic: {0, 1}}
    assert [m.member_id for m in describe(client, "g-leave").members] == ["a"]


def test_session_timeout_removes_the_member(client: WireClient) -> None:
    create_topic(client, "expiry", 1)
    join(client, "g-expiry", "gone", ["expiry"])
    wait_for(lambda: not describe(client, "g-expiry").members)
    group = describe(client, "g-expiry")
    assert (group.group_state, group.group_epoch) == ("Empty", 2)
    late = heartbeat(client, "g-expiry", "gone", 1)
    assert late.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_regex_subscription_picks_up_a_topic_created_later(client: WireClient) -> None:
    first = create_topic(client, "rx-one", 1)
    joined = join(client, "g-rx", "m", None, regex="rx-.*")
    assert assigned(joined) == {first: {0}}
    second = create_topic(client, "rx-two", 2)
    later = heartbeat(client, "g-rx", "m", 1, owned={first: [0]})
    assert later.member_epoch == 2
    assert assigned(later) == {first: {0}, second: {0, 1}}
    [member] = describe(client, "g-rx").members
    assert member.subscribed_topic_regex == "rx-.*"


def test_static_member_leaves_and_comes_back_with_its_assignment(client: WireClient) -> None:
    topic = create_topic(client, "static", 2)
    join(client, "g-static", "s1", ["static"], instance_id="i1")
    busy = join(client, "g-static", "s2", ["static"], instance_id="i1")
    assert busy.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    fenced = heartbeat(client, "g-static", "s2", 1, instance_id="i1")
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    left = heartbeat(client, "g-static", "s1", -2, instance_id="i1")
    assert (left.error_code, left.member_epoch) == (ErrorCode.NO_ERROR, -2)
    back = join(client, "g-static", "s3", ["static"], instance_id="i1")
    assert (back.error_code, back.member_epoch) == (ErrorCode.NO_ERROR, 1)
    assert assigned(back) == {topic: {0, 1}}
    group = describe(client, "g-static")
    assert group.group_epoch == 1  # no rebalance
    assert [(m.member_id, m.instance_id) for m in group.members] == [("s3", "i1")]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        ({"member_id": ""}, ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
        ({"rebalance_ms": -1}, ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided"),
        ({"owned": None}, ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty"),
        ({"topics": None}, ErrorCode.INVALID_REQUEST, "SubscribedTopicNames or Subscribed"),
        ({"instance_id": " "}, ErrorCode.INVALID_REQUEST, "InstanceId can't be empty."),
        ({"epoch": -3}, ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        ({"assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not"),
        ({"topics": None, "regex": "a(?=b)"}, ErrorCode.INVALID_REGULAR_EXPRESSION, "not a valid"),
        ({"topics": None, "regex": "(unclosed"}, ErrorCode.INVALID_REGULAR_EXPRESSION, "not a"),
        ({"epoch": 3}, ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g-bad not found."),
    ],
)
def test_bad_heartbeats_get_kafkas_errors(
    client: WireClient, fields: dict[str, Any], error: ErrorCode, message: str
) -> None:
    request: dict[str, Any] = {
        "member_id": "m",
        "epoch": 0,
        "topics": ["t"],
        "owned": {},
        "rebalance_ms": REBALANCE_MS,
        **fields,
    }
    member_id, epoch = request.pop("member_id"), request.pop("epoch")
    response = heartbeat(client, "g-bad", member_id, epoch, **request)
    assert response.error_code == error
    assert message in response.error_message


def test_member_epoch_errors(client: WireClient) -> None:
    create_topic(client, "epochs", 1)
    join(client, "g-epochs", "m", ["epochs"])
    assert heartbeat(client, "g-epochs", "m", 5).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    stale = heartbeat(client, "g-epochs", "other", 1)
    assert stale.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    unknown_static = heartbeat(client, "g-epochs", "x", 1, instance_id="nobody")
    assert unknown_static.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_group_max_size_reached() -> None:
    with (
        ThreadedBroker(settings={**CONSUMER_SETTINGS, "group.consumer.max.size": "1"}) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        create_topic(client, "full", 1)
        assert join(client, "g-full", "a", ["full"]).error_code == ErrorCode.NO_ERROR
        refused = join(client, "g-full", "b", ["full"])
        assert refused.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
        assert refused.error_message == (
            "The consumer group has reached its maximum capacity of 1 members."
        )
        assert heartbeat(client, "g-full", "a", 1).error_code == ErrorCode.NO_ERROR


def test_range_assignor_chosen_by_the_member(client: WireClient) -> None:
    topic = create_topic(client, "ranged", 4)
    joined = join(client, "g-range", "a", ["ranged"], assignor="range")
    assert assigned(joined) == {topic: {0, 1, 2, 3}}
    assert describe(client, "g-range").assignor_name == "range"
