"""Transaction markers in partition logs: LSO, read_committed fetches, aborted transactions,
marker errors, over TCP with hand-built transactional batches and markers written in-process."""

from __future__ import annotations

import errno
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.log.blob import FileBlob
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.control import read_end_txn_marker
from minibroker.testing.threaded import ThreadedBroker
from tests.txn.txn_wire import (
    FETCH_VERSION,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    aborted,
    create_topic,
    fetch,
    fetch_request,
    headers,
    list_offset,
    marker,
    produce,
    txn_batch,
)
from tests.wire import WireClient

TOPIC = "txn-data"
PID_A, PID_B = 1000, 2000


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data") as running:
        create_topic(running.bootstrap_servers, TOPIC)
        yield running


def produced(bootstrap: str, batch: bytes) -> int:
    response = produce(bootstrap, TOPIC, batch)
    assert response.error_code == ErrorCode.NO_ERROR, response
    base_offset: int = response.base_offset
    return base_offset


def test_open_transaction_holds_the_lso_until_its_commit(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    assert produced(bootstrap, txn_batch(PID_A, 0, 0, 3)) == 0

    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (3, 0)
    assert not committed.records
    assert aborted(committed) == []
    uncommitted = fetch(bootstrap, TOPIC, 0, READ_UNCOMMITTED)
    assert [h.base_offset for h in headers(uncommitted.records)] == [0]
    assert uncommitted.last_stable_offset == 0
    assert aborted(uncommitted) is None

    assert marker(broker, TOPIC, PID_A, 0, commit=True) == ErrorCode.NO_ERROR
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 4)
    data, control = headers(committed.records)
    assert (data.base_offset, data.is_transactional, data.is_control) == (0, True, False)
    assert (control.base_offset, control.is_control, control.producer_id) == (3, True, PID_A)
    stored_marker = read_end_txn_marker(control, committed.records[-control.size :])
    assert stored_marker is not None and stored_marker.commit
    assert aborted(committed) == []


def test_aborted_transactions_are_listed_for_the_fetched_range(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2))  # 0-1
    produced(bootstrap, txn_batch(PID_B, 0, 0, 2))  # 2-3
    produced(bootstrap, txn_batch(PID_A, 0, 2, 1))  # 4
    assert marker(broker, TOPIC, PID_A, 0, commit=False) == ErrorCode.NO_ERROR  # 5
    # B is still open from offset 2: nothing from there on is stable.
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert committed.last_stable_offset == 2
    assert [h.base_offset for h in headers(committed.records)] == [0]
    assert aborted(committed) == [(PID_A, 0)]

    assert marker(broker, TOPIC, PID_B, 0, commit=True) == ErrorCode.NO_ERROR  # 6
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert committed.last_stable_offset == 7
    assert [h.base_offset for h in headers(committed.records)] == [0, 2, 4, 5, 6]
    assert aborted(committed) == [(PID_A, 0)]
    # A fetch past the aborted transaction's marker does not list it.
    assert aborted(fetch(bootstrap, TOPIC, 6, READ_COMMITTED)) == []

    produced(bootstrap, txn_batch(PID_B, 0, 2, 1))  # 7
    assert marker(broker, TOPIC, PID_B, 0, commit=False) == ErrorCode.NO_ERROR  # 8
    assert aborted(fetch(bootstrap, TOPIC, 6, READ_COMMITTED)) == [(PID_B, 7)]
    assert aborted(fetch(bootstrap, TOPIC, 0, READ_COMMITTED)) == [(PID_A, 0), (PID_B, 7)]


def test_txnindex_holds_kafka_entries(broker: ThreadedBroker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2))  # 0-1
    produced(bootstrap, txn_batch(PID_B, 0, 0, 1))  # 2
    assert marker(broker, TOPIC, PID_A, 0, commit=False) == ErrorCode.NO_ERROR  # 3
    assert marker(broker, TOPIC, PID_B, 0, commit=False) == ErrorCode.NO_ERROR  # 4
    index = tmp_path / "data" / f"{TOPIC}-0" / "00000000000000000000.txnindex"
    # version, producer id, first offset, last offset (the marker), LSO after the marker
    assert index.read_bytes() == bytes.fromhex(
        "0000 00000000000003e8 0000000000000000 0000000000000003 0000000000000002"
        " 0000 00000000000007d0 0000000000000002 0000000000000004 0000000000000005"
    )


