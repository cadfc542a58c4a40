"""A real read_committed Java consumer starting while a transaction holds its group's offsets:
it retries OffsetFetch (require_stable, UNSTABLE_OFFSET_COMMIT) and, once the transaction
commits, starts from the offset committed in it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.txn.test_txn_polish_offsets import end_and_wait, pending_txn_commit
from tests.txn.txn_wire import produce
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, text, unique, wait_for
from tests.wire import WireClient

pytestmark = pytest.mark.clients

CLIENT = "java-4.3"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    settings = {**TXN_SETTINGS, "group.initial.rebalance.delay.ms": "0"}
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as running:
        create_topic(running.bootstrap_servers, "t", 1)
        assert running.broker is not None
        running.broker.faults.record_requests = True
        yield running


def stable_offset_fetches(broker: ThreadedBroker, group: str) -> int:
    assert broker.broker is not None
    return sum(
        1
        for request in broker.broker.faults.requests(ApiKey.OffsetFetch)
        if request.body.require_stable
        and any(g.group_id == group for g in (request.body.groups or []))
    )


@pytest.mark.uses_client(CLIENT)
def test_a_read_committed_consumer_waits_for_pending_txn_offsets(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    now_ms = int(time.time() * 1000)
    plain = build_batch([(None, f"v{i}".encode(), [], now_ms) for i in range(10)])
    assert produce(bootstrap, "t", plain).error_code == ErrorCode.NO_ERROR
    group = unique("g", CLIENT)
    with WireClient(bootstrap) as client, ThreadPoolExecutor(1) as pool:
        pid, epoch = pending_txn_commit(client, "tx", group, 6)
        consumer = pool.submit(
            run_ok,
            CLIENT,
            {
                "op": "consume",
                "bootstrap": bootstrap,
                "topic": "t",
                "count": 4,
                "from": "earliest",
                "isolation": "read_committed",
                "timeout_ms": 30_000,
                "group": group,
            },
        )
        # a second OffsetFetch is the consumer retrying after UNSTABLE_OFFSET_COMMIT
        wait_for(lambda: stable_offset_fetches(broker, group) >= 2, "the consumer's retry")
        assert not consumer.done()
        end_and_wait(client, bootstrap, "tx", pid, epoch, commit=True)
        result = consumer.result(timeout=60)
    assert [record["offset"] for record in result["records"]] == [6, 7, 8, 9]
    assert [text(record["value"]) for record in result["records"]] == ["v6", "v7", "v8", "v9"]
