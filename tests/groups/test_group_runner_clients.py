"""Every real client of the shared harness (tests/clients) consumes in a group, commits on
leaving, and a second run of the same group resumes from those commits: Java 4.3/3.9,
kafka-python 2 and 3, aiokafka, confluent-kafka, kcat (`-G`, Debian's librdkafka 2.0.2) and
kafkajs."""

from __future__ import annotations

import base64

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import CLIENTS, run_ok
from tests.groups.test_group_clients import create_topic, produce

pytestmark = pytest.mark.clients
JOB_TIMEOUT_MS = 30_000


def consume_in_group(client: str, bootstrap: str, group: str, count: int) -> list[int]:
    result = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": "events",
            "count": count,
            "from": "earliest",
            "timeout_ms": JOB_TIMEOUT_MS,
            "group": group,
            "isolation": "read_uncommitted",
        },
    )
    assert not result["timed_out"]
    return sorted(int(base64.b64decode(record["value"])) for record in result["records"])


@pytest.mark.parametrize("client", CLIENTS)
def test_group_consumer_resumes_from_its_commits(group_broker: ThreadedBroker, client: str) -> None:
    bootstrap = group_broker.bootstrap_servers
    create_topic(bootstrap, "events")
    produce(bootstrap, "events", range(30))
    assert consume_in_group(client, bootstrap, "g", 30) == list(range(30))
    produce(bootstrap, "events", range(30, 42))
    assert consume_in_group(client, bootstrap, "g", 12) == list(range(30, 42))
