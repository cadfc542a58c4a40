"""Delivering records to share-group members (KIP-932): the share partitions of every share
group on this broker, what ShareFetch acquires and ShareAcknowledge settles.

A share partition starts, the first time its group fetches it, at the offset
`share.auto.offset.reset` gives (`latest`, the default: the high watermark; `earliest`: the
log start; `by_duration:<ISO 8601>`: the first batch at or after now minus that duration).
A fetch first hands out records that became AVAILABLE again (released, or their lock
expired), else reads new batches from the log after the last acquired one while fewer than
Kafka's `min(maxFetchRecords, maxInFlightRecords - inFlightRecordsCount)` are acquired: in
batch-optimized mode (the default) whole batches, so a fetch may exceed both limits (Kafka's
soft limit: it acquires through the end of the batch holding the last record allowed); in
record-limit mode (ShareFetch v2 ShareAcquireMode 1) exactly that many, splitting a batch
whose remaining records enter flight AVAILABLE (`partition.py`). The response carries the
stored batches holding the acquired records, as they are on disk. Control batches are
archived as they enter, never delivered; under `share.isolation.level=read_committed` fetches
stop at the last stable offset and the batches of aborted transactions are archived the same
way.

Each share partition's state is written to the share coordinator (`coordinator.py`, kept in
`__share_group_state`) after every change, as a partition leader writes it, and read back at
start: after a restart what was acknowledged or archived stays so, and what was acquired is
available again (acquisition locks are not kept). A change made through the share-coordinator
RPCs (Initialize/Write/DeleteShareGroupState) rebuilds the share partition from the new state
the same way. The share groups' membership is in memory only (`manager.py`).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from minibroker.cluster.state import Partition
from minibroker.groups.group_configs import EffectiveGroupConfig, by_duration_ms
from minibroker.groups.share.coordinator import ShareCoordinator, ShareGroupOffset
from minibroker.groups.share.partition import (
    AcknowledgeError,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    DurableRun,
    RecordState,
    ShareLimits,
    SharePartition,
)
from minibroker.groups.share.sessions import SharePartitionKey, ShareSession
from minibroker.groups.share.state_records import ShareStateKey, StateBatch
from minibroker.log.batch import offset_and_size, parse_header
from minibroker.log.txnindex import AbortedTxn
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader

log = logging.getLogger(__name__)

SharePartitionId = tuple[str, uuid.UUID, int]  # group id, topic id, partition
READ_COMMITTED = "read_committed"
# The most offsets past its start offset a share partition rebuilt from the share
# coordinator's state tracks in flight (state written by WriteShareGroupState may name any
# range); batches beyond are not restored.
MAX_RESTORED_OFFSETS = 100_000


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """What one ShareFetch may still acquire from a partition; `record_limit`: Kafka's
    record-limit acquire mode (MaxRecords is exact, batches are split)."""

    max_records: int
    max_bytes: int
    record_limit: bool = False


@dataclass(frozen=True, slots=True)
class Delivered:
    records: bytes
    acquired: list[AcquiredRange]


def now_ms() -> int:
    return int(time.time() * 1000)


def acknowledgements_of(
    topics: Iterable[Any],
) -> dict[SharePartitionKey, list[AcknowledgementBatch]]:
    """The acknowledgement batches of a ShareFetch or ShareAcknowledge request's topics, per
    partition (partitions without any left out)."""
    found: dict[SharePartitionKey, list[AcknowledgementBatch]] = {}
    for topic in topics:
        for partition in topic.partitions:
            batches = [
                AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                for b in partition.acknowledgement_batches
            ]
            if batches:
                found[(topic.topic_id, partition.partition_index)] = batches
    return found


class ShareDeliveries:
    def __init__(
        self,
        settings: Callable[[str], EffectiveGroupConfig],
        coordinator: ShareCoordinator,
    ) -> None:
        self._settings = settings
        self.coordinator = coordinator
        coordinator.changed = self._state_changed
        self._partitions: dict[SharePartitionId, SharePartition] = {}
        self._saved: dict[SharePartitionId, int] = {}  # the change count last stored

    def load(self) -> None:
        """The share partitions as `__share_group_state` left them."""
        self.coordinator.load()
        for key, state in self.coordinator.states().items():
            self._state_changed(key, state)

    def _state_changed(self, key: ShareStateKey, state: ShareGroupOffset | None) -> None:
        """The share coordinator's state of a share partition changed (or was loaded): the
        share partition is rebuilt from it, nothing acquired; without a start offset it is
        uninitialized (the next fetch starts it from `share.auto.offset.reset`)."""
        ident = (key.group_id, key.topic_id, key.partition)
        share = None if state is None else _leader_view(state, self._settings(key.group_id))
        if share is None:
            self._partitions.pop(ident, None)
            self._saved.pop(ident, None)
        else:
            self._partitions[ident] = share
            self._saved[ident] = share.changes

    def _save(self, key: SharePartitionId, share: SharePartition | None) -> None:
        """Store a share partition's state after a change (None: it was forgotten), as its
        leader writes it to the share coordinator."""
        state_key = ShareStateKey(*key)
        if share is None:
            self._saved.pop(key, None)
            self.coordinator.leader_delete(state_key)
            return
        if self._saved.get(key) == share.changes:
            return
        self._saved[key] = share.changes
        self.coordinator.leader_write(state_key, share.start_offset, _state_batches(share))

    # ---- ShareFetch ------------------------------------------------------------------------

    def acquire(
        self,
        group_id: str,
        member_id: str,
        partition: Partition,
        topic_id: uuid.UUID,
        limits: FetchLimits,
        now: int,
    ) -> Delivered:
        settings = self._settings(group_id)
        share = self._share_partition(group_id, topic_id, partition, settings, now)
        delivered = _acquire(share, member_id, partition, settings, limits, now)
        self._save((group_id, topic_id, partition.index), share)
        return delivered

    # ---- ShareAcknowledge ------------------------------------------------------------------

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic_id: uuid.UUID,
        index: int,
        batches: list[AcknowledgementBatch],
        now: int,
    ) -> None:
        """Apply one partition's acknowledgements (AcknowledgeError if refused)."""
        share = self._partitions.get((group_id, topic_id, index))
        if share is None:
            share = SharePartition(0, _limits(self._settings(group_id)))
        share.expire_locks(now)
        share.acknowledge(member_id, batches, now)
        self._save((group_id, topic_id, index), share)

    def acknowledge_all(
        self,
        group_id: str,
        member_id: str,
        acknowledgements: dict[SharePartitionKey, list[AcknowledgementBatch]],
        renew_allowed: bool,
        now: int,
    ) -> dict[SharePartitionKey, tuple[ErrorCode, str | None]]:
        """Each partition's acknowledgements applied, with its error (NO_ERROR) and message.
        RENEW is INVALID_REQUEST unless the request says it renews (v2 IsRenewAck) and the
        group allows it (`share.renew.acknowledge.enable`)."""
        results: dict[SharePartitionKey, tuple[ErrorCode, str | None]] = {}
        renew_enabled = renew_allowed and self._settings(group_id).share_renew_acknowledge_enable
        for (topic_id, index), batches in acknowledgements.items():
            try:
                if not renew_enabled and _renews(batches):
                    raise AcknowledgeError(
                        ErrorCode.INVALID_REQUEST, "Renew acknowledgements are not enabled."
                    )
                self.acknowledge(group_id, member_id, topic_id, index, batches, now)
            except AcknowledgeError as exc:
                results[(topic_id, index)] = (exc.error, exc.message)
            else:
                results[(topic_id, index)] = (ErrorCode.NO_ERROR, None)
        return results

    # ---- releasing -------------------------------------------------------------------------

    def release(self, session: ShareSession) -> None:
        """The member's share session ended: what it holds on the session's partitions is
        released."""
        for topic_id, index in session.partitions:
            key = (session.group_id, topic_id, index)
            share = self._partitions.get(key)
            if share is not None and share.release_member(session.member_id):
                self._save(key, share)

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member left its share group or was fenced: its records are released on every
        partition of the group."""
        for key, share in self._partitions.items():
            if key[0] == group_id and share.release_member(member_id):
                self._save(key, share)

    def forget_group(self, group_id: str) -> None:
        """The group was deleted: its share partitions go."""
        for key in self._keys(lambda key: key[0] == group_id):
            self._partitions.pop(key, None)
            self._save(key, None)

    # ---- the admin APIs (Describe/Alter/DeleteShareGroupOffsets) ----------------------------

    def partitions_of(self, group_id: str) -> dict[SharePartitionKey, SharePartition]:
        """The group's initialized share partitions, by (topic id, partition)."""
        return {
            (topic_id, index): share
            for (group, topic_id, index), share in self._partitions.items()
            if group == group_id
        }

    def reset_start(self, group_id: str, topic_id: uuid.UUID, index: int, offset: int) -> None:
        """AlterShareGroupOffsets: the share partition starts afresh at `offset` (nothing in
        flight), created if the group never fetched it."""
        share = SharePartition(offset, _limits(self._settings(group_id)))
        self._partitions[(group_id, topic_id, index)] = share
        self._saved[(group_id, topic_id, index)] = share.changes
        self.coordinator.leader_reset(ShareStateKey(group_id, topic_id, index), offset)

    def forget_partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> None:
        """AlterShareGroupOffsets to -1: the share partition is uninitialized again; a later
        fetch starts it from `share.auto.offset.reset`."""
        self._partitions.pop((group_id, topic_id, index), None)
        self._save((group_id, topic_id, index), None)

    def delete_topic_state(self, group_id: str, topic_id: uuid.UUID) -> None:
        """DeleteShareGroupOffsets: the group's share partitions of the topic are forgotten;
        a later fetch initializes them again from `share.auto.offset.reset`."""
        for key in self._keys(lambda key: key[:2] == (group_id, topic_id)):
            self._partitions.pop(key, None)
            self._save(key, None)

    def _keys(self, wanted: Callable[[SharePartitionId], bool]) -> list[SharePartitionId]:
        """The share partitions with state (fetched, or only initialized in the share
        coordinator) that `wanted` picks."""
        stored = [(k.group_id, k.topic_id, k.partition) for k in self.coordinator.states()]
        return [key for key in dict.fromkeys([*self._partitions, *stored]) if wanted(key)]

    # ---- inspection (the testing API) ------------------------------------------------------

    def share_partition(
        self, group_id: str, topic_id: uuid.UUID, index: int
    ) -> SharePartition | None:
        return self._partitions.get((group_id, topic_id, index))

    def expire_locks(self, group_id: str, now: int) -> int:
        """Release every lock of the group's share partitions that expires by `now`."""
        released = 0
        for key, share in self._partitions.items():
            if key[0] == group_id and (count := share.expire_locks(now)):
                released += count
                self._save(key, share)
        return released

    def next_lock_expiry_ms(self, group_id: str) -> int | None:
        deadlines = [
            deadline
            for (group, _, _), share in self._partitions.items()
            if group == group_id and (deadline := share.next_lock_expiry_ms()) is not None
        ]
        return min(deadlines) if deadlines else None

    def _share_partition(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: Partition,
        settings: EffectiveGroupConfig,
        now: int,
    ) -> SharePartition:
        key = (group_id, topic_id, partition.index)
        share = self._partitions.get(key)
        if share is None:
            start = _initial_offset(partition, settings.share_auto_offset_reset, now)
            share = self._partitions[key] = SharePartition(start, _limits(settings))
        else:
            share.limits = _limits(settings)
        return share


