"""Consume-transform-produce with the offsets sent to the transaction (Java
`sendOffsetsToTransaction` with group metadata, confluent-kafka `send_offsets_to_transaction`):
the output is exactly once although the first run crashes in the middle of a transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, records, text, unique

pytestmark = pytest.mark.clients

EOS_CLIENTS = ["java-4.3", "confluent-kafka"]
INPUT_RECORDS = 10
BATCH = 4
CRASH_AFTER = 6  # one committed batch of 4, then 2 records of the next batch


@pytest.fixture(scope="module")
def eos_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    data_dir: Path = tmp_path_factory.mktemp("txn-eos") / "data"
    with ThreadedBroker(data_dir=data_dir, settings=TXN_SETTINGS) as running:
        yield running


def transform(client: str, bootstrap: str, names: dict[str, str], **job: Any) -> dict[str, Any]:
    return run_ok(
        client,
        {
            "op": "transform",
            "bootstrap": bootstrap,
            "batch": BATCH,
            "timeout_ms": 40_000,
            **names,
            **job,
        },
    )


def output(client: str, bootstrap: str, topic: str, isolation: str, count: int) -> list[Any]:
    result = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": count,
            "from": "earliest",
            "isolation": isolation,
            "timeout_ms": 8000,
            "group": None,
        },
    )
    return result["records"]


@pytest.mark.parametrize("client", EOS_CLIENTS)
def test_exactly_once_after_a_crash_mid_batch(eos_broker: ThreadedBroker, client: str) -> None:
    bootstrap = eos_broker.bootstrap_servers
    names = {
        "input": unique("in", client),
        "output": unique("out", client),
        "group": unique("g", client),
        "transactional_id": unique("tid", client),
        "instance_id": unique("i", client),
    }
    create_topic(bootstrap, names["input"])
    create_topic(bootstrap, names["output"])
    run_ok(
        client,
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": names["input"],
            "records": records("in", INPUT_RECORDS),
        },
    )
    crashed = transform(client, bootstrap, names, count=INPUT_RECORDS, crash_after=CRASH_AFTER)
    assert (crashed["crashed"], crashed["committed"]) == (True, BATCH)
    resumed = transform(client, bootstrap, names, count=INPUT_RECORDS - BATCH)
    assert (resumed["crashed"], resumed["committed"]) == (False, INPUT_RECORDS - BATCH)

    committed = output(client, bootstrap, names["output"], "read_committed", INPUT_RECORDS + 1)
    sources = Counter(text(dict(r["headers"])["source"]) for r in committed)
    assert sources == Counter(f"0:{offset}" for offset in range(INPUT_RECORDS))
    assert [text(r["value"]) for r in committed] == [f"in-{i}" for i in range(INPUT_RECORDS)]
    everything = output(client, bootstrap, names["output"], "read_uncommitted", INPUT_RECORDS + 3)
    # the two records of the crashed transaction are in the log, aborted
    assert len(everything) == INPUT_RECORDS + CRASH_AFTER - BATCH
