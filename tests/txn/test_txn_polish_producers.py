"""Producer state for the batches the group coordinator writes (TxnOffsetCommit, Kafka's origin
COORDINATOR): epochs checked, sequences not, transactions tracked as a log replay tracks them."""

from __future__ import annotations

from minibroker.protocol.errors import ErrorCode
from minibroker.txn.producers import APPEND, CoordinatorBatch, ProducerStateManager
from tests.txn.test_producers import NOW_MS, PID, Batch, Partition, stored_batch


def coordinator_append(
    manager: ProducerStateManager, partition: Partition, batch: CoordinatorBatch
) -> ErrorCode:
    check = manager.check_coordinator_append(partition, batch)
    if check.error != ErrorCode.NO_ERROR:
        return check.error
    assert check == APPEND
    base = partition.log.log_end_offset
    stored = Batch(PID, batch.producer_epoch, 0, batch.record_count, is_transactional=True)
    partition.log.append(stored_batch(base, stored))
    manager.record_append(partition, batch, base, base + batch.record_count - 1, NOW_MS)
    return ErrorCode.NO_ERROR


def test_coordinator_batches_skip_sequence_checks_and_open_the_transaction() -> None:
    manager, partition = ProducerStateManager(), Partition()
    partition.log.append(stored_batch(0, Batch(producer_id=PID + 1)))
    # every batch starts at sequence 0, which a client batch could not repeat
    for _ in range(3):
        assert coordinator_append(manager, partition, CoordinatorBatch(PID, 0, 2)) == (
            ErrorCode.NO_ERROR
        )
    assert partition.ongoing_txns.first_offset_of(PID) == 1
    assert partition.ongoing_txns.last_stable_offset(partition.log.log_end_offset, 0) == 1

    replayed = Partition(log=partition.log)
    ProducerStateManager().rebuild([replayed])
    assert replayed.ongoing_txns.first_offset_of(PID) == 1


def test_coordinator_batches_of_an_older_epoch_are_refused() -> None:
    manager, partition = ProducerStateManager(), Partition()
    assert coordinator_append(manager, partition, CoordinatorBatch(PID, 1, 1)) == (
        ErrorCode.NO_ERROR
    )
    completed = manager.record_end_txn_marker(
        partition, PID, 2, 0, NOW_MS, marker_offset=1, commit=False
    )
    assert completed is not None and (completed.first_offset, completed.is_aborted) == (0, True)
    assert coordinator_append(manager, partition, CoordinatorBatch(PID, 1, 1)) == (
        ErrorCode.INVALID_PRODUCER_EPOCH
    )
    assert coordinator_append(manager, partition, CoordinatorBatch(PID, 2, 1)) == (
        ErrorCode.NO_ERROR
    )
