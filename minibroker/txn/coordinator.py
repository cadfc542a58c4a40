"""The transaction coordinator, as Kafka's `TransactionCoordinator`, transactions V2 included.

Every method answers at once and mutates state without awaiting. Each transition is stored in
`__transaction_state` (state_log.py) before it is applied and answered. EndTxn answers once
PrepareCommit/PrepareAbort is stored; the COMMIT/ABORT markers are then written on the next
turn of the event loop (`write_end_txn_marker` of txn/markers.py, to every partition of the
transaction and to the group's `__consumer_offsets` partition for offsets sent to it), and
CompleteCommit/CompleteAbort is stored after them. Meanwhile the transactional id answers
CONCURRENT_TRANSACTIONS, as in Kafka; clients retry.

Zombies: InitProducerId bumps the epoch, so requests with an older epoch get PRODUCER_FENCED
(the handlers answer INVALID_PRODUCER_EPOCH to versions before KIP-588). InitProducerId while a
transaction is ongoing aborts it under a bumped epoch first and answers
CONCURRENT_TRANSACTIONS; the retry bumps again. A transaction open longer than its timeout is
aborted the same way every `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
Transactional ids unused for `transactional.id.expiration.ms` are removed (a tombstone) every
`transaction.remove.expired.transaction.cleanup.interval.ms`.

Transactions V2 (KIP-890 part 2, `transaction.version` 2 finalized, see cluster/features.py):
an EndTxn v5 (`end_txn_v2`) bumps the producer epoch when it prepares the commit or abort, so
the markers carry the new epoch and the answer returns it; a retry with the previous epoch of
an end that completed answers NO_ERROR with the current epoch, and an abort with no partition
in the transaction still bumps the epoch (a produce may have been in flight). When the epoch
is exhausted the completed transaction hands over to a new producer id at epoch 0 (Kafka's
NextProducerId). The coordinator's own aborts (InitProducerId fencing an ongoing transaction,
timeouts) follow the finalized version: under TV2 the abort bumps the fenced epoch once more.
Partitions join a TV2 transaction implicitly: Produce v12+ and TxnOffsetCommit v5 call
`add_partitions(..., client_transaction_version=2)`. Under TV1 a transactional produce is
verified first (`verify_partitions`, Kafka's AddPartitionsToTxn VerifyOnly): a partition not in
the transaction gets TRANSACTION_ABORTABLE, so no hanging transaction is made. The stored
records are TransactionLogValue v1 while `transaction.version` >= 1 is finalized.

After a restart `start()` reloads the last record of every transactional id: PrepareCommit and
PrepareAbort write their markers again and complete, Ongoing transactions continue until their
timeout. In a cluster the same happens to the ids of a `__transaction_state` partition whose
leader changed (`reload_partition`: the new leader's replica is the state). A marker to a
replicated partition is written as Kafka's WriteTxnMarkers with acks=all: not while the
partition is offline or its ISR under min.insync.replicas, and it counts once the ISR has it;
if the partition's leader changes first, it is written again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from minibroker.protocol.errors import ErrorCode
from minibroker.txn.state import (
    COMPLETED_STATES,
    INT16_MAX,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    PREPARED_STATES,
    TopicPartition,
    TransactionMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from minibroker.txn.state_log import LoadedTxn, TransactionStateTopic

if TYPE_CHECKING:
    from minibroker.cluster.features import Features
    from minibroker.cluster.state import Cluster, Partition
    from minibroker.config import BrokerConfig

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
MARKER_RETRY_DELAY_S = 0.1
# Where a marker written to a replicated partition stands.
_WAITING, _REPLICATED, _LOST = range(3)
# Marker write outcomes after which Kafka stops retrying a partition.
_MARKER_DONE = frozenset(
    {
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)

MarkerWriter = Callable[[str, int, int, int, int, bool], ErrorCode]
"""(topic, partition, producer id, producer epoch, coordinator epoch, commit) -> error."""


class TxnOffsetsOwner(Protocol):
    """The group coordinator's side of transactional offset commits."""

    def offsets_partition_for(self, group_id: str) -> int: ...

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """The marker is in that `__consumer_offsets` partition: materialize or drop."""

    def load_offsets_partition(self, index: int) -> None:
        """A marker is about to be written to that `__consumer_offsets` partition."""


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


