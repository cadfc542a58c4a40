"""Topic admin through every client that has an admin API (Java 4.3 and 3.9, confluent-kafka,
kafka-python 3, kafkajs): create and delete topics, add partitions, describe and alter
configs, list offsets (earliest, latest, by time, max timestamp) and delete records."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import CAPABILITIES, CLIENTS, run_ok

pytestmark = pytest.mark.clients

ADMIN_CLIENTS = [name for name in CLIENTS if "delete_records" in CAPABILITIES[name].ops]
# kafkajs's admin has only AlterConfigs (no incremental DELETE), no max-timestamp query, and
# returns offsets without timestamps for a time query.
WHOLE_SET_ALTER_ONLY = {"kafkajs"}
BASE_TIME = 1_700_000_000_000


@pytest.fixture(scope="module")
def admin_broker() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(settings={"auto.create.topics.enable": "false"}) as running:
        yield running


def _job(client: str, bootstrap: str, op: str, **fields: Any) -> dict[str, Any]:
    return run_ok(client, {"op": op, "bootstrap": bootstrap, **fields})


def _errors(result: dict[str, Any], key: str = "topics") -> dict[str, str | None]:
    return {item["name"]: item["error_name"] for item in result[key]}


def test_every_admin_capable_client_is_covered() -> None:
    assert {"java-4.3", "java-3.9", "confluent-kafka"} <= set(ADMIN_CLIENTS)


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_create_alter_describe_delete(admin_broker: ThreadedBroker, client: str) -> None:
    bootstrap = admin_broker.bootstrap_servers
    topic = f"admin-{client.replace('.', '_')}"
    created = _job(
        client,
        bootstrap,
        "create_topics",
        topics=[
            {
                "name": topic,
                "partitions": 2,
                "replication_factor": 1,
                "configs": {"retention.ms": "3600000"},
            }
        ],
    )
    assert _errors(created) == {topic: None}
    again = run_ok(
        client,
        {
            "op": "create_topics",
            "bootstrap": bootstrap,
            "topics": [{"name": topic, "partitions": 1, "replication_factor": 1, "configs": {}}],
        },
    )
    assert _errors(again) == {topic: "TOPIC_ALREADY_EXISTS"}

    grown = _job(client, bootstrap, "create_partitions", topics=[{"name": topic, "count": 4}])
    assert _errors(grown) == {topic: None}
    metadata = _job(client, bootstrap, "metadata", topics=[topic])
    assert len(metadata["topics"][0]["partitions"]) == 4

    change: dict[str, Any] = {"set": {"cleanup.policy": "compact,delete"}}
    if client not in WHOLE_SET_ALTER_ONLY:
        change["delete"] = ["retention.ms"]
    altered = _job(
        client,
        bootstrap,
        "alter_configs",
        resources=[{"type": "topic", "name": topic, **change}],
    )
    assert altered["resources"][0]["error"] is None
    described = _job(
        client, bootstrap, "describe_configs", resources=[{"type": "topic", "name": topic}]
    )
    configs = described["resources"][0]["configs"]
    assert configs["cleanup.policy"]["value"] == "compact,delete"
    assert configs["retention.ms"]["value"] == "604800000"
    broker = _job(
        client, bootstrap, "describe_configs", resources=[{"type": "broker", "name": "1"}]
    )
    assert broker["resources"][0]["configs"]["auto.create.topics.enable"]["value"] == "false"

    deleted = _job(client, bootstrap, "delete_topics", topics=[topic])
    assert _errors(deleted) == {topic: None}
    gone = _job(client, bootstrap, "metadata", topics=None)
    assert topic not in {t["name"] for t in gone["topics"]}


@pytest.mark.parametrize("client", ADMIN_CLIENTS)
def test_list_offsets_and_delete_records(admin_broker: ThreadedBroker, client: str) -> None:
    bootstrap = admin_broker.bootstrap_servers
    topic = f"offsets-{client.replace('.', '_')}"
    _job(
        client,
        bootstrap,
        "create_topics",
        topics=[{"name": topic, "partitions": 1, "replication_factor": 1, "configs": {}}],
    )
    records = [
        {
            "key": None,
            "value": base64.b64encode(b"%d" % i).decode(),
            "headers": [],
            "partition": 0,
            "timestamp": BASE_TIME + i * 1000,
        }
        for i in range(10)
    ]
    run_ok(
        "confluent-kafka",
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "records": records,
            "config": {"linger.ms": "0", "batch.num.messages": "1"},
        },
    )

    def offset(spec: str | int) -> tuple[int, int]:
        result = _job(client, bootstrap, "list_offsets", topic=topic, spec=spec)
        entry = result["offsets"][0]
        assert entry["error_name"] is None
        return entry["offset"], entry["timestamp"]

    assert offset("earliest")[0] == 0
    assert offset("latest")[0] == 10
    if client in WHOLE_SET_ALTER_ONLY:
        assert offset(BASE_TIME + 3500)[0] == 4
    else:
        assert offset(BASE_TIME + 3500) == (4, BASE_TIME + 4000)
        assert offset("max_timestamp") == (9, BASE_TIME + 9000)

    trimmed = _job(client, bootstrap, "delete_records", topic=topic, offsets={"0": 6})
    assert trimmed["partitions"][0]["low_watermark"] == 6
    assert offset("earliest")[0] == 6
    consumed = run_ok(
        "java-4.3",
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": 4,
            "from": "earliest",
            "timeout_ms": 15_000,
            "group": None,
        },
    )
    assert [r["offset"] for r in consumed["records"]] == [6, 7, 8, 9]
