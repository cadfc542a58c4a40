"""Open transactions, the LSO and `.txnindex` across broker restarts, clean or not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.txn.txn_wire import (
    READ_COMMITTED,
    aborted,
    create_topic,
    fetch,
    marker,
    produce,
    txn_batch,
)

TOPIC = "txn-restart"
PID_A, PID_B = 3000, 4000


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def broker(data_dir: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=data_dir) as running:
        create_topic(running.bootstrap_servers, TOPIC)
        yield running


def produced(bootstrap: str, batch: bytes) -> None:
    assert produce(bootstrap, TOPIC, batch).error_code == ErrorCode.NO_ERROR


def write_history(broker: ThreadedBroker) -> None:
    """A aborted (first offset 0), B still open from offset 3."""
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2))  # 0-1
    assert marker(broker, TOPIC, PID_A, 0, commit=False) == ErrorCode.NO_ERROR  # 2
    produced(bootstrap, txn_batch(PID_B, 0, 0, 1))  # 3
    produced(bootstrap, txn_batch(PID_B, 0, 1, 1))  # 4


def assert_history(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (5, 3)
    assert aborted(committed) == [(PID_A, 0)]
    # B's transaction goes on after the restart: its commit makes everything stable.
    assert marker(broker, TOPIC, PID_B, 0, commit=True) == ErrorCode.NO_ERROR
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (6, 6)
    assert aborted(committed) == [(PID_A, 0)]


def test_open_transaction_survives_a_clean_restart(broker: ThreadedBroker) -> None:
    write_history(broker)
    broker.restart()
    assert_history(broker)


def test_lso_and_txnindex_come_back_without_snapshot_or_index(
    broker: ThreadedBroker, data_dir: Path
) -> None:
    write_history(broker)
    broker.stop()
    partition_dir = data_dir / f"{TOPIC}-0"
    removed = [*partition_dir.glob("*.snapshot"), *partition_dir.glob("*.txnindex")]
    assert len(removed) == 2
    for path in removed:
        path.unlink()
    (data_dir / ".kafka_cleanshutdown").unlink()
    broker.start()
    assert (partition_dir / f"{0:020d}.txnindex").stat().st_size == 34
    assert_history(broker)
