"""Combining share-partition state batches, as Kafka 4.3's share coordinator does
(`PersisterStateBatchCombiner`): what a WriteShareGroupState's batches do to the stored ones.

The stored batches and the new ones are taken together. With a start offset (not -1), batches
ending before it go and a batch across it is cut to start there. Then, in offset order (first
offset, last offset, delivery count, delivery state), two neighbours are merged while one
overlaps the next or they are contiguous with the same delivery state and count:

- same delivery state and count: one batch covering both;
- otherwise the offsets both cover keep the batch with the greater delivery information
  (delivery count, then delivery state), and the rest of the other batch stays as it was.

So a write never loses offsets another write recorded (a later write with a higher start
offset still keeps the batches above it), and a redelivery (higher count) wins over an older
state of the same offsets whichever arrives first.
"""

from __future__ import annotations

from collections.abc import Iterable

from minibroker.groups.share.state_records import StateBatch

UNINITIALIZED_START_OFFSET = -1


def combine_state_batches(
    so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> list[StateBatch]:
    batches = _pruned([*so_far, *new], start_offset)
    if len(batches) < 2:
        return batches
    return _merged(batches)


def _pruned(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    if start_offset == UNINITIALIZED_START_OFFSET:
        return batches
    kept = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = _span(batch, start_offset, batch.last_offset)
        kept.append(batch)
    return kept


def _order(batch: StateBatch) -> tuple[int, int, int, int]:
    return (batch.first_offset, batch.last_offset, batch.delivery_count, batch.delivery_state)


def _info(batch: StateBatch) -> tuple[int, int]:
    return (batch.delivery_count, batch.delivery_state)


def _span(batch: StateBatch, first: int, last: int) -> StateBatch:
    return StateBatch(first, last, batch.delivery_state, batch.delivery_count)


def _sorted(batches: Iterable[StateBatch]) -> list[StateBatch]:
    return sorted(set(batches), key=_order)


def _mergeable(prev: StateBatch, candidate: StateBatch) -> bool:
    overlap = candidate.first_offset <= prev.last_offset
    contiguous = prev.last_offset + 1 == candidate.first_offset
    return overlap or (contiguous and _info(prev) == _info(candidate))


def _merged(batches: list[StateBatch]) -> list[StateBatch]:
    pending = _sorted(batches)
    done: list[StateBatch] = []
    while True:
        index = next(
            (i for i in range(len(pending) - 1) if _mergeable(pending[i], pending[i + 1])), None
        )
        if index is None:
            return done + pending
        done.extend(pending[:index])
        prev, candidate = pending[index], pending[index + 1]
        pending = _sorted([*pending[index + 2 :], *_resolved(prev, candidate)])


def _resolved(prev: StateBatch, candidate: StateBatch) -> list[StateBatch]:
    """The batches replacing two neighbours (`prev` first in order) that overlap or touch."""
    if _info(prev) == _info(candidate):
        return [_span(prev, prev.first_offset, max(prev.last_offset, candidate.last_offset))]
    candidate_wins = _info(candidate) > _info(prev)
    if candidate.first_offset == prev.first_offset:
        if candidate.last_offset == prev.last_offset or candidate_wins:
            return [candidate]
        return [prev, _span(candidate, prev.last_offset + 1, candidate.last_offset)]
    head = _span(prev, prev.first_offset, candidate.first_offset - 1)
    if candidate.last_offset < prev.last_offset:  # prev holds the candidate
        if not candidate_wins:
            return [prev]
        return [head, candidate, _span(prev, candidate.last_offset + 1, prev.last_offset)]
    if not candidate_wins:
        if candidate.last_offset == prev.last_offset:
            return [prev]
        return [prev, _span(candidate, prev.last_offset + 1, candidate.last_offset)]
    return [head, candidate]
