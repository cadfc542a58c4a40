"""Zombies with real clients: two producers with one transactional id (the older is fenced),
a transaction left open past its timeout (the broker aborts it), and a broker restart in the
middle of a transaction."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.txn.txnhelp import (
    TXN_SETTINGS,
    create_topic,
    describe_txn,
    records,
    text,
    unique,
    wait_for,
)

pytestmark = pytest.mark.clients

FENCED_ERRORS = {"PRODUCER_FENCED", "_FENCED", "INVALID_PRODUCER_EPOCH"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=TXN_SETTINGS) as running:
        yield running


def produce(client: str, bootstrap: str, topic: str, prefix: str, **job: Any) -> None:
    run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "records": records(prefix, 2),
            **job,
        },
    )


def committed_values(client: str, bootstrap: str, topic: str, count: int) -> list[str | None]:
    result = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": count,
            "from": "earliest",
            "isolation": "read_committed",
            "timeout_ms": 10_000,
            "group": None,
        },
    )
    return [text(record["value"]) for record in result["records"]]


@pytest.mark.parametrize("client", ["java-4.3", "confluent-kafka"])
def test_the_older_of_two_producers_is_fenced(broker: ThreadedBroker, client: str) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("fence", client)
    create_topic(bootstrap, topic)
    result = run_ok(
        client,
        {"op": "fence", "bootstrap": bootstrap, "topic": topic, "transactional_id": "tid"},
    )
    assert result["older_error_name"] in FENCED_ERRORS, result["older_error"]
    assert committed_values(client, bootstrap, topic, 2) == ["newer"]


def test_a_transaction_left_open_past_its_timeout_is_aborted(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("timeout")
    create_topic(bootstrap, topic)
    produce(
        "java-4.3",
        bootstrap,
        topic,
        "open",
        transactional_id="crashed",
        transaction="open",
        transaction_timeout_ms=1000,
    )
    assert describe_txn(bootstrap, "crashed").transaction_state in ("Ongoing", "PrepareAbort")
    produce("java-4.3", bootstrap, topic, "later", transactional_id="other")
    wait_for(
        lambda: describe_txn(bootstrap, "crashed").transaction_state == "CompleteAbort",
        "the broker to abort the transaction",
    )
    described = describe_txn(bootstrap, "crashed")
    # fenced (epoch 1), then the abort bumps again under transactions V2, as Kafka 4
    assert described.producer_epoch == 2
    # the open transaction held back the last stable offset until it was aborted
    assert committed_values("java-4.3", bootstrap, topic, 3) == ["later-0", "later-1"]


def test_broker_restart_in_the_middle_of_a_transaction(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("restart")
    create_topic(bootstrap, topic)
    produce("java-4.3", bootstrap, topic, "before", transactional_id="tid")
    produce("java-4.3", bootstrap, topic, "open", transactional_id="tid", transaction="open")
    broker.restart()
    assert describe_txn(bootstrap, "tid").transaction_state == "Ongoing"
    # a new producer with the same id aborts the open transaction, then commits its own
    produce("java-4.3", bootstrap, topic, "after", transactional_id="tid")
    wait_for(
        lambda: describe_txn(bootstrap, "tid").transaction_state == "CompleteCommit",
        "the commit markers",
    )
    expected = ["before-0", "before-1", "after-0", "after-1"]
    assert committed_values("java-4.3", bootstrap, topic, 5) == expected
    broker.restart()
    assert committed_values("confluent-kafka", bootstrap, topic, 5) == expected
