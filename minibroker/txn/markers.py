"""Transaction markers written to partition logs (their record format: records/control.py).

`write_end_txn_marker` is what Kafka's WriteTxnMarkers does inside the partition leader
(`ReplicaManager.appendRecords` with origin COORDINATOR): check the marker against the
producer's state, append the control batch, end the producer's transaction on the partition
(the last stable offset moves), index an aborted transaction in the segment's `.txnindex`, and
wake long-poll fetches. The transaction coordinator calls it for each partition of a
transaction, `__consumer_offsets` partitions included.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_control_batch

if TYPE_CHECKING:
    from minibroker.server.broker import Broker

log = logging.getLogger(__name__)


def write_end_txn_marker(
    broker: Broker,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    *,
    transaction_version: int = 0,
) -> ErrorCode:
    """Append a COMMIT (or ABORT) marker for the producer's transaction to the partition's log.

    Errors as Kafka's WriteTxnMarkers answers them per partition: UNKNOWN_TOPIC_OR_PARTITION,
    INVALID_PRODUCER_EPOCH (the producer has written with a newer epoch),
    TRANSACTION_COORDINATOR_FENCED (a newer coordinator epoch wrote a marker already),
    KAFKA_STORAGE_ERROR (the disk failed). `transaction_version` is the marker's (KIP-1228,
    WriteTxnMarkers v2): from 2, its epoch must be newer than the producer's last.
    """
    target = broker.cluster.partition(topic, partition)
    if target is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    producers = broker.producers
    check = producers.check_end_txn_marker(
        target, producer_id, producer_epoch, coordinator_epoch, transaction_version
    )
    if check.error != ErrorCode.NO_ERROR:
        log.info("marker for %s-%d refused: %s", topic, partition, check.message)
        return check.error
    now_ms = time.time_ns() // 1_000_000
    batch = build_control_batch(
        commit,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        timestamp=now_ms,
    )
    try:
        offset = target.log.append(bytearray(batch), target.leader_epoch, now_ms)
        completed = producers.record_end_txn_marker(
            target,
            producer_id,
            producer_epoch,
            coordinator_epoch,
            now_ms,
            marker_offset=offset,
            commit=commit,
        )
        if completed is not None and completed.is_aborted:
            target.log.append_aborted_txn(
                completed.producer_id,
                completed.first_offset,
                completed.last_offset,
                completed.last_stable_offset,
            )
    except OSError as exc:
        log.error("writing a transaction marker to %s-%d failed: %s", topic, partition, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR
    target.notify_appended()
    return ErrorCode.NO_ERROR