def test_empty_transactions_and_commits_are_not_indexed(
    broker: ThreadedBroker, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    assert marker(broker, TOPIC, PID_A, 0, commit=False) == ErrorCode.NO_ERROR
    produced(bootstrap, txn_batch(PID_A, 0, 0, 1))
    assert marker(broker, TOPIC, PID_A, 0, commit=True) == ErrorCode.NO_ERROR
    index = tmp_path / "data" / f"{TOPIC}-0" / "00000000000000000000.txnindex"
    assert not index.exists()  # nothing indexed: as Kafka, the file is not even created
    committed = fetch(bootstrap, TOPIC, 0, READ_COMMITTED)
    assert (committed.last_stable_offset, aborted(committed)) == (3, [])


def test_marker_errors(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    assert marker(broker, "no-such-topic", PID_A, 0, commit=True) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    assert marker(broker, TOPIC, PID_A, 0, commit=True, partition=1) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )
    produced(bootstrap, txn_batch(PID_A, 3, 0, 1))
    assert marker(broker, TOPIC, PID_A, 2, commit=True) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert marker(broker, TOPIC, PID_A, 3, commit=True, coordinator_epoch=5) == (ErrorCode.NO_ERROR)
    assert marker(broker, TOPIC, PID_A, 3, commit=True, coordinator_epoch=4) == (
        ErrorCode.TRANSACTION_COORDINATOR_FENCED
    )
    assert fetch(bootstrap, TOPIC, 0, READ_COMMITTED).high_watermark == 2


def test_epoch_bumped_by_an_abort_marker_fences_the_old_epoch(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2))
    # The coordinator aborts a timed-out transaction with the producer's epoch bumped.
    assert marker(broker, TOPIC, PID_A, 1, commit=False) == ErrorCode.NO_ERROR
    stale = produce(bootstrap, TOPIC, txn_batch(PID_A, 0, 2, 1))
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    gap = produce(bootstrap, TOPIC, txn_batch(PID_A, 1, 5, 1))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produced(bootstrap, txn_batch(PID_A, 1, 0, 1)) == 3
    assert fetch(bootstrap, TOPIC, 0, READ_COMMITTED).last_stable_offset == 3


def test_non_transactional_write_during_a_transaction_is_refused(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 1))
    plain = produce(bootstrap, TOPIC, txn_batch(PID_A, 0, 1, 1, transactional=False))
    assert plain.error_code == ErrorCode.INVALID_TXN_STATE


def test_markers_on_consumer_offsets(broker: ThreadedBroker) -> None:
    async def ensure_offsets_topic() -> None:
        assert broker.broker is not None
        broker.broker.groups.ensure_offsets_topic()

    broker.call(ensure_offsets_topic())
    assert marker(broker, "__consumer_offsets", PID_A, 0, commit=True) == ErrorCode.NO_ERROR
    assert marker(broker, "__consumer_offsets", PID_A, 0, commit=False, partition=3) == (
        ErrorCode.NO_ERROR
    )


def test_list_offsets_honours_the_isolation_level(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2, timestamp=1_000))  # 0-1
    produced(bootstrap, txn_batch(PID_B, 0, 0, 2, timestamp=5_000))  # 2-3
    assert marker(broker, TOPIC, PID_A, 0, commit=True) == ErrorCode.NO_ERROR  # 4, now
    assert list_offset(bootstrap, TOPIC, -1, READ_UNCOMMITTED) == (5, -1)
    assert list_offset(bootstrap, TOPIC, -1, READ_COMMITTED) == (2, -1)
    assert list_offset(bootstrap, TOPIC, -2, READ_COMMITTED) == (0, -1)
    assert list_offset(bootstrap, TOPIC, 1_000, READ_COMMITTED) == (0, 1_000)
    # Found in the open transaction or after it: beyond what read_committed may read.
    assert list_offset(bootstrap, TOPIC, 4_000, READ_UNCOMMITTED) == (2, 5_000)
    assert list_offset(bootstrap, TOPIC, 4_000, READ_COMMITTED) == (-1, -1)
    assert list_offset(bootstrap, TOPIC, -3, READ_UNCOMMITTED)[0] == 4
    assert list_offset(bootstrap, TOPIC, -3, READ_COMMITTED) == (-1, -1)


def test_read_committed_long_poll_is_woken_by_the_marker(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 2))

    async def waiting_fetches() -> int:
        assert broker.broker is not None
        partition = broker.broker.cluster.partition(TOPIC, 0)
        assert partition is not None
        return len(partition.append_listeners)

    with WireClient(bootstrap, timeout=60) as client:
        client.send(
            ApiKey.Fetch,
            FETCH_VERSION,
            **fetch_request(TOPIC, 0, READ_COMMITTED, max_wait_ms=120_000),
        )
        wait_until(lambda: broker.call(waiting_fetches()) == 1)
        assert marker(broker, TOPIC, PID_A, 0, commit=True) == ErrorCode.NO_ERROR
        _, response = client.recv(ApiKey.Fetch, FETCH_VERSION)
    partition = response.responses[0].partitions[0]
    assert partition.last_stable_offset == 3
    assert [h.base_offset for h in headers(partition.records)] == [0, 2]


def wait_until(condition: object, deadline_s: float = 20.0) -> None:
    assert callable(condition)
    end = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < end, "condition not met before the deadline"
        time.sleep(0.01)


def test_unreadable_txnindex_takes_the_partition_offline(
    broker: ThreadedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = broker.bootstrap_servers
    produced(bootstrap, txn_batch(PID_A, 0, 0, 1))
    assert marker(broker, TOPIC, PID_A, 0, commit=False) == ErrorCode.NO_ERROR

    original_read = FileBlob.read_at

    def failing_read(blob: FileBlob, length: int, position: int) -> bytes:
        if blob.path.suffix == ".txnindex":
            raise OSError(errno.EIO, "injected")
        return original_read(blob, length, position)

    monkeypatch.setattr(FileBlob, "read_at", failing_read)
    with WireClient(bootstrap) as client:
        for isolation in (READ_COMMITTED, READ_UNCOMMITTED):
            response = client.call(
                ApiKey.Fetch, FETCH_VERSION, **fetch_request(TOPIC, 0, isolation)
            )
            partition = response.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            assert (partition.records, partition.aborted_transactions) == (b"", None)
