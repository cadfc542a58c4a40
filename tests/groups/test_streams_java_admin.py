"""Streams groups seen by Java 4.3's AdminClient (`listGroups` for streams groups,
`describeStreamsGroups`, `deleteStreamsGroups`), the group formed by raw StreamsGroupHeartbeat
requests as a Kafka Streams application's members send them (no Kafka Streams client is
installed here)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok
from tests.groups.streamshelp import Member, create_topic, settle, subtopology, topic_info, topology
from tests.wire import WireClient

pytestmark = pytest.mark.clients

JAVA = "java-4.3"
SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": 0,
    "group.streams.assignment.interval.ms": 0,
    "group.streams.num.standby.replicas": 1,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(config=SETTINGS, storage="memory") as running:
        yield running


def admin(broker: KafkaBroker, op: str, **fields: Any) -> dict[str, Any]:
    return run_ok(JAVA, {"op": op, "bootstrap": broker.bootstrap_servers, **fields})


def word_count(prefix: str) -> dict[str, Any]:
    """A word count: split and repartition by word, then count in a store."""
    return topology(
        subtopology("0", [f"{prefix}-lines"], repartition_sinks=[f"{prefix}-words-repartition"]),
        subtopology(
            "1",
            [],
            repartition_sources=[topic_info(f"{prefix}-words-repartition")],
            changelogs=[f"{prefix}-counts-changelog"],
        ),
        epoch=1,
    )


def test_java_admin_lists_describes_and_deletes_a_streams_group(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        create_topic(client, "wc-lines", 2)
        first = Member(client, "wc-app", word_count("wc"), process_id="p1", endpoint=("a", 1))
        second = Member(client, "wc-app", word_count("wc"), process_id="p2")
        settle([first, second])
        listed = admin(broker, "list_streams_groups")["groups"]
        assert {"group": "wc-app", "state": "Stable", "type": "streams"} in listed
        [group] = admin(broker, "describe_streams_groups", groups=["wc-app"])["groups"]
        assert group["error"] is None
        assert (group["state"], group["topology_epoch"]) == ("Stable", 1)
        assert group["group_epoch"] == group["target_assignment_epoch"]
        sub0, sub1 = group["subtopologies"]
        assert (sub0["id"], sub0["source_topics"], sub0["repartition_sink_topics"]) == (
            "0",
            ["wc-lines"],
            ["wc-words-repartition"],
        )
        assert sub1["repartition_sources"] == {"wc-words-repartition": 2}
        assert sub1["changelogs"] == {"wc-counts-changelog": 2}
        members = {m["member_id"]: m for m in group["members"]}
        described = members[first.member_id]
        assert (described["process_id"], described["endpoint"], described["is_classic"]) == (
            "p1",
            "a:1",
            False,
        )
        assert described["assignment"] == described["target_assignment"]
        active = [
            (sub, p)
            for m in members.values()
            for sub, parts in m["assignment"]["active"].items()
            for p in parts
        ]
        assert sorted(active) == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
        # One standby of each stateful task (subtopology 1), on the other process.
        for member, other in ((first, second), (second, first)):
            standby = members[member.member_id]["assignment"]["standby"]
            assert standby.get("1", []) == other.active.get("1", [])
        [missing] = admin(broker, "describe_streams_groups", groups=["nope"])["groups"]
        assert missing["error_name"] == "GROUP_ID_NOT_FOUND"
        [refused] = admin(broker, "delete_streams_groups", groups=["wc-app"])["groups"]
        assert refused["error_name"] == "NON_EMPTY_GROUP"
        first.leave()
        second.leave()
        [deleted] = admin(broker, "delete_streams_groups", groups=["wc-app"])["groups"]
        assert deleted["error"] is None
        assert all(g["group"] != "wc-app" for g in admin(broker, "list_streams_groups")["groups"])
