"""The transaction state table and TransactionMetadata's transitions (Kafka's rules)."""

from __future__ import annotations

import itertools

import pytest

from minibroker.txn.state import (
    INT16_MAX,
    VALID_PREVIOUS_STATES,
    IllegalStateTransition,
    TransactionMetadata,
    TxnState,
)

S = TxnState


def metadata(
    state: TxnState = S.EMPTY, epoch: int = 3, last_epoch: int = -1
) -> TransactionMetadata:
    return TransactionMetadata(
        "t", 7, producer_epoch=epoch, last_producer_epoch=last_epoch, timeout_ms=100, state=state
    )


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(s.id, s.display_name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert S.from_name("Ongoing") is S.ONGOING and S.from_name("ongoing") is None


def _prepare_to(txn: TransactionMetadata, target: TxnState) -> None:
    prepare = {
        S.EMPTY: lambda: txn.prepare_increment_epoch(100, None, 1),
        S.ONGOING: lambda: txn.prepare_add_partitions({("a", 0)}, 1),
        S.PREPARE_COMMIT: lambda: txn.prepare_abort_or_commit(S.PREPARE_COMMIT, 1),
        S.PREPARE_ABORT: lambda: txn.prepare_abort_or_commit(S.PREPARE_ABORT, 1),
        S.DEAD: txn.prepare_dead,
        S.PREPARE_EPOCH_FENCE: txn.prepare_fence_epoch,
    }
    if target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        txn.prepare_complete(1)
        assert txn.pending is target
        return
    prepare[target]()


@pytest.mark.parametrize(("current", "target"), list(itertools.product(S, S)))
def test_only_the_table_s_transitions_are_allowed(current: TxnState, target: TxnState) -> None:
    if target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and current not in (
        S.PREPARE_COMMIT,
        S.PREPARE_ABORT,
    ):
        # prepare_complete chooses its target from the current state; others are refused.
        txn = metadata(current)
        with pytest.raises(IllegalStateTransition):
            txn.prepare_complete(1)
        return
    txn = metadata(current)
    if target in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
        expected = S.COMPLETE_COMMIT if current is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if target is not expected:
            return
    if current in VALID_PREVIOUS_STATES[target]:
        _prepare_to(txn, target)
        assert txn.pending is target
    else:
        with pytest.raises(IllegalStateTransition):
            _prepare_to(txn, target)
        assert txn.pending is None


def test_a_pending_transition_blocks_another_and_completes_or_is_abandoned() -> None:
    txn = metadata()
    transit = txn.prepare_add_partitions({("a", 0), ("b", 1)}, 50)
    with pytest.raises(IllegalStateTransition):
        txn.prepare_add_partitions({("c", 0)}, 51)
    assert txn.state is S.EMPTY and not txn.partitions
    txn.complete(transit)
    assert txn.state is S.ONGOING and txn.partitions == {("a", 0), ("b", 1)}
    assert txn.start_ms == 50 and txn.pending is None
    txn.prepare_add_partitions({("c", 0)}, 60)
    txn.abandon()
    assert txn.partitions == {("a", 0), ("b", 1)} and txn.pending is None
    txn.complete(txn.prepare_add_partitions({("c", 0)}, 70))
    assert txn.start_ms == 50 and len(txn.partitions) == 3


@pytest.mark.parametrize(
    ("epoch", "last_epoch", "expected", "result"),
    [
        (3, -1, None, (4, -1)),  # a new producer: bump, forget the last epoch
        (3, -1, 3, (4, 3)),  # the current producer resuming (KIP-360): bump, remember
        (4, 3, 3, (4, 3)),  # a retry of that bump: the same epoch again
        (4, 3, 2, None),  # an older producer: fenced
        (-1, -1, 5, (0, -1)),  # no epoch yet: any producer may start
    ],
)
def test_increment_epoch(
    epoch: int, last_epoch: int, expected: int | None, result: tuple[int, int] | None
) -> None:
    txn = metadata(epoch=epoch, last_epoch=last_epoch)
    transit = txn.prepare_increment_epoch(500, expected, 9)
    if result is None:
        assert transit is None and txn.pending is None
        return
    assert transit is not None
    assert (transit.producer_epoch, transit.last_producer_epoch) == result
    assert transit.state is S.EMPTY and transit.timeout_ms == 500 and transit.start_ms == -1


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    txn = metadata(epoch=INT16_MAX - 1)
    assert txn.epoch_exhausted
    transit = txn.prepare_producer_id_rotation(99, 100, 5, record_last_epoch=True)
    assert (transit.producer_id, transit.last_producer_id) == (99, 7)
    assert (transit.producer_epoch, transit.last_producer_epoch) == (0, INT16_MAX - 1)


def test_fencing_bumps_the_epoch_once_even_after_a_failed_write() -> None:
    txn = metadata(S.ONGOING, epoch=3)
    assert txn.prepare_fence_epoch().producer_epoch == 4
    txn.take_over_epoch_fence(4)
    txn.abandon()
    txn.failed_epoch_fence = True
    assert txn.prepare_fence_epoch().producer_epoch == 4


def test_complete_clears_the_partitions() -> None:
    txn = metadata(S.ONGOING)
    txn.partitions = {("a", 0)}
    txn.complete(txn.prepare_abort_or_commit(S.PREPARE_ABORT, 5))
    assert txn.partitions == {("a", 0)}
    txn.complete(txn.prepare_complete(6))
    assert txn.state is S.COMPLETE_ABORT and not txn.partitions and txn.update_ms == 6
