"""The share coordinator (KIP-932), as Kafka 4.3's `ShareCoordinatorShard`: the persisted state
of every share partition, one per key (group id, topic id, partition), kept in
`__share_group_state` (`persist.py`).

A key's state is its state epoch, leader epoch, start offset (-1: initialized, not started),
delivery complete count (-1: unknown) and state batches (runs of offsets with a delivery
state, 0 available, 2 acknowledged, 4 archived, and a delivery count). The operations are the
share-coordinator RPCs' (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary), with Kafka's checks in Kafka's order:

- every one: a negative partition is INVALID_REQUEST ("The partition id cannot be a negative
  number."); a topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION (Read
  and Write look at the state first).
- Initialize: a stored state epoch above the request's is FENCED_STATE_EPOCH; else the state
  starts afresh at the request's start offset and state epoch, leader epoch 0, no batches,
  delivery complete count -1 with start offset -1, else 0.
- Read: no state is INVALID_REQUEST ("Read operation on uninitialized share partition not
  allowed."); a leader epoch (not -1) below the highest seen is FENCED_LEADER_EPOCH; a higher
  one is recorded (a record is written).
- Write: no state is INVALID_REQUEST ("Write operation on uninitialized share partition not
  allowed."); a leader or state epoch (not -1) below the highest seen is FENCED_LEADER_EPOCH
  or FENCED_STATE_EPOCH; else the start offset (unless -1) and leader epoch (unless -1) are
  taken, the batches combined with the stored ones (`state_batches.py`) and the delivery
  complete count taken as sent. The state epoch is Initialize's (Kafka's ShareUpdate record
  carries none).
- Delete: the state goes (a tombstone); deleting no state succeeds and writes nothing.
- Summary: no state answers start offset -1, delivery complete count -1, epochs 0.

Kafka writes a ShareUpdate record between snapshots; here every change writes the whole state
as a ShareSnapshot (the snapshot epoch counts them), so a restart reads the latest snapshot of
each key. The delivery complete count is not in the record: after a restart it is counted from
the batches (acknowledged or archived offsets at or above the start offset).

The share partitions ShareFetch and ShareAcknowledge work on (`delivery.py`) are this state's
leader view: each of their changes is written here as the partition leader's write, and
`changed` tells them of every change made through the RPCs.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from minibroker.groups.share.persist import ShareStateTopic
from minibroker.groups.share.state_batches import (
    UNINITIALIZED_START_OFFSET,
    combine_state_batches,
)
from minibroker.groups.share.state_records import ShareSnapshot, ShareStateKey, StateBatch
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

UNINITIALIZED_DELIVERY_COMPLETE_COUNT = -1
DEFAULT_EPOCH = 0
NOT_WRITTEN = -1  # a leader epoch, state epoch or start offset a write leaves as it is
SNAPSHOT_EPOCHS = 1 << 16  # SnapshotEpoch is a uint16
COMPLETE_STATES = (2, 4)  # acknowledged, archived

NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
UNKNOWN_TOPIC_OR_PARTITION = "This server does not host this topic-partition."
FENCED_LEADER_EPOCH = "The leader epoch in the request is older than the epoch on the broker."
FENCED_STATE_EPOCH = (
    "The share coordinator rejected the request because the share-group state epoch did not match."
)


class ShareStateError(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class ShareStateStoreError(ShareStateError):
    """The state could not be written to `__share_group_state` (Kafka's failed operation)."""


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """One share partition's state, as Kafka's `ShareGroupOffset`."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]

    def snapshot(self) -> ShareSnapshot:
        return ShareSnapshot(
            self.snapshot_epoch,
            self.state_epoch,
            self.leader_epoch,
            self.start_offset,
            self.batches,
        )


@dataclass(frozen=True, slots=True)
class StateWrite:
    """A WriteShareGroupState partition: -1 leaves the epochs and the start offset as stored."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]


def delivery_complete_count(start_offset: int, batches: Iterable[StateBatch]) -> int:
    """The offsets at or above the start offset whose delivery is complete."""
    if start_offset < 0:
        return UNINITIALIZED_DELIVERY_COMPLETE_COUNT
    return sum(
        b.last_offset - max(b.first_offset, start_offset) + 1
        for b in batches
        if b.delivery_state in COMPLETE_STATES and b.last_offset >= start_offset
    )


StateListener = Callable[[ShareStateKey, "ShareGroupOffset | None"], None]


def _ignore(key: ShareStateKey, state: ShareGroupOffset | None) -> None:
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)