def _acquire(
    share: SharePartition,
    member_id: str,
    partition: Partition,
    settings: EffectiveGroupConfig,
    limits: FetchLimits,
    now: int,
) -> Delivered:
    share.expire_locks(now)
    if share.start_offset < partition.log.log_start_offset:
        share.move_start_to(partition.log.log_start_offset)
    read_committed = settings.share_isolation_level == READ_COMMITTED
    upper = partition.last_stable_offset if read_committed else partition.high_watermark
    available = share.available_offsets(limits.max_records)
    if available:
        return _redeliver(share, member_id, partition, available, limits.max_bytes, now)
    if not share.can_acquire_new() or share.end_offset >= upper:
        return Delivered(b"", [])
    aborted = partition.log.collect_aborted_txns(share.end_offset, upper) if read_committed else []
    return _deliver_new(share, member_id, partition, upper, aborted, limits, now)


def _renews(batches: list[AcknowledgementBatch]) -> bool:
    return any(kind == AcknowledgeType.RENEW for batch in batches for kind in batch.types)


def _state_batches(share: SharePartition) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(first, last, int(state), count)
        for first, last, state, count in share.durable_runs()
    )


def _leader_view(state: ShareGroupOffset, settings: EffectiveGroupConfig) -> SharePartition | None:
    """The share partition a leader builds from the coordinator's state: None without a start
    offset; a state other than acknowledged or archived is available."""
    start = state.start_offset
    if start < 0:
        return None
    end = start + max(MAX_RESTORED_OFFSETS, settings.share_partition_max_record_locks)
    runs: list[DurableRun] = [
        (
            max(b.first_offset, start),
            min(b.last_offset, end - 1),
            _durable(b.delivery_state),
            b.delivery_count,
        )
        for b in state.batches
        if b.last_offset >= start and b.first_offset < end and b.first_offset <= b.last_offset
    ]
    return SharePartition.restored(start, runs, _limits(settings))


