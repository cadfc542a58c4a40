"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets over raw
requests: start offsets and lag, resets and deletions of an empty share group, and Kafka's
errors for unknown, busy or foreign groups and unknown topics or partitions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.groups.test_share_wire_fetch import acquired, new_topic, share_acknowledge, share_fetch
from tests.groups.test_share_wire_heartbeat import commit_offset, heartbeat
from tests.wire import WireClient

E = ErrorCode
ACCEPT, RELEASE = 1, 2
NO_ID = None  # the zero topic id, as the wire client decodes it
UNKNOWN_TOPIC = "This server does not host this topic-partition."
_groups = iter(range(1_000_000))


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as running:
        yield running


@pytest.fixture
def client(broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def describe(
    client: WireClient, group: str, topics: dict[str, list[int]] | None = None, version: int = 1
) -> Any:
    wanted = None
    if topics is not None:
        wanted = [{"topic_name": name, "partitions": parts} for name, parts in topics.items()]
    response = client.call(
        ApiKey.DescribeShareGroupOffsets, version, groups=[{"group_id": group, "topics": wanted}]
    )
    return response.groups[0]


def offsets(group: Any) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, leader epoch, lag), every partition without error."""
    found = {}
    for topic in group.topics:
        for p in topic.partitions:
            assert (p.error_code, p.error_message) == (E.NO_ERROR, None)
            found[(topic.topic_name, p.partition_index)] = (p.start_offset, p.leader_epoch, p.lag)
    return found


def alter(client: WireClient, group: str, topics: dict[str, list[tuple[int, int]]]) -> Any:
    return client.call(
        ApiKey.AlterShareGroupOffsets,
        0,
        group_id=group,
        topics=[
            {
                "topic_name": name,
                "partitions": [{"partition_index": i, "start_offset": o} for i, o in parts],
            }
            for name, parts in topics.items()
        ],
    )


def altered(response: Any) -> dict[tuple[str, int], tuple[int, str | None]]:
    assert (response.error_code, response.error_message) == (E.NO_ERROR, None)
    return {
        (t.topic_name, p.partition_index): (p.error_code, p.error_message)
        for t in response.responses
        for p in t.partitions
    }


def delete(client: WireClient, group: str, *topics: str) -> Any:
    return client.call(
        ApiKey.DeleteShareGroupOffsets,
        0,
        group_id=group,
        topics=[{"topic_name": name} for name in topics],
    )


def consumed_group(
    broker: KafkaBroker, client: WireClient, records: int, accepted: int
) -> tuple[str, str, uuid.UUID]:
    """A new share group whose one member joined, fetched `records` new records of a new topic
    (one batch each), accepted the first `accepted` and left (the rest released)."""
    group = f"offsets-{next(_groups)}"
    topic, topic_id = new_topic(broker, client)
    assert heartbeat(client, group, "m", 0, [topic]).error_code == E.NO_ERROR
    assert acquired(share_fetch(client, "m", 0, topic_id, group=group)) == []
    for value in range(records):
        broker.produce(topic, str(value))
    assert acquired(share_fetch(client, "m", 1, group=group)) == [(0, records - 1, 1)]
    if accepted:
        acks = [(0, accepted - 1, [ACCEPT])]
        assert share_acknowledge(client, "m", 2, topic_id, acks, group).error_code == E.NO_ERROR
    assert heartbeat(client, group, "m", -1).error_code == E.NO_ERROR
    return group, topic, topic_id


# ---- DescribeShareGroupOffsets -------------------------------------------------------------


def test_describe_gives_the_start_offset_leader_epoch_and_lag(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, topic_id = consumed_group(broker, client, 4, 2)
    described = describe(client, group, {topic: [0]})
    assert (described.error_code, described.error_message) == (E.NO_ERROR, None)
    assert [t.topic_id for t in described.topics] == [topic_id]
    assert offsets(described) == {(topic, 0): (2, 0, 2)}


def test_lag_leaves_out_records_already_finished_past_the_start_offset(
    broker: KafkaBroker, client: WireClient
) -> None:
    group = f"offsets-{next(_groups)}"
    topic, topic_id = new_topic(broker, client)
    share_fetch(client, "m", 0, topic_id, group=group)
    for value in range(5):
        broker.produce(topic, str(value))
    assert acquired(share_fetch(client, "m", 1, group=group)) == [(0, 4, 1)]
    share_acknowledge(client, "m", 2, topic_id, [(1, 3, [ACCEPT])], group)
    # offsets 1-3 finished, 0 and 4 still acquired: 5 - 0 - 3
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (0, 0, 2)}


def test_describe_v0_has_no_lag(broker: KafkaBroker, client: WireClient) -> None:
    group, topic, _ = consumed_group(broker, client, 3, 1)
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (1, 0, 2)}
    # v0 carries no Lag: the decoded field keeps its default
    assert offsets(describe(client, group, {topic: [0]}, version=0)) == {(topic, 0): (1, 0, -1)}


def test_null_topics_describes_every_initialized_share_partition(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 2, 1)
    assert offsets(describe(client, group)) == {(topic, 0): (1, 0, 1)}
    assert describe(client, group, {}).topics == []


def test_partitions_without_state_answer_minus_one_without_error(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 1, 1)
    other, other_id = new_topic(broker, client)
    described = describe(client, group, {"no-such-topic": [0], topic: [0, 7], other: [0]})
    assert [(t.topic_name, t.topic_id) for t in described.topics] == [
        (topic, described.topics[0].topic_id),
        (other, other_id),
        ("no-such-topic", NO_ID),
    ]
    assert offsets(described) == {
        (topic, 0): (1, 0, 0),
        (topic, 7): (-1, 0, -1),
        (other, 0): (-1, 0, -1),
        ("no-such-topic", 0): (-1, 0, -1),
    }


def test_unknown_and_foreign_groups_have_no_share_state(
    broker: KafkaBroker, client: WireClient
) -> None:
    """As Kafka: the group is not looked up, so there is no group-level error; several groups
    are answered in the order asked."""
    topic, _ = new_topic(broker, client)
    assert commit_offset(client, "classic-described", topic) == E.NO_ERROR
    group, shared, _ = consumed_group(broker, client, 1, 1)
    answer = client.call(
        ApiKey.DescribeShareGroupOffsets,
        1,
        groups=[
            {"group_id": g, "topics": None} for g in ("never-seen", "classic-described", group)
        ],
    )
    assert [(g.group_id, g.error_code, g.topics == []) for g in answer.groups] == [
        ("never-seen", E.NO_ERROR, True),
        ("classic-described", E.NO_ERROR, True),
        (group, E.NO_ERROR, False),
    ]
    assert offsets(answer.groups[2]) == {(shared, 0): (1, 0, 0)}
    assert offsets(describe(client, "never-seen", {topic: [0]})) == {(topic, 0): (-1, 0, -1)}


# ---- AlterShareGroupOffsets ----------------------------------------------------------------


def test_alter_resets_the_start_offset_and_the_records_are_delivered_again(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, topic_id = consumed_group(broker, client, 4, 4)
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (4, 0, 0)}
    response = alter(client, group, {topic: [(0, 1)]})
    assert altered(response) == {(topic, 0): (E.NO_ERROR, None)}
    assert [t.topic_id for t in response.responses] == [topic_id]
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (1, 0, 3)}
    heartbeat(client, group, "m2", 0, [topic])
    assert acquired(share_fetch(client, "m2", 0, topic_id, group=group)) == [(1, 3, 1)]


def test_alter_needs_an_empty_group(broker: KafkaBroker, client: WireClient) -> None:
    group, topic, _ = consumed_group(broker, client, 1, 1)
    heartbeat(client, group, "busy", 0, [topic])
    refused = alter(client, group, {topic: [(0, 0)]})
    assert (refused.error_code, refused.error_message, refused.responses) == (
        E.NON_EMPTY_GROUP,
        "The group is not empty.",
        [],
    )
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (1, 0, 0)}


def test_alter_answers_unknown_topics_and_partitions_per_partition(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 1, 1)
    response = alter(client, group, {"no-such-topic": [(0, 0)], topic: [(0, 0), (3, 0)]})
    assert altered(response) == {
        ("no-such-topic", 0): (E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC),
        (topic, 0): (E.NO_ERROR, None),
        (topic, 3): (E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC),
    }
    assert response.responses[0].topic_id is NO_ID


def test_start_offset_minus_one_uninitializes_and_below_is_refused(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 2, 2)
    assert altered(alter(client, group, {topic: [(0, -2)]})) == {
        (topic, 0): (E.INVALID_REQUEST, "The start offset cannot be negative.")
    }
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (2, 0, 0)}
    assert altered(alter(client, group, {topic: [(0, -1)]})) == {(topic, 0): (E.NO_ERROR, None)}
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (-1, 0, -1)}


def test_alter_makes_a_share_group_that_does_not_exist_yet(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic, _ = new_topic(broker, client)
    broker.produce(topic, "a")
    assert altered(alter(client, "preset", {topic: [(0, 0)]})) == {(topic, 0): (E.NO_ERROR, None)}
    described = client.call(
        ApiKey.ShareGroupDescribe, 1, group_ids=["preset"], include_authorized_operations=False
    ).groups[0]
    assert (described.error_code, described.group_state) == (E.NO_ERROR, "Empty")
    assert offsets(describe(client, "preset", {topic: [0]})) == {(topic, 0): (0, 0, 1)}


def test_alter_and_delete_refuse_a_group_of_another_kind(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic, _ = new_topic(broker, client)
    assert commit_offset(client, "classic-offsets", topic) == E.NO_ERROR
    message = "Group classic-offsets is not a share group."
    for response in (
        alter(client, "classic-offsets", {topic: [(0, 0)]}),
        delete(client, "classic-offsets", topic),
    ):
        assert (response.error_code, response.error_message, response.responses) == (
            E.GROUP_ID_NOT_FOUND,
            message,
            [],
        )


def test_an_empty_group_id_is_invalid(client: WireClient) -> None:
    for response in (alter(client, "", {}), delete(client, "")):
        assert (response.error_code, response.error_message) == (
            E.INVALID_GROUP_ID,
            "The configured groupId is invalid.",
        )


# ---- DeleteShareGroupOffsets ---------------------------------------------------------------


def test_delete_forgets_the_topic_and_the_next_fetch_starts_afresh(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, topic_id = consumed_group(broker, client, 3, 1)
    response = delete(client, group, topic)
    assert (response.error_code, response.error_message) == (E.NO_ERROR, None)
    assert [
        (t.topic_name, t.topic_id, t.error_code, t.error_message) for t in response.responses
    ] == [(topic, topic_id, E.NO_ERROR, None)]
    assert describe(client, group).topics == []
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (-1, 0, -1)}
    # share.auto.offset.reset=latest: the share partition starts again at the log end
    heartbeat(client, group, "m2", 0, [topic])
    share_fetch(client, "m2", 0, topic_id, group=group)
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (3, 0, 0)}


def test_delete_answers_per_topic_errors_after_the_deleted_ones(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 1, 1)
    untouched, _ = new_topic(broker, client)
    response = delete(client, group, "no-such-topic", untouched, topic)
    assert [(t.topic_name, t.topic_id, t.error_code, t.error_message) for t in response.responses][
        1:
    ] == [
        ("no-such-topic", NO_ID, E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC),
        (
            untouched,
            NO_ID,
            E.UNKNOWN_TOPIC_OR_PARTITION,
            "There is no offset information to delete.",
        ),
    ]
    assert (response.responses[0].topic_name, response.responses[0].error_code) == (topic, 0)


def test_delete_needs_an_existing_empty_share_group(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic, _ = consumed_group(broker, client, 1, 1)
    heartbeat(client, group, "busy", 0, [topic])
    busy = delete(client, group, topic)
    assert (busy.error_code, busy.error_message, busy.responses) == (
        E.NON_EMPTY_GROUP,
        "The group is not empty.",
        [],
    )
    assert offsets(describe(client, group, {topic: [0]})) == {(topic, 0): (1, 0, 0)}
    unknown = delete(client, "never-seen", topic)
    assert (unknown.error_code, unknown.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        "Group never-seen not found.",
    )


# ---- share.version ---------------------------------------------------------------------------


def test_share_version_0_answers_unsupported_version() -> None:
    with KafkaBroker(storage="memory") as kafka, WireClient(kafka.bootstrap_servers) as client:
        update = client.call(
            ApiKey.UpdateFeatures,
            2,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "share.version", "max_version_level": 0, "upgrade_type": 2}
            ],
            validate_only=False,
        )
        assert update.error_code == E.NO_ERROR
        described = describe(client, "g")
        assert (described.error_code, described.error_message) == (E.UNSUPPORTED_VERSION, None)
        message = "The version of API is not supported."
        for response in (alter(client, "g", {}), delete(client, "g")):
            assert (response.error_code, response.error_message) == (
                E.UNSUPPORTED_VERSION,
                message,
            )


# ---- durability --------------------------------------------------------------------------------


def test_altered_and_deleted_offsets_survive_a_restart(tmp_path: Path) -> None:
    """Both are stored in `__share_group_state` like any other change of share state."""
    with KafkaBroker(data_dir=tmp_path / "data") as durable:
        with WireClient(durable.bootstrap_servers) as wire:
            kept, _ = new_topic(durable, wire)
            dropped, _ = new_topic(durable, wire)
            for topic in (kept, dropped):
                durable.produce(topic, "a")
            reset = alter(wire, "restarted", {kept: [(0, 1)], dropped: [(0, 0)]})
            assert set(altered(reset).values()) == {(E.NO_ERROR, None)}
            assert delete(wire, "restarted", dropped).responses[0].error_code == E.NO_ERROR
        durable.restart()
        with WireClient(durable.bootstrap_servers) as wire:
            assert offsets(describe(wire, "restarted")) == {(kept, 0): (1, 0, 0)}
