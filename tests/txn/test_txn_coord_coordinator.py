"""The transaction coordinator in-process, over an in-memory cluster, with a recording marker
writer in place of txn/markers.py: epochs and fencing, errors, markers, timeouts, reload."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.log.dirs import LogDirs
from minibroker.protocol.errors import ErrorCode
from minibroker.txn.coordinator import OFFSETS_TOPIC, TransactionCoordinator
from minibroker.txn.state import TxnState

E = ErrorCode
TIMEOUT_MS = 1000


@dataclass
class Recorder:
    """Marker writes and offset completions, as the coordinator asks for them."""

    markers: list[tuple[str, int, int, int, bool]] = field(default_factory=list)
    completed: list[tuple[int, int, bool]] = field(default_factory=list)
    answer: ErrorCode = ErrorCode.NO_ERROR

    def write_marker(
        self, topic: str, partition: int, pid: int, epoch: int, coord_epoch: int, commit: bool
    ) -> ErrorCode:
        if self.answer == ErrorCode.NO_ERROR:
            self.markers.append((topic, partition, pid, epoch, commit))
        return self.answer

    def offsets_partition_for(self, group_id: str) -> int:
        return 2

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        self.completed.append((offsets_partition, producer_id, commit))

    def load_offsets_partition(self, index: int) -> None:
        pass


@dataclass
class Clock:
    now: int = 1_000_000

    def __call__(self) -> int:
        return self.now


class Setup:
    def __init__(self) -> None:
        self.config = BrokerConfig(
            {
                "transaction.state.log.num.partitions": "3",
                "transaction.max.timeout.ms": "60000",
                "transactional.id.expiration.ms": "5000",
            }
        )
        logs = LogDirs(
            None, node_id=1, cluster_id="c", default_config=Cluster.default_log_config(self.config)
        )
        self.cluster = Cluster(self.config, logs, None)
        self.cluster.create_topic("a", 2)
        self.recorder = Recorder()
        self.clock = Clock()
        self.ids = iter(range(100, 200))
        self.coordinator = self.new_coordinator()

    def new_coordinator(self) -> TransactionCoordinator:
        coordinator = TransactionCoordinator(
            self.config,
            self.cluster,
            lambda: next(self.ids),
            self.recorder.write_marker,
            self.recorder,
            self.clock,
        )
        coordinator.start()
        return coordinator

    def init(self, txn_id: str = "t", pid: int = -1, epoch: int = -1) -> tuple[int, int]:
        result = self.coordinator.init_producer_id(txn_id, TIMEOUT_MS, pid, epoch)
        assert result.error == E.NO_ERROR
        return result.producer_id, result.producer_epoch

    def state(self, txn_id: str = "t") -> TxnState:
        return self.coordinator.transactions[txn_id].state


async def settle(coordinator: TransactionCoordinator, txn_id: str = "t") -> None:
    """Let the marker writes scheduled on the loop run (they need a few turns)."""
    for _ in range(100):
        if not coordinator.transactions[txn_id].pending_in_progress:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the transaction never completed")


@pytest.fixture
def setup() -> Setup:
    return Setup()


def test_init_gives_a_new_producer_id_then_bumps_its_epoch(setup: Setup) -> None:
    assert setup.init() == (100, 0)
    assert setup.init() == (100, 1)
    assert setup.init("other") == (101, 0)
    assert setup.state() is TxnState.EMPTY


@pytest.mark.parametrize("timeout_ms", [0, -1, 60_001])
def test_init_refuses_timeouts_outside_the_maximum(setup: Setup, timeout_ms: int) -> None:
    result = setup.coordinator.init_producer_id("t", timeout_ms)
    assert result.error == E.INVALID_TRANSACTION_TIMEOUT
    assert (result.producer_id, result.producer_epoch) == (-1, -1)
    assert setup.coordinator.init_producer_id("", TIMEOUT_MS).error == E.INVALID_REQUEST


def test_resuming_producers_keep_their_epoch_older_ones_are_fenced(setup: Setup) -> None:
    pid, epoch = setup.init()
    assert setup.init("t", pid, epoch) == (pid, epoch + 1)
    retry = setup.coordinator.init_producer_id("t", TIMEOUT_MS, pid, epoch)
    assert (retry.error, retry.producer_epoch) == (E.NO_ERROR, epoch + 1)
    assert setup.init() == (pid, epoch + 2)
    stale = setup.coordinator.init_producer_id("t", TIMEOUT_MS, pid, epoch)
    assert stale.error == E.PRODUCER_FENCED
    assert setup.coordinator.init_producer_id("t", TIMEOUT_MS, 9, 0).error == E.PRODUCER_FENCED


async def test_commit_writes_markers_and_answers_concurrent_meanwhile(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0), ("a", 1)]) == E.NO_ERROR
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0)]) == E.NO_ERROR
    assert setup.state() is TxnState.ONGOING
    assert coordinator.end_txn("t", pid, epoch, True) == E.NO_ERROR
    assert setup.state() is TxnState.PREPARE_COMMIT
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0)]) == E.CONCURRENT_TRANSACTIONS
    assert coordinator.end_txn("t", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert coordinator.init_producer_id("t", TIMEOUT_MS).error == E.CONCURRENT_TRANSACTIONS
    await settle(coordinator)
    assert setup.state() is TxnState.COMPLETE_COMMIT
    assert setup.recorder.markers == [("a", 0, pid, epoch, True), ("a", 1, pid, epoch, True)]
    assert coordinator.end_txn("t", pid, epoch, True) == E.NO_ERROR  # a retry
    assert coordinator.end_txn("t", pid, epoch, False) == E.INVALID_TXN_STATE
    assert coordinator.add_partitions("t", pid, epoch, [("a", 1)]) == E.NO_ERROR
    assert coordinator.transactions["t"].partitions == {("a", 1)}


async def test_bad_sequences_and_zombies(setup: Setup) -> None:
    coordinator = setup.coordinator
    assert coordinator.end_txn("t", 100, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    pid, epoch = setup.init()
    assert coordinator.end_txn("t", pid, epoch, True) == E.INVALID_TXN_STATE  # nothing open
    assert coordinator.end_txn("t", pid + 1, epoch, True) == E.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add_partitions("x", pid, epoch, [("a", 0)]) == E.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add_partitions("t", pid, epoch + 1, [("a", 0)]) == E.PRODUCER_FENCED
    assert coordinator.add_partitions("", pid, epoch, [("a", 0)]) == E.INVALID_REQUEST
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0)]) == E.NO_ERROR
    assert coordinator.end_txn("t", pid, epoch, False) == E.NO_ERROR
    assert coordinator.end_txn("t", pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    await settle(coordinator)
    assert setup.state() is TxnState.COMPLETE_ABORT
    assert coordinator.end_txn("t", pid, epoch, True) == E.INVALID_TXN_STATE


async def test_a_new_producer_aborts_the_open_transaction_and_fences_the_old(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0)]) == E.NO_ERROR
    assert coordinator.init_producer_id("t", TIMEOUT_MS).error == E.CONCURRENT_TRANSACTIONS
    assert setup.state() is TxnState.PREPARE_ABORT
    await settle(coordinator)
    assert setup.recorder.markers == [("a", 0, pid, epoch + 1, False)]
    assert setup.init() == (pid, epoch + 2)
    assert coordinator.end_txn("t", pid, epoch, True) == E.PRODUCER_FENCED
    assert coordinator.add_partitions("t", pid, epoch, [("a", 0)]) == E.PRODUCER_FENCED


async def test_a_transaction_open_past_its_timeout_is_aborted(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    assert coordinator.add_partitions("t", pid, epoch, [("a", 1)]) == E.NO_ERROR
    setup.clock.now += TIMEOUT_MS
    coordinator.abort_timed_out_transactions()
    assert setup.state() is TxnState.ONGOING
    setup.clock.now += 1
    coordinator.abort_timed_out_transactions()
    assert setup.state() is TxnState.PREPARE_ABORT
    await settle(coordinator)
    assert setup.state() is TxnState.COMPLETE_ABORT
    assert setup.recorder.markers == [("a", 1, pid, epoch + 1, False)]
    assert coordinator.end_txn("t", pid, epoch, True) == E.PRODUCER_FENCED


async def test_offsets_partition_joins_and_its_marker_completes_the_offsets(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    assert coordinator.txn_offset_commit_error("t", pid, epoch, 2) == E.INVALID_TXN_STATE
    assert coordinator.add_offsets("t", pid, epoch, "g") == E.NO_ERROR
    assert coordinator.txn_offset_commit_error("t", pid, epoch, 2) == E.NO_ERROR
    assert coordinator.txn_offset_commit_error("t", pid, epoch - 1, 2) == E.PRODUCER_FENCED
    assert coordinator.end_txn("t", pid, epoch, True) == E.NO_ERROR
    await settle(coordinator)
    assert setup.recorder.markers == [(OFFSETS_TOPIC, 2, pid, epoch, True)]
    assert setup.recorder.completed == [(2, pid, True)]


async def test_failed_marker_writes_are_retried(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    coordinator.add_partitions("t", pid, epoch, [("a", 0)])
    setup.recorder.answer = E.KAFKA_STORAGE_ERROR
    coordinator.end_txn("t", pid, epoch, True)
    await asyncio.sleep(0.02)
    assert setup.state() is TxnState.PREPARE_COMMIT
    setup.recorder.answer = E.NO_ERROR
    await settle(coordinator)
    assert setup.recorder.markers == [("a", 0, pid, epoch, True)]


async def test_reload_restores_state_and_finishes_prepared_transactions(setup: Setup) -> None:
    coordinator = setup.coordinator
    pid, epoch = setup.init()
    coordinator.add_partitions("t", pid, epoch, [("a", 0)])
    coordinator.end_txn("t", pid, epoch, True)
    coordinator.stop()  # before the markers were written
    other_pid, other_epoch = setup.init("open")
    coordinator.add_partitions("open", other_pid, other_epoch, [("a", 1)])
    assert setup.recorder.markers == []
    reloaded = setup.new_coordinator()
    setup.coordinator = reloaded
    assert reloaded.transactions["open"].state is TxnState.ONGOING
    assert reloaded.transactions["open"].partitions == {("a", 1)}
    assert reloaded.transactions["t"].state is TxnState.PREPARE_COMMIT
    await settle(reloaded)
    assert setup.state() is TxnState.COMPLETE_COMMIT
    assert setup.recorder.markers == [("a", 0, pid, epoch, True)]
    assert setup.init() == (pid, epoch + 1)
    assert setup.new_coordinator().transactions["t"].producer_epoch == epoch + 1


def test_unused_transactional_ids_expire(setup: Setup) -> None:
    coordinator = setup.coordinator
    setup.init()
    pid, epoch = setup.init("busy")
    coordinator.add_partitions("busy", pid, epoch, [("a", 0)])
    setup.clock.now += 5000
    coordinator.remove_expired_transactional_ids()
    assert set(coordinator.transactions) == {"busy"}
    assert set(setup.new_coordinator().transactions) == {"busy"}


def test_list_filters(setup: Setup) -> None:
    coordinator = setup.coordinator
    setup.init("idle")
    pid, epoch = setup.init("busy")
    coordinator.add_partitions("busy", pid, epoch, [("a", 0)])
    setup.clock.now += 10
    ids = {txn.transactional_id for txn in coordinator.listed(None, None, -1)}
    assert ids == {"idle", "busy"}
    assert [t.transactional_id for t in coordinator.listed({TxnState.ONGOING}, None, -1)] == [
        "busy"
    ]
    assert [t.transactional_id for t in coordinator.listed(None, {pid}, -1)] == ["busy"]
    assert coordinator.listed({TxnState.ONGOING}, None, 10) == []
    assert len(coordinator.listed({TxnState.ONGOING}, None, 9)) == 1
