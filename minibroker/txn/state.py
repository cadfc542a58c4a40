"""Transaction metadata per transactional id and its one transition table.

Kafka's `TransactionState` and `TransactionMetadata`, behaviour not code. A change is made in
two steps, as in Kafka: `prepare_*` computes the new metadata (a `TxnTransit`, what is written
to `__transaction_state`) and marks the transition pending; once the record is stored,
`complete(transit)` applies it. While a transition is pending (the log write, or the markers of
PrepareCommit/PrepareAbort being written) the coordinator answers CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_TIMESTAMP = -1
INT16_MAX = 32767

TopicPartition = tuple[str, int]


class TxnState(Enum):
    """(id stored in TransactionLogValue.TransactionStatus, name shown by admin APIs)."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display_name(self) -> str:
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        return next((state for state in cls if state.display_name == name), None)


S = TxnState
VALID_PREVIOUS_STATES: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty and Complete*: a TV2 abort with no partition added (KIP-890 part 2).
    S.PREPARE_ABORT: frozenset(
        {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    ),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
"""The transition table: a state may only be entered from these states."""

COMPLETED_STATES = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
PREPARED_STATES = frozenset({S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalStateTransition(RuntimeError):
    """A transition the table forbids: a coordinator bug, never a client error."""


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka keeps the last epoch (Short.MaxValue) for fencing; at max - 1 a new id is due."""
    return producer_epoch >= INT16_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The metadata a transition leads to: what is stored, then applied."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    update_ms: int
    # The transaction version of the client's last transaction (TV2: 2; TV1: 0, as Kafka).
    client_transaction_version: int = 0
    # TV2: the producer id the transaction being ended hands over to (its epoch is exhausted).
    next_producer_id: int = NO_PRODUCER_ID


@dataclass(eq=False)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 0
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = NO_TIMESTAMP
    update_ms: int = NO_TIMESTAMP
    client_transaction_version: int = 0
    next_producer_id: int = NO_PRODUCER_ID
    pending: TxnState | None = None
    # A PrepareEpochFence whose log write failed must not bump the epoch a second time.
    failed_epoch_fence: bool = False

    @property
    def pending_in_progress(self) -> bool:
        return self.pending is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def current(self) -> TxnTransit:
        return TxnTransit(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_ms,
            self.update_ms,
            self.client_transaction_version,
            self.next_producer_id,
        )

    # -- the two steps ---------------------------------------------------------------------

    def _prepare(self, transit: TxnTransit) -> TxnTransit:
        if self.pending is not None:
            raise IllegalStateTransition(
                f"{self.transactional_id}: preparing {transit.state.display_name} while "
                f"{self.pending.display_name} is pending"
            )
        if self.state not in VALID_PREVIOUS_STATES[transit.state]:
            raise IllegalStateTransition(
                f"{self.transactional_id}: {self.state.display_name} -> "
                f"{transit.state.display_name} is not a valid transition"
            )
        self.pending = transit.state
        return transit

    def complete(self, transit: TxnTransit) -> None:
        """Apply a prepared transition once its record is stored."""
        if self.pending != transit.state:
            raise IllegalStateTransition(
                f"{self.transactional_id}: completing {transit.state.display_name}, "
                f"pending {self.pending.display_name if self.pending else None}"
            )
        self.producer_id = transit.producer_id
        self.last_producer_id = transit.last_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.update_ms = transit.update_ms
        self.client_transaction_version = transit.client_transaction_version
        self.next_producer_id = transit.next_producer_id
        self.pending = None

    def abandon(self) -> None:
        """The record of the pending transition could not be stored: nothing changes."""
        self.pending = None

    # -- transitions -----------------------------------------------------------------------

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnTransit | None:
        """InitProducerId on a completed transaction: the next epoch (None: fenced)."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            # A retry of a bump whose answer was lost: the current epoch again.
            epochs = (self.producer_epoch, self.last_producer_epoch)
        else:
            return None
        return self._prepare(
            replace(
                self.current(),
                producer_epoch=epochs[0],
                last_producer_epoch=epochs[1],
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=NO_TIMESTAMP,
                update_ms=now_ms,
            )
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        """The epoch is exhausted: a new producer id starting at epoch 0."""
        return self._prepare(
            replace(
                self.current(),
                producer_id=new_producer_id,
                last_producer_id=self.producer_id,
                producer_epoch=0,
                last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=NO_TIMESTAMP,
                update_ms=now_ms,
            )
        )

    def prepare_fence_epoch(self) -> TxnTransit:
        """An ongoing transaction must be aborted under a higher epoch, fencing its producer."""
        if self.producer_epoch == INT16_MAX:
            raise IllegalStateTransition(f"{self.transactional_id}: epoch {INT16_MAX} is the last")
        bumped = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            replace(
                self.current(),
                producer_epoch=bumped,
                last_producer_epoch=NO_PRODUCER_EPOCH,
                state=TxnState.PREPARE_EPOCH_FENCE,
            )
        )

    def prepare_add_partitions(
        self, added: set[TopicPartition], now_ms: int, client_transaction_version: int = 0
    ) -> TxnTransit:
        if self.state in COMPLETED_STATES:
            start_ms, partitions = now_ms, frozenset(added)
        else:
            start_ms, partitions = self.start_ms, frozenset(self.partitions | added)
        return self._prepare(
            replace(
                self.current(),
                state=TxnState.ONGOING,
                partitions=partitions,
                start_ms=start_ms,
                update_ms=now_ms,
                client_transaction_version=client_transaction_version,
            )
        )

    def prepare_abort_or_commit(
        self,
        state: TxnState,
        now_ms: int,
        *,
        bump_epoch: bool = False,
        next_producer_id: int = NO_PRODUCER_ID,
    ) -> TxnTransit:
        """PrepareCommit/PrepareAbort; under TV2 (`bump_epoch`) the epoch goes up by one, so the
        markers and the producer's next transaction carry the new epoch (KIP-890 part 2). An
        exhausted epoch hands over to `next_producer_id` (epoch 0) once the markers are
        written."""
        transit = replace(self.current(), state=state, update_ms=now_ms)
        if bump_epoch:
            transit = replace(
                transit,
                producer_epoch=self.producer_epoch + 1,
                last_producer_epoch=self.producer_epoch,
                client_transaction_version=2,
                next_producer_id=next_producer_id,
            )
        if self.state in COMPLETED_STATES:
            transit = replace(transit, partitions=frozenset(), start_ms=now_ms)
        return self._prepare(transit)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """PrepareCommit/PrepareAbort -> CompleteCommit/CompleteAbort, after the markers."""
        state = (
            TxnState.COMPLETE_COMMIT
            if self.state == TxnState.PREPARE_COMMIT
            else TxnState.COMPLETE_ABORT
        )
        transit = replace(self.current(), state=state, partitions=frozenset(), update_ms=now_ms)
        if self.next_producer_id != NO_PRODUCER_ID:
            transit = replace(
                transit,
                producer_id=self.next_producer_id,
                last_producer_id=self.producer_id,
                producer_epoch=0,
                next_producer_id=NO_PRODUCER_ID,
            )
        return self._prepare(transit)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(replace(self.current(), state=TxnState.DEAD, partitions=frozenset()))

    def take_over_epoch_fence(self, epoch: int) -> None:
        """The abort that follows a PrepareEpochFence (never stored as such) takes its place
        and carries the bumped epoch."""
        self.pending = None
        self.producer_epoch = epoch
        self.last_producer_epoch = NO_PRODUCER_EPOCH
