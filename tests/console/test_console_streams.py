"""The console shows and handles streams groups (KIP-1071): the groups list and API with type
"streams" and the streams group's state, the members with the partitions their active tasks
read, and deleting an emptied group; the HTML group page renders them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing.cluster import KafkaBroker
from tests.console.test_console_api import Http, create
from tests.groups.streamshelp import Member, subtopology, topology
from tests.wire import WireClient


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    settings = {
        "group.streams.initial.rebalance.delay.ms": 0,
        "group.streams.assignment.interval.ms": 0,
    }
    with KafkaBroker(console=True, storage="memory", config=settings) as broker:
        yield broker


@pytest.fixture(scope="module")
def http(kafka: KafkaBroker) -> Http:
    return Http(kafka.console_url)


def test_a_streams_group_in_the_console(kafka: KafkaBroker, http: Http) -> None:
    create(http, "console-streams-in", partitions=2)
    with WireClient(kafka.bootstrap_servers) as client:
        member = Member(client, "console-app", topology(subtopology("0", ["console-streams-in"])))
        listed = {g["group_id"]: g for g in http.get("/api/groups").json["groups"]}
        assert listed["console-app"]["type"] == "streams"
        assert listed["console-app"]["state"] == "Stable"
        view = http.get("/api/groups/console-app").json
        assert view["type"] == "streams"
        assert [m["member_id"] for m in view["members"]] == [member.member_id]
        assert view["members"][0]["assignment"] == {"console-streams-in": [0, 1]}
        page = http.get("/groups/console-app")
        assert page.status == 200
        assert 'data-testid="group-type">streams<' in page.text
        refused = http.call("DELETE", "/api/groups/console-app")
        assert refused.status == 409
        member.leave()
    assert http.get("/api/groups/console-app").json["state"] == "Empty"
    assert http.call("DELETE", "/api/groups/console-app").json == {"deleted": "console-app"}
    assert "console-app" not in {g["group_id"] for g in http.get("/api/groups").json["groups"]}
