"""Share-group offsets with real admin clients (KIP-932): Java 4.3's AdminClient
(`listShareGroupOffsets`, `alterShareGroupOffsets`, `deleteShareGroupOffsets`,
`describeShareGroups`, `listGroups` for share groups) around Java's and confluent-kafka's share
consumers. A group that consumed and stopped shows its start offset and lag; a reset to the
earliest offset delivers the records again; deleted offsets are gone. confluent-kafka 2.16 has
no share-group admin API, and its ListConsumerGroups leaves share groups out (librdkafka
keeps only groups of the consumer protocol type), as against Kafka.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok, start_client
from tests.groups.test_share_clients import SETTINGS, job, produce, share_group, values
from tests.wire import WireClient

pytestmark = pytest.mark.clients

JAVA = "java-4.3"
RECORDS = [f"task-{n}" for n in range(5)]


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(config=SETTINGS) as running:
        yield running


def admin(broker: KafkaBroker, op: str, **fields: Any) -> dict[str, Any]:
    """A Java AdminClient share-group job (tests/clients/README.md)."""
    return run_ok(JAVA, {"op": op, "bootstrap": broker.bootstrap_servers, **fields})


def share_offsets(broker: KafkaBroker, group: str) -> list[tuple[str, int, int, int]]:
    """(topic, partition, start offset, lag) of every share partition of the group."""
    listed = admin(broker, "list_share_group_offsets", group=group)
    assert listed["error"] is None, listed["error"]
    return sorted(
        (o["topic"], o["partition"], o["start_offset"], o["lag"]) for o in listed["offsets"]
    )


def wait_until_empty(broker: KafkaBroker, group: str) -> None:
    """The stopped consumer's leave heartbeat has been handled."""
    deadline = time.monotonic() + 10
    with WireClient(broker.bootstrap_servers) as wire:
        while time.monotonic() < deadline:
            described = wire.call(
                ApiKey.ShareGroupDescribe,
                1,
                group_ids=[group],
                include_authorized_operations=False,
            ).groups[0]
            if described.group_state == "Empty":
                return
            time.sleep(0.1)
    raise AssertionError(f"{group} still has members")


def consume_all(
    broker: KafkaBroker, client: str, topic: str, group: str, count: int = len(RECORDS)
) -> list[str]:
    result = run_ok(client, job(broker, topic, group, count=count))
    wait_until_empty(broker, group)
    return values(result["records"])


@pytest.mark.parametrize("client", [JAVA, "confluent-kafka"])
def test_offsets_are_described_reset_and_deleted_by_the_java_admin_client(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client)
    produce(broker, topic, RECORDS)
    assert consume_all(broker, client, topic, group) == RECORDS
    assert share_offsets(broker, group) == [(topic, 0, 5, 0)]
    produce(broker, topic, ["late"])
    assert share_offsets(broker, group) == [(topic, 0, 5, 1)]

    reset = admin(broker, "alter_share_group_offsets", group=group, offsets=[[topic, 0, 0]])
    assert [(p["topic"], p["partition"], p["error_name"]) for p in reset["partitions"]] == [
        (topic, 0, None)
    ]
    assert share_offsets(broker, group) == [(topic, 0, 0, 6)]
    assert consume_all(broker, client, topic, group, 6) == [*RECORDS, "late"]  # again

    deleted = admin(broker, "delete_share_group_offsets", group=group, topics=[topic, "nowhere"])
    assert [(t["topic"], t["error_name"]) for t in deleted["topics"]] == [
        (topic, None),
        ("nowhere", "UNKNOWN_TOPIC_OR_PARTITION"),
    ]
    assert share_offsets(broker, group) == []


def test_java_lists_and_describes_the_share_group(broker: KafkaBroker) -> None:
    topic, group = share_group(broker, JAVA)
    produce(broker, topic, RECORDS)
    consume_all(broker, JAVA, topic, group)
    listed = admin(broker, "list_share_groups")["groups"]
    assert {"group": group, "state": "Empty", "type": "share"} in listed
    [described] = admin(broker, "describe_share_groups", groups=[group])["groups"]
    assert (described["error_name"], described["state"], described["members"]) == (
        None,
        "Empty",
        [],
    )
    [unknown] = admin(broker, "describe_share_groups", groups=["no-such-group"])["groups"]
    assert unknown["error_name"] == "GROUP_ID_NOT_FOUND"


def test_java_admin_client_cannot_change_offsets_of_a_group_with_members(
    broker: KafkaBroker,
) -> None:
    topic, group = share_group(broker, JAVA)
    produce(broker, topic, RECORDS)
    holder = start_client(JAVA, job(broker, topic, group, hold=True))
    try:
        _wait_for_holding(holder)
        [described] = admin(broker, "describe_share_groups", groups=[group])["groups"]
        assert described["state"] == "Stable"
        assert [m["partitions"] for m in described["members"]] == [[[topic, 0]]]
        reset = admin(broker, "alter_share_group_offsets", group=group, offsets=[[topic, 0, 0]])
        assert [p["error_name"] for p in reset["partitions"]] == ["NON_EMPTY_GROUP"]
        deleted = admin(broker, "delete_share_group_offsets", group=group, topics=[topic])
        assert [t["error_name"] for t in deleted["topics"]] == ["NON_EMPTY_GROUP"]
    finally:
        holder.kill()
        holder.wait(10)


def test_confluent_kafka_lists_no_share_groups(broker: KafkaBroker) -> None:
    topic, group = share_group(broker, "confluent-kafka")
    produce(broker, topic, RECORDS)
    consume_all(broker, "confluent-kafka", topic, group)
    listed = run_ok("confluent-kafka", {"op": "list_groups", "bootstrap": broker.bootstrap_servers})
    assert group not in {g["group"] for g in listed["groups"]}
    assert group in {g["group"] for g in admin(broker, "list_share_groups")["groups"]}


def _wait_for_holding(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert '"holding"' in line, process.stderr.read() if process.stderr else line
