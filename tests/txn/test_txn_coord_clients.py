"""Real transactional producers against minibroker: commit and abort, seen by read_committed
and read_uncommitted consumers (control records never delivered as data)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, records, text, unique

pytestmark = pytest.mark.clients

TRANSACTIONAL_CLIENTS = [
    "java-4.3",
    "java-3.9",
    "confluent-kafka",
    "kafka-python-3",
    "kafka-python-2",
    "aiokafka",
    "kafkajs",
]


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    data_dir: Path = tmp_path_factory.mktemp("txn-clients") / "data"
    with ThreadedBroker(data_dir=data_dir, settings=TXN_SETTINGS) as running:
        yield running


def consumed_values(client: str, bootstrap: str, topic: str, isolation: str, count: int) -> list:
    result = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": count,
            "from": "earliest",
            "isolation": isolation,
            "timeout_ms": 8000 if count else 3000,
            "group": None,
        },
    )
    return [text(record["value"]) for record in result["records"]]


@pytest.mark.parametrize("client", TRANSACTIONAL_CLIENTS)
def test_commit_and_abort(txn_broker: ThreadedBroker, client: str) -> None:
    bootstrap = txn_broker.bootstrap_servers
    topic = unique("txn", client)
    create_topic(bootstrap, topic)
    transactional_id = unique("tid", client)
    for ending in ("commit", "abort", "commit"):
        produced = run_ok(
            client,
            {
                "op": "produce",
                "bootstrap": bootstrap,
                "topic": topic,
                "records": records(ending, 3),
                "transactional_id": transactional_id,
                "transaction": ending,
            },
        )
        assert len(produced["results"]) == 3
    committed = [f"commit-{i}" for i in range(3)]
    aborted = [f"abort-{i}" for i in range(3)]
    assert consumed_values(client, bootstrap, topic, "read_committed", 6) == committed + committed
    # 9 data records and 3 markers in the log: the markers are never delivered as records.
    everything = consumed_values(client, bootstrap, topic, "read_uncommitted", 10)
    assert everything == committed + aborted + committed