def _durable(delivery_state: int) -> RecordState:
    if delivery_state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
        return RecordState(delivery_state)
    return RecordState.AVAILABLE


def _limits(settings: EffectiveGroupConfig) -> ShareLimits:
    return ShareLimits(
        delivery_count_limit=settings.share_delivery_count_limit,
        max_in_flight=settings.share_partition_max_record_locks,
        lock_duration_ms=settings.share_record_lock_duration_ms,
        renew_enabled=settings.share_renew_acknowledge_enable,
    )


def _initial_offset(partition: Partition, reset: str, now: int) -> int:
    if reset == "earliest":
        return partition.log.log_start_offset
    duration = by_duration_ms(reset)
    if duration is None:
        return partition.high_watermark
    found = partition.log.batch_for_timestamp(now - duration)
    return partition.high_watermark if found is None else parse_header(found).base_offset


def _batches(data: bytes) -> Iterator[tuple[BatchHeader, int, int]]:
    """(header, start, end) of each whole batch in `data`."""
    position = 0
    while position < len(data):
        _, size = offset_and_size(data, position)
        yield parse_header(data, position), position, position + size
        position += size


def _redeliver(
    share: SharePartition,
    member_id: str,
    partition: Partition,
    available: list[int],
    max_bytes: int,
    now: int,
) -> Delivered:
    data = partition.log.read(available[0], max_bytes, available[-1] + 1)
    wanted = set(available)
    chosen: list[int] = []
    kept: list[bytes] = []
    for header, start, end in _batches(data):
        inside = [o for o in range(header.base_offset, header.last_offset + 1) if o in wanted]
        if inside:
            chosen.extend(inside)
            kept.append(data[start:end])
    share.acquire(member_id, chosen, now)
    return Delivered(b"".join(kept), share.acquired_ranges(chosen))


def _deliver_new(
    share: SharePartition,
    member_id: str,
    partition: Partition,
    upper: int,
    aborted: list[AbortedTxn],
    limits: FetchLimits,
    now: int,
) -> Delivered:
    data = partition.log.read(share.end_offset, limits.max_bytes, upper)
    acquired: list[int] = []
    kept: list[bytes] = []
    for header, start, end in _batches(data):
        allowed = min(limits.max_records - len(acquired), share.room)
        if allowed <= 0:
            break
        first = max(header.base_offset, share.end_offset)
        if header.last_offset < first:
            continue
        if header.is_control or _is_aborted(header, aborted):
            share.archive_new(first, header.last_offset)
            continue
        last = header.last_offset
        if limits.record_limit:
            last = min(last, first + allowed - 1)
        share.acquire_new(member_id, first, header.last_offset, now, last)
        acquired.extend(range(first, last + 1))
        kept.append(data[start:end])
    return Delivered(b"".join(kept), share.acquired_ranges(acquired))


def _is_aborted(header: BatchHeader, aborted: list[AbortedTxn]) -> bool:
    return header.is_transactional and any(
        txn.producer_id == header.producer_id
        and txn.first_offset <= header.base_offset <= txn.last_offset
        for txn in aborted
    )
