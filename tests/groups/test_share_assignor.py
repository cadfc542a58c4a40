"""The share groups' simple assignor (Kafka's SimpleAssignor, KIP-932): partitions shared when
members outnumber them, balanced counts, stickiness, per-topic balance for heterogeneous
subscriptions."""

from __future__ import annotations

import uuid

import pytest

from minibroker.groups.consumer.model import Assignment, TopicInfo
from minibroker.groups.share.assignor import ShareMemberSpec, assign

A, B = uuid.uuid4(), uuid.uuid4()
TOPICS = {"a": TopicInfo(A, "a", 1), "b": TopicInfo(B, "b", 4)}


def spec(*topics: str, current: Assignment | None = None) -> ShareMemberSpec:
    return ShareMemberSpec(frozenset(topics), current or {})


def sharing(targets: dict[str, Assignment], topic_id: uuid.UUID) -> dict[int, int]:
    """How many members have each partition of the topic."""
    counts: dict[int, int] = {}
    for assignment in targets.values():
        for partition in assignment.get(topic_id, set()):
            counts[partition] = counts.get(partition, 0) + 1
    return counts


def test_no_members_no_assignment() -> None:
    assert assign({}, TOPICS) == {}


def test_members_outnumbering_partitions_share_them() -> None:
    targets = assign({"m1": spec("a"), "m2": spec("a"), "m3": spec("a")}, TOPICS)
    assert targets == {"m1": {A: {0}}, "m2": {A: {0}}, "m3": {A: {0}}}


@pytest.mark.parametrize("members", [1, 2, 3, 4, 5, 6, 9])
def test_counts_are_balanced_and_every_partition_is_shared_evenly(members: int) -> None:
    specs = {f"m{i}": spec("b") for i in range(members)}
    targets = assign(specs, TOPICS)
    sizes = [len(t.get(B, set())) for t in targets.values()]
    assert max(sizes) - min(sizes) <= 1
    desired_sharing = -(-members // 4)
    assert sharing(targets, B) == dict.fromkeys(range(4), desired_sharing)


def test_members_keep_their_partitions_where_balance_allows() -> None:
    first = assign({"m1": spec("b"), "m2": spec("b")}, TOPICS)
    specs = {
        "m1": spec("b", current=first["m1"]),
        "m2": spec("b", current=first["m2"]),
        "m3": spec("b"),
    }
    second = assign(specs, TOPICS)
    for member in ("m1", "m2"):
        assert second[member][B] <= first[member][B]
    assert sharing(second, B) == dict.fromkeys(range(4), 1)


def test_a_topic_no_longer_subscribed_is_dropped() -> None:
    current: Assignment = {A: {0}, B: {0, 1, 2, 3}}
    assert assign({"m": spec("b", current=current)}, TOPICS) == {"m": {B: {0, 1, 2, 3}}}


def test_heterogeneous_subscriptions_are_balanced_topic_by_topic() -> None:
    targets = assign({"both": spec("a", "b"), "only-a": spec("a"), "only-b": spec("b")}, TOPICS)
    assert targets["both"][A] == targets["only-a"][A] == {0}
    assert A not in targets["only-b"] and B not in targets["only-a"]
    assert targets["both"][B] | targets["only-b"][B] == {0, 1, 2, 3}
    assert len(targets["both"][B]) == len(targets["only-b"][B]) == 2


def test_topics_that_do_not_exist_are_ignored() -> None:
    assert assign({"m": spec("missing")}, TOPICS) == {"m": {}}
    assert assign({"m": spec("missing"), "n": spec("a")}, TOPICS) == {"m": {}, "n": {A: {0}}}