class ShareCoordinator:
    def __init__(
        self,
        store: ShareStateTopic | None,
        partition_count: Callable[[uuid.UUID], int | None],
    ) -> None:
        self._store = store
        self._partition_count = partition_count  # a topic id's partition count, None if unknown
        self._states: dict[ShareStateKey, ShareGroupOffset] = {}
        # The highest epochs seen, as Kafka's leaderEpochMap and stateEpochMap.
        self._leader_epochs: dict[ShareStateKey, int] = {}
        self._state_epochs: dict[ShareStateKey, int] = {}
        # Told of every change made through the RPCs (None: the state was deleted).
        self.changed: StateListener = _ignore

    def load(self) -> None:
        if self._store is None:
            return
        for key, snapshot in self._store.load().items():
            self._apply(
                key,
                ShareGroupOffset(
                    snapshot.snapshot_epoch,
                    snapshot.state_epoch,
                    snapshot.leader_epoch,
                    snapshot.start_offset,
                    delivery_complete_count(snapshot.start_offset, snapshot.state_batches),
                    snapshot.state_batches,
                ),
            )

    def ensure_topic(self) -> None:
        """`__share_group_state` created if it does not exist yet (TopicError if it cannot
        be), as a SHARE FindCoordinator lookup creates it."""
        if self._store is not None:
            self._store.topic.ensure()

    def state(self, key: ShareStateKey) -> ShareGroupOffset | None:
        return self._states.get(key)

    def states(self) -> dict[ShareStateKey, ShareGroupOffset]:
        return dict(self._states)

    # ---- the RPCs ------------------------------------------------------------------------

    def initialize(self, key: ShareStateKey, state_epoch: int, start_offset: int) -> None:
        self._check_partition(key)
        if self._state_epochs.get(key, state_epoch) > state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH)
        self._check_exists(key)
        count = 0 if start_offset != UNINITIALIZED_START_OFFSET else -1
        state = ShareGroupOffset(
            self._next_snapshot_epoch(key), state_epoch, DEFAULT_EPOCH, start_offset, count, ()
        )
        self._store_state(key, state)
        self.changed(key, state)

    def read(self, key: ShareStateKey, leader_epoch: int) -> ShareGroupOffset:
        """The state; a higher leader epoch than seen is recorded (written)."""
        self._check_partition(key)
        state = self._states.get(key)
        if state is None:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED)
        self._check_leader_epoch(key, leader_epoch)
        self._check_exists(key)
        if leader_epoch != NOT_WRITTEN and self._leader_epochs.get(key) != leader_epoch:
            log.info("share state %s: read with new leader epoch %d", key, leader_epoch)
            self._store_state(
                key,
                replace(
                    state, leader_epoch=leader_epoch, snapshot_epoch=self._next_snapshot_epoch(key)
                ),
            )
        return state

    def write(self, key: ShareStateKey, write: StateWrite) -> None:
        self._check_partition(key)
        state = self._states.get(key)
        if state is None:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED)
        self._check_leader_epoch(key, write.leader_epoch)
        if write.state_epoch != NOT_WRITTEN and self._state_epochs.get(key, -1) > write.state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH)
        self._check_exists(key)
        new = self._merged(key, state, write)
        self._store_state(key, new)
        self.changed(key, new)

    def delete(self, key: ShareStateKey) -> None:
        self._check_partition(key)
        self._check_exists(key)
        if key in self._states:
            self._store_state(key, None)
            self.changed(key, None)

    def summary(self, key: ShareStateKey) -> ShareGroupOffset:
        self._check_partition(key)
        self._check_exists(key)
        state = self._states.get(key)
        if state is None:
            return ShareGroupOffset(0, DEFAULT_EPOCH, DEFAULT_EPOCH, -1, -1, ())
        return state

    # ---- the partition leader's writes (ShareFetch, ShareAcknowledge, the admin APIs) ----

    def leader_write(
        self, key: ShareStateKey, start_offset: int, batches: tuple[StateBatch, ...]
    ) -> None:
        """The leader's whole state of the share partition: it replaces the stored batches."""
        stored = self._states.get(key)
        state = ShareGroupOffset(
            self._next_snapshot_epoch(key),
            DEFAULT_EPOCH if stored is None else stored.state_epoch,
            DEFAULT_EPOCH if stored is None else stored.leader_epoch,
            start_offset,
            delivery_complete_count(start_offset, batches),
            batches,
        )
        self._store_state(key, state, quiet=True)

    def leader_reset(self, key: ShareStateKey, start_offset: int) -> None:
        """The share partition starts afresh at `start_offset` (AlterShareGroupOffsets)."""
        self.leader_write(key, start_offset, ())

    def leader_delete(self, key: ShareStateKey) -> None:
        if key in self._states:
            self._store_state(key, None, quiet=True)

    # ---- helpers ------------------------------------------------------------------------

    @staticmethod
    def _check_partition(key: ShareStateKey) -> None:
        if key.partition < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)

    def _check_exists(self, key: ShareStateKey) -> None:
        count = self._partition_count(key.topic_id)
        if count is None or key.partition >= count:
            raise ShareStateError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION)

    def _check_leader_epoch(self, key: ShareStateKey, leader_epoch: int) -> None:
        if leader_epoch != NOT_WRITTEN and self._leader_epochs.get(key, -1) > leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH)

    def _next_snapshot_epoch(self, key: ShareStateKey) -> int:
        stored = self._states.get(key)
        return 0 if stored is None else (stored.snapshot_epoch + 1) % SNAPSHOT_EPOCHS

    def _merged(
        self, key: ShareStateKey, state: ShareGroupOffset, write: StateWrite
    ) -> ShareGroupOffset:
        start = state.start_offset if write.start_offset == NOT_WRITTEN else write.start_offset
        update = combine_state_batches((), write.batches, write.start_offset)
        return ShareGroupOffset(
            self._next_snapshot_epoch(key),
            state.state_epoch,
            state.leader_epoch if write.leader_epoch == NOT_WRITTEN else write.leader_epoch,
            start,
            write.delivery_complete_count,
            tuple(combine_state_batches(state.batches, update, start)),
        )

    def _store_state(
        self, key: ShareStateKey, state: ShareGroupOffset | None, *, quiet: bool = False
    ) -> None:
        """Write the state (None: a tombstone), then apply it; ShareStateError if the write
        fails (`quiet`: logged, the state applied all the same)."""
        if self._store is not None:
            error = self._store.write(key, None if state is None else state.snapshot(), _now_ms())
            if error != ErrorCode.NO_ERROR:
                if not quiet:
                    raise ShareStateStoreError(error, _default_message(error))
                log.warning("share state of %s not stored: %s", key, error.name)
        if state is None:
            self._states.pop(key, None)
            self._leader_epochs.pop(key, None)
            self._state_epochs.pop(key, None)
        else:
            self._apply(key, state)

    def _apply(self, key: ShareStateKey, state: ShareGroupOffset) -> None:
        """Kafka's replay of a snapshot: the state, and the highest epochs seen."""
        self._states[key] = state
        self._leader_epochs[key] = max(
            self._leader_epochs.get(key, state.leader_epoch), state.leader_epoch
        )
        self._state_epochs[key] = max(
            self._state_epochs.get(key, state.state_epoch), state.state_epoch
        )


def _default_message(error: ErrorCode) -> str:
    if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
        return "The coordinator is not available."
    if error == ErrorCode.NOT_COORDINATOR:
        return "This is not the correct coordinator."
    return error.name
