"""Streams-group topology validation over raw StreamsGroupHeartbeat requests, as Kafka 4.3's
InternalTopicManager (cases from its InternalTopicManagerTest, RepartitionTopicsTest,
CopartitionedTopicsEnforcerTest and ChangelogTopicsTest): missing source topics, internal
topics created with the partition count the coordinator decides, wrongly partitioned topics,
and the group becoming ready once the topics are right."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.streamshelp import (
    STREAMS_SETTINGS,
    E,
    Member,
    create_topic,
    describe,
    join,
    ok,
    partition_count,
    statuses,
    subtopology,
    tasks,
    topic_info,
    topology,
)
from tests.wire import WireClient

MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings=STREAMS_SETTINGS) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


def repartitioning(prefix: str) -> dict[str, object]:
    """Kafka's InternalTopicManagerTest topology: source1 -> repartition; repartition and
    source2 (copartitioned) -> a stateful subtopology."""
    return topology(
        subtopology(
            "subtopology1",
            [f"{prefix}-source1"],
            repartition_sinks=[f"{prefix}-repartition"],
            changelogs=[f"{prefix}-changelog1"],
        ),
        subtopology(
            "subtopology2",
            [f"{prefix}-source2"],
            repartition_sources=[topic_info(f"{prefix}-repartition")],
            changelogs=[f"{prefix}-changelog2"],
            copartition=[
                {"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}
            ],
        ),
        epoch=3,
    )


def test_missing_source_topics_keep_the_group_not_ready(client: WireClient) -> None:
    create_topic(client, "tv1-source1", 2)
    response = ok(join(client, "tv1", repartitioning("tv1")))
    assert statuses(response) == [(MISSING_SOURCE_TOPICS, "Source topics tv1-source2 are missing.")]
    assert tasks(response.active_tasks) == {}
    (group,) = describe(client, "tv1")
    assert group.group_state == "NotReady"
    assert group.topology.epoch == 3  # the topology as sent while it is not configured
    assert [s.subtopology_id for s in group.topology.subtopologies] == [
        "subtopology1",
        "subtopology2",
    ]
    assert partition_count(client, "tv1-repartition") is None  # nothing created yet


def test_missing_internal_topics_are_created_and_the_group_becomes_ready(
    client: WireClient,
) -> None:
    create_topic(client, "tv2-source1", 2)
    create_topic(client, "tv2-source2", 2)
    create_topic(client, "tv2-changelog2", 2)
    member = Member(client, "tv2", repartitioning("tv2"))
    assert statuses(member.last) == [
        (MISSING_INTERNAL_TOPICS, "Internal topics are missing: tv2-changelog1, tv2-repartition")
    ]
    assert member.active == {}
    assert partition_count(client, "tv2-repartition") == 2
    assert partition_count(client, "tv2-changelog1") == 2
    response = member.beat()
    assert response.status == []  # an empty list, as Kafka's default, not null
    assert member.active == {"subtopology1": [0, 1], "subtopology2": [0, 1]}
    (group,) = describe(client, "tv2")
    assert group.group_state == "Stable"
    sub2 = group.topology.subtopologies[1]
    assert [(t.name, t.partitions) for t in sub2.repartition_source_topics] == [
        ("tv2-repartition", 2)
    ]
    assert [(t.name, t.partitions) for t in sub2.state_changelog_topics] == [("tv2-changelog2", 2)]


def test_internal_topics_take_the_widest_source_and_their_configs(client: WireClient) -> None:
    create_topic(client, "tv3-a", 3)
    create_topic(client, "tv3-b", 5)
    topo = topology(subtopology("0", ["tv3-a", "tv3-b"], changelogs=["tv3-store-changelog"]))
    topo["subtopologies"][0]["state_changelog_topics"][0]["topic_configs"] = [
        {"key": "cleanup.policy", "value": "compact"}
    ]
    Member(client, "tv3", topo)
    assert partition_count(client, "tv3-store-changelog") == 5
    response = client.call(
        ApiKey.DescribeConfigs,
        4,
        resources=[
            {"resource_type": 2, "resource_name": "tv3-store-changelog", "configuration_keys": None}
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    configs = {c.name: c.value for c in response.results[0].configs}
    assert configs["cleanup.policy"] == "compact"


def test_a_fixed_repartition_partition_count_is_used(client: WireClient) -> None:
    create_topic(client, "tv4-source", 2)
    topo = topology(
        subtopology("0", ["tv4-source"], repartition_sinks=["tv4-rep"]),
        subtopology("1", [], repartition_sources=[topic_info("tv4-rep", 7)]),
    )
    Member(client, "tv4", topo)
    assert partition_count(client, "tv4-rep") == 7


def test_an_existing_internal_topic_with_the_wrong_count_is_incorrectly_partitioned(
    client: WireClient,
) -> None:
    create_topic(client, "tv5-source", 4)
    create_topic(client, "tv5-store-changelog", 2)
    topo = topology(subtopology("0", ["tv5-source"], changelogs=["tv5-store-changelog"]))
    response = ok(join(client, "tv5", topo))
    assert statuses(response) == [
        (
            INCORRECTLY_PARTITIONED_TOPICS,
            "Existing topic tv5-store-changelog has different number of partitions: "
            "expected 4, found 2",
        )
    ]
    assert describe(client, "tv5")[0].group_state == "NotReady"


def test_copartitioned_sources_must_have_the_same_count(client: WireClient) -> None:
    create_topic(client, "tv6-left", 2)
    create_topic(client, "tv6-right", 3)
    topo = topology(
        subtopology(
            "0",
            ["tv6-left", "tv6-right"],
            copartition=[
                {"source_topics": [0, 1], "source_topic_regex": [], "repartition_source_topics": []}
            ],
        )
    )
    response = ok(join(client, "tv6", topo))
    assert statuses(response) == [
        (
            INCORRECTLY_PARTITIONED_TOPICS,
            "Following topics do not have the same number of partitions: "
            "[{tv6-left=2, tv6-right=3}]",
        )
    ]


def test_a_repartition_source_never_written_is_an_invalid_topology(client: WireClient) -> None:
    create_topic(client, "tv7-source", 1)
    topo = topology(
        subtopology("0", ["tv7-source"]),
        subtopology("1", [], repartition_sources=[topic_info("tv7-orphan")]),
    )
    response = join(client, "tv7", topo)
    assert (response.error_code, response.error_message) == (
        E.STREAMS_INVALID_TOPOLOGY,
        "Failed to compute number of partitions for all repartition topics, because a "
        "repartition source topic is never used as a sink topic.",
    )


def test_creating_a_source_topic_later_makes_the_group_ready(client: WireClient) -> None:
    member = Member(client, "tv8", topology(subtopology("0", ["tv8-late"])))
    assert statuses(member.last) == [(MISSING_SOURCE_TOPICS, "Source topics tv8-late are missing.")]
    epoch = member.epoch
    create_topic(client, "tv8-late", 3)
    response = member.beat()
    assert statuses(response) == []
    assert member.epoch > epoch
    assert member.active == {"0": [0, 1, 2]}


def test_partitions_added_to_a_source_topic_add_tasks(client: WireClient) -> None:
    create_topic(client, "tv9-in", 1)
    member = Member(client, "tv9", topology(subtopology("0", ["tv9-in"])))
    assert member.active == {"0": [0]}
    response = client.call(
        ApiKey.CreatePartitions,
        3,
        topics=[{"name": "tv9-in", "count": 3, "assignments": None}],
        timeout_ms=1000,
        validate_only=False,
    )
    assert response.results[0].error_code == E.NO_ERROR
    member.beat()
    assert member.active == {"0": [0, 1, 2]}


def test_an_internal_topic_that_cannot_be_created_is_named_in_the_status(
    client: WireClient,
) -> None:
    create_topic(client, "tv10-in", 2)
    topo = topology(subtopology("0", ["tv10-in"], changelogs=["tv10-store-changelog"]))
    topo["subtopologies"][0]["state_changelog_topics"][0]["replication_factor"] = 3
    failed = (
        "Internal topics are missing: tv10-store-changelog; Creation failed: "
        "tv10-store-changelog (Unable to replicate the partition 3 time(s): The target "
        "replication factor of 3 cannot be reached because only 1 broker(s) are registered.)."
    )
    member = Member(client, "tv10", topo)
    assert statuses(member.last) == [(MISSING_INTERNAL_TOPICS, failed)]
    # Not tried again for twice the heartbeat interval, and still reported meanwhile.
    assert statuses(member.beat()) == [(MISSING_INTERNAL_TOPICS, failed)]
    assert partition_count(client, "tv10-store-changelog") is None
