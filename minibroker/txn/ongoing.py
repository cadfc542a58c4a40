"""A partition's open transactions and its last stable offset.

Kafka's `ProducerStateManager.ongoingTxns`: producer id -> offset of the transaction's first
batch. A transaction starts with its producer's first transactional batch on the partition and
ends with the COMMIT/ABORT marker. The first offset of the oldest one is the partition's first
unstable offset; the last stable offset (LSO) is min(first unstable offset, high watermark),
never below the log start offset (`UnifiedLog.maybeIncrementFirstUnstableOffset`).
"""

from __future__ import annotations

from collections.abc import Mapping


class OngoingTxns:
    def __init__(self) -> None:
        # Insertion order is offset order: transactions begin at the log end, which only grows;
        # `reset` sorts.
        self._first_offsets: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._first_offsets)

    def begin(self, producer_id: int, first_offset: int) -> None:
        """The producer's transaction starts at `first_offset` (no-op if it is already open)."""
        self._first_offsets.setdefault(producer_id, first_offset)

    def complete(self, producer_id: int) -> None:
        self._first_offsets.pop(producer_id, None)

    def reset(self, first_offsets: Mapping[int, int]) -> None:
        ordered = sorted(first_offsets.items(), key=lambda item: item[1])
        self._first_offsets = dict(ordered)

    def first_offset_of(self, producer_id: int) -> int | None:
        return self._first_offsets.get(producer_id)

    @property
    def first_unstable_offset(self) -> int | None:
        return next(iter(self._first_offsets.values()), None)

    def first_offset_excluding(self, producer_id: int) -> int | None:
        """The oldest open transaction's first offset among the other producers' (Kafka's
        `findNextIncompleteTxn`)."""
        for other, first_offset in self._first_offsets.items():
            if other != producer_id:
                return first_offset
        return None

    def last_stable_offset(self, high_watermark: int, log_start_offset: int) -> int:
        if not self._first_offsets:  # (every fetch asks: no property call when none is open)
            return high_watermark
        return min(high_watermark, max(self.first_unstable_offset or 0, log_start_offset))