TRANSACTION_VERSION_2 = 2


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: Cluster,
        new_producer_id: Callable[[], int],
        write_marker: MarkerWriter,
        offsets: TxnOffsetsOwner,
        clock: Callable[[], int] = _wall_clock_ms,
        features: Features | None = None,
    ) -> None:
        self.store = TransactionStateTopic(
            cluster,
            config.get_int("transaction.state.log.num.partitions"),
            config.get_int("transaction.state.log.segment.bytes"),
        )
        self.max_timeout_ms = config.get_int("transaction.max.timeout.ms")
        self.id_expiration_ms = config.get_int("transactional.id.expiration.ms")
        self.transactions: dict[str, TransactionMetadata] = {}
        self._new_producer_id = new_producer_id
        self._write_marker = write_marker
        self._offsets = offsets
        self._clock = clock
        self._features = features
        self._timers: set[asyncio.TimerHandle] = set()
        self._stopped = False

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Reload every transactional id and finish the transactions that were being ended."""
        self._stopped = False
        self._load(self.store.load())

    def reload_partition(self, index: int) -> None:
        """Partition `index` of `__transaction_state` has a new leader: its transactional ids
        are what that leader's replica holds (Kafka's `loadTransactionsForTxnTopicPartition`),
        and the transactions being ended there are finished again with the new coordinator
        epoch. Work left from before (markers, timers) stops: its transaction is replaced."""
        for transactional_id in list(self.transactions):
            if self.store.partition_index(transactional_id) == index:
                del self.transactions[transactional_id]
        self._load(self.store.load([index]))

    def _load(self, loaded_records: Iterable[LoadedTxn]) -> None:
        loaded_ids: set[str] = set()
        for loaded in loaded_records:
            loaded_ids.add(loaded.transactional_id)
            if loaded.value is None:
                self.transactions.pop(loaded.transactional_id, None)
            else:
                self.transactions[loaded.transactional_id] = _metadata_from(
                    loaded.transactional_id, loaded.value
                )
        for transactional_id in loaded_ids:
            txn = self.transactions.get(transactional_id)
            if txn is not None and txn.state in PREPARED_STATES:
                self._complete_after_markers(txn)

    def stop(self) -> None:
        self._stopped = True
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    def ensure_log(self) -> None:
        self.store.ensure()

    # ---- InitProducerId --------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_epoch: int = NO_PRODUCER_EPOCH,
    ) -> InitResult:
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        expected = None if expected_producer_id == NO_PRODUCER_ID else expected_epoch
        txn = self.transactions.get(transactional_id)
        if txn is None:
            txn = TransactionMetadata(transactional_id, self._new_producer_id())
            txn.timeout_ms = timeout_ms
            self.transactions[transactional_id] = txn
        if txn.pending_in_progress or txn.state in PREPARED_STATES:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not _is_valid_producer(
            txn, expected_producer_id, expected_epoch
        ):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.state == TxnState.ONGOING:
            return self._fence_and_abort(txn)
        now = self._clock()
        if txn.epoch_exhausted and (expected is None or expected == txn.producer_epoch):
            transit = txn.prepare_producer_id_rotation(
                self._new_producer_id(), timeout_ms, now, expected is not None
            )
        else:
            bumped = txn.prepare_increment_epoch(timeout_ms, expected, now)
            if bumped is None:
                return InitResult(ErrorCode.PRODUCER_FENCED)
            transit = bumped
        error = self._store(txn, transit)
        if error != ErrorCode.NO_ERROR:
            return InitResult(error)
        return InitResult(ErrorCode.NO_ERROR, txn.producer_id, txn.producer_epoch)

    def _fence_and_abort(self, txn: TransactionMetadata) -> InitResult:
        """Abort the ongoing transaction under a bumped epoch; the client retries."""
        fence = txn.prepare_fence_epoch()
        error = self._end(txn, fence.producer_id, fence.producer_epoch, False, from_client=False)
        if txn.pending == TxnState.PREPARE_EPOCH_FENCE:
            txn.abandon()
        if error != ErrorCode.NO_ERROR:
            return InitResult(error)
        return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------

    @property
    def transaction_version(self) -> int:
        """The finalized `transaction.version` (0 without a feature registry)."""
        return 0 if self._features is None else self._features.transaction_version

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        client_transaction_version: int = 0,
    ) -> ErrorCode:
        txn, error = self._checked(transactional_id, producer_id, producer_epoch)
        if txn is None:
            return error
        if txn.pending_in_progress or txn.state in PREPARED_STATES:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        added = set(partitions)
        if txn.state == TxnState.ONGOING and added <= txn.partitions:
            return ErrorCode.NO_ERROR
        return self._store(
            txn, txn.prepare_add_partitions(added, self._clock(), client_transaction_version)
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """Kafka's handleVerifyPartitionsInTransaction (AddPartitionsToTxn VerifyOnly): each
        partition is in the producer's transaction, or TRANSACTION_ABORTABLE."""
        wanted = list(partitions)
        txn, error = self._checked(transactional_id, producer_id, producer_epoch)
        if txn is not None and txn.state in PREPARED_STATES:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if txn is None or error != ErrorCode.NO_ERROR:
            return dict.fromkeys(wanted, error)
        return {
            tp: ErrorCode.NO_ERROR if tp in txn.partitions else ErrorCode.TRANSACTION_ABORTABLE
            for tp in wanted
        }

    def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        """Kafka adds the group's `__consumer_offsets` partition to the transaction."""
        partition = self._offsets.offsets_partition_for(group_id)
        return self.add_partitions(
            transactional_id, producer_id, producer_epoch, [(OFFSETS_TOPIC, partition)]
        )

    def txn_offset_commit_error(
        self, transactional_id: str, producer_id: int, producer_epoch: int, offsets_partition: int
    ) -> ErrorCode:
        """Kafka's verification of a TxnOffsetCommit: the producer is current and its ongoing
        transaction holds the group's offsets partition (AddOffsetsToTxn came first)."""
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch < txn.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if (
            producer_epoch != txn.producer_epoch
            or txn.state != TxnState.ONGOING
            or (OFFSETS_TOPIC, offsets_partition) not in txn.partitions
        ):
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NO_ERROR

    def _checked(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[TransactionMetadata | None, ErrorCode]:
        if not transactional_id:
            return None, ErrorCode.INVALID_REQUEST
        txn = self.transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if txn.producer_epoch != producer_epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return txn, ErrorCode.NO_ERROR

    # ---- EndTxn ----------------------------------------------------------------------------

    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """EndTxn v0-4 (TV1)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return self._end(txn, producer_id, producer_epoch, commit, from_client=True)

    def end_txn_v2(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> InitResult:
        """EndTxn v5 (TV2): the error and the producer id and epoch the client goes on with."""
        if not transactional_id:
            return InitResult(ErrorCode.INVALID_REQUEST)
        txn = self.transactions.get(transactional_id)
        if txn is None:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        return self._end_v2(txn, producer_id, producer_epoch, commit)

    def _end_v2(
        self, txn: TransactionMetadata, producer_id: int, producer_epoch: int, commit: bool
    ) -> InitResult:
        """Kafka 4's endTransaction for a TV2 client: the epoch goes up with every end."""
        retry_on_overflow = (
            producer_id == txn.last_producer_id
            and producer_epoch == INT16_MAX - 1
            and txn.producer_epoch == 0
        )
        if txn.producer_id != producer_id and not retry_on_overflow:
            return InitResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        retry_on_bump = producer_epoch == txn.producer_epoch - 1
        is_retry = retry_on_bump or retry_on_overflow
        if txn.state in PREPARED_STATES:
            valid_epoch = retry_on_bump
        elif txn.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            valid_epoch = is_retry or producer_epoch == txn.producer_epoch
        else:
            valid_epoch = producer_epoch == txn.producer_epoch
        if not valid_epoch:
            return InitResult(ErrorCode.PRODUCER_FENCED)
        if txn.pending_in_progress:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if txn.state == TxnState.ONGOING or (
            not commit and not is_retry and txn.state in COMPLETED_STATES
        ):
            return self._prepare_end_v2(txn, commit)
        if is_retry or txn.state in PREPARED_STATES:
            error = _end_answer_without_transition(txn.state, commit) or ErrorCode.NO_ERROR
            if error != ErrorCode.NO_ERROR:
                return InitResult(error)
            return InitResult(error, txn.producer_id, txn.producer_epoch)
        return InitResult(ErrorCode.INVALID_TXN_STATE)

    def _prepare_end_v2(self, txn: TransactionMetadata, commit: bool) -> InitResult:
        """Store PrepareCommit/PrepareAbort with the bumped epoch and answer it, as Kafka does
        (an exhausted epoch hands the transactional id over to a new producer id at epoch 0
        when the transaction completes)."""
        target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        next_producer_id = self._new_producer_id() if txn.epoch_exhausted else NO_PRODUCER_ID
        transit = txn.prepare_abort_or_commit(
            target, self._clock(), bump_epoch=True, next_producer_id=next_producer_id
        )
        error = self._store(txn, transit)
        if error != ErrorCode.NO_ERROR:
            return InitResult(error)
        self._complete_after_markers(txn)
        return InitResult(error, txn.producer_id, txn.producer_epoch)

    def _end(
        self,
        txn: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        *,
        from_client: bool,
    ) -> ErrorCode:
        if txn.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if (from_client and producer_epoch != txn.producer_epoch) or (
            producer_epoch < txn.producer_epoch
        ):
            return ErrorCode.PRODUCER_FENCED
        fencing = txn.pending == TxnState.PREPARE_EPOCH_FENCE
        if txn.pending_in_progress and not fencing:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        retry_answer = _end_answer_without_transition(txn.state, commit)
        if retry_answer is not None:
            return retry_answer
        if fencing:
            txn.take_over_epoch_fence(producer_epoch)
        target = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        # The coordinator's own aborts (fencing, timeouts) follow the finalized transaction
        # version, as Kafka's: under TV2 the abort bumps the fenced epoch once more.
        bump = (
            not from_client
            and self.transaction_version >= TRANSACTION_VERSION_2
            and producer_epoch < INT16_MAX
        )
        transit = txn.prepare_abort_or_commit(target, self._clock(), bump_epoch=bump)
        error = self._store(txn, transit)
        if error != ErrorCode.NO_ERROR:
            txn.failed_epoch_fence = fencing
            return error
        txn.failed_epoch_fence = False
        self._complete_after_markers(txn)
        return ErrorCode.NO_ERROR

    def _complete_after_markers(self, txn: TransactionMetadata) -> None:
        """Mark CompleteCommit/CompleteAbort pending and write the markers on the next turn."""
        transit = txn.prepare_complete(self._clock())
        remaining = set(txn.partitions)
        self._later(0, lambda: self._write_markers(txn, transit, remaining, {}))

    def _current(self, txn: TransactionMetadata) -> bool:
        """False once a reload of its partition replaced the transaction."""
        return self.transactions.get(txn.transactional_id) is txn

    def _write_markers(
        self,
        txn: TransactionMetadata,
        transit: TxnTransit,
        remaining: set[TopicPartition],
        unreplicated: dict[TopicPartition, tuple[int, int]],
    ) -> None:
        """Write the markers still `remaining`; those written to a replicated partition wait
        in `unreplicated` (leader epoch, end offset) until its ISR has them."""
        if not self._current(txn):
            return
        commit = transit.state == TxnState.COMPLETE_COMMIT
        coordinator_epoch = self.store.coordinator_epoch(txn.transactional_id)
        for topic, partition in sorted(remaining):
            written = unreplicated.pop((topic, partition), None)
            if written is not None:
                state = self._marker_replication(topic, partition, *written)
                if state == _WAITING:
                    unreplicated[(topic, partition)] = written
                    continue
                if state == _REPLICATED:
                    remaining.discard((topic, partition))
                    self._marker_replicated(txn, topic, partition, commit)
                    continue
            if topic == OFFSETS_TOPIC:
                self._offsets.load_offsets_partition(partition)
            error = self._marker_refusal(topic, partition) or self._write_marker(
                topic, partition, txn.producer_id, txn.producer_epoch, coordinator_epoch, commit
            )
            if error not in _MARKER_DONE:
                log.warning(
                    "transaction %s: marker for %s-%d failed (%s); retrying",
                    txn.transactional_id,
                    topic,
                    partition,
                    error.name,
                )
                continue
            pending = self._marker_end(topic, partition) if error == ErrorCode.NO_ERROR else None
            if pending is not None:
                unreplicated[(topic, partition)] = pending
                continue
            remaining.discard((topic, partition))
            if error == ErrorCode.NO_ERROR:
                self._marker_replicated(txn, topic, partition, commit)
        if remaining:
            self._later(
                MARKER_RETRY_DELAY_S,
                lambda: self._write_markers(txn, transit, remaining, unreplicated),
            )
            return
        self._finish(txn, transit)

    def _marker_replicated(
        self, txn: TransactionMetadata, topic: str, partition: int, commit: bool
    ) -> None:
        """A marker is in its partition's ISR: a group's transactional offsets take effect."""
        if topic == OFFSETS_TOPIC:
            self._offsets.complete_txn_offsets(partition, txn.producer_id, commit)

    def _marker_refusal(self, topic: str, index: int) -> ErrorCode | None:
        """Kafka's acks=all refusals of a marker: the partition offline (no leader to send
        it to) or its ISR under min.insync.replicas."""
        partition = self.store.cluster.partition(topic, index)
        if partition is None or partition.replication is None:
            return None
        if partition.replication.offline:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.store.cluster.not_enough_replicas(partition) is not None:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return None

    def _marker_end(self, topic: str, index: int) -> tuple[int, int] | None:
        """(leader epoch, end offset) of a marker just written to a replicated partition
        whose ISR does not have it yet."""
        partition = self.store.cluster.partition(topic, index)
        if partition is None or partition.replication is None:
            return None
        end = partition.log.log_end_offset
        partition.replication.advance_high_watermark()
        if partition.replication.high_watermark >= end:
            return None
        return partition.leader_epoch, end

    def _marker_replication(self, topic: str, index: int, epoch: int, end: int) -> int:
        partition = self.store.cluster.partition(topic, index)
        if partition is None or partition.replication is None:
            return _REPLICATED
        if partition.leader_epoch != epoch and not self._kept_by_leader(partition, epoch, end):
            return _LOST  # a new leader without the marker: write it again
        return _REPLICATED if partition.replication.high_watermark >= end else _WAITING

    @staticmethod
    def _kept_by_leader(partition: Partition, epoch: int, end: int) -> bool:
        """Whether the current leader's log holds what leader epoch `epoch` wrote up to `end`
        (its leader-epoch cache, as OffsetForLeaderEpoch answers)."""
        assert partition.replication is not None
        leader = partition.replication.leader_replica()
        if leader is None:
            return True  # offline: wait for a leader to decide
        found, end_of_epoch = leader.epochs.end_offset_for(epoch, leader.log_end_offset)
        return found == epoch and end_of_epoch >= end

    def _finish(self, txn: TransactionMetadata, transit: TxnTransit) -> None:
        if not self._current(txn):
            return
        error = self._append(txn.transactional_id, transit)
        if error != ErrorCode.NO_ERROR:
            self._later(MARKER_RETRY_DELAY_S, lambda: self._finish(txn, transit))
            return
        txn.complete(transit)

    # ---- timers ----------------------------------------------------------------------------

    def abort_timed_out_transactions(self) -> None:
        """Kafka's abortTimedOutTransactions: fence the producer and abort."""
        now = self._clock()
        for txn in list(self.transactions.values()):
            if (
                txn.state == TxnState.ONGOING
                and not txn.pending_in_progress
                and txn.start_ms + txn.timeout_ms < now
                and not txn.epoch_exhausted
            ):
                log.info(
                    "aborting transaction %s of producer %d: open longer than %d ms",
                    txn.transactional_id,
                    txn.producer_id,
                    txn.timeout_ms,
                )
                self._fence_and_abort(txn)

    def remove_expired_transactional_ids(self) -> None:
        now = self._clock()
        for txn in list(self.transactions.values()):
            if (
                txn.state in COMPLETED_STATES
                and not txn.pending_in_progress
                and txn.update_ms + self.id_expiration_ms <= now
            ):
                transit = txn.prepare_dead()
                if self._append(txn.transactional_id, None) != ErrorCode.NO_ERROR:
                    txn.abandon()
                    continue
                txn.complete(transit)
                del self.transactions[txn.transactional_id]

    def _later(self, delay_s: float, action: Callable[[], None]) -> None:
        if self._stopped:
            return
        loop = asyncio.get_running_loop()
        timer: asyncio.TimerHandle | None = None

        def run() -> None:
            assert timer is not None
            self._timers.discard(timer)
            try:
                action()
            except Exception:
                log.exception("transaction coordinator task failed")

        timer = loop.call_later(delay_s, run)
        self._timers.add(timer)

    # ---- storage ---------------------------------------------------------------------------

    def _append(self, transactional_id: str, transit: TxnTransit | None) -> ErrorCode:
        """Store a record: TransactionLogValue v1 while transaction.version >= 1 is finalized."""
        self.store.value_version = 1 if self.transaction_version >= 1 else 0
        return self.store.append(transactional_id, transit, self._clock())

    def _store(self, txn: TransactionMetadata, transit: TxnTransit) -> ErrorCode:
        error = self._append(txn.transactional_id, transit)
        if error != ErrorCode.NO_ERROR:
            txn.abandon()
            return error
        txn.complete(transit)
        return ErrorCode.NO_ERROR

    # ---- admin -----------------------------------------------------------------------------

    def listed(
        self, states: set[TxnState] | None, producer_ids: set[int] | None, min_duration_ms: int
    ) -> list[TransactionMetadata]:
        """ListTransactions (Kafka's filters: all must match; an empty one matches all; the
        duration is measured from the transaction's start)."""
        now = self._clock()
        return [
            txn
            for txn in self.transactions.values()
            if txn.state != TxnState.DEAD
            and (not states or txn.state in states)
            and (not producer_ids or txn.producer_id in producer_ids)
            and (min_duration_ms < 0 or now - txn.start_ms > min_duration_ms)
        ]


def _end_answer_without_transition(state: TxnState, commit: bool) -> ErrorCode | None:
    """EndTxn in a state other than Ongoing: a retry of the same end, or a bad sequence."""
    if state == TxnState.ONGOING:
        return None
    if state == TxnState.COMPLETE_COMMIT and commit:
        return ErrorCode.NO_ERROR
    if state == TxnState.COMPLETE_ABORT and not commit:
        return ErrorCode.NO_ERROR
    if (state == TxnState.PREPARE_COMMIT and commit) or (
        state == TxnState.PREPARE_ABORT and not commit
    ):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    return ErrorCode.INVALID_TXN_STATE


def _is_valid_producer(txn: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Kafka's isValidProducerId for an InitProducerId that carries the producer's id."""
    return (
        txn.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == txn.producer_id
        or (producer_id == txn.last_producer_id and is_epoch_exhausted(epoch))
    )


def _metadata_from(transactional_id: str, stored: TxnTransit) -> TransactionMetadata:
    return TransactionMetadata(
        transactional_id,
        producer_id=stored.producer_id,
        last_producer_id=stored.last_producer_id,
        producer_epoch=stored.producer_epoch,
        last_producer_epoch=stored.last_producer_epoch,
        timeout_ms=stored.timeout_ms,
        state=stored.state,
        partitions=set(stored.partitions),
        start_ms=stored.start_ms,
        update_ms=stored.update_ms,
        client_transaction_version=stored.client_transaction_version,
        next_producer_id=stored.next_producer_id,
    )


def error_for_version(error: ErrorCode, api_version: int, producer_fenced_from: int) -> ErrorCode:
    """PRODUCER_FENCED (KIP-588) is INVALID_PRODUCER_EPOCH for versions before it existed."""
    if error == ErrorCode.PRODUCER_FENCED and api_version < producer_fenced_from:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
