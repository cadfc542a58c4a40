"""Kafka's transaction index: `<base offset>.txnindex`, the aborted transactions of a segment.

One 34-byte entry per transaction whose ABORT marker lies in the segment (`AbortedTxn.java`):

    version             int16  0
    producer_id         int64
    first_offset        int64  the transaction's first batch (possibly in an older segment)
    last_offset         int64  the ABORT marker
    last_stable_offset  int64  the partition's last stable offset right after the marker

Entries are in marker order. read_committed fetches list the aborted transactions that
overlap the fetched range (`TransactionIndex.collectAbortedTxns`); truncation drops entries
whose marker is cut off. `rebuild_aborted_txns` recomputes the entries from the batches
themselves, as Kafka does when it recovers a segment.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from minibroker.records.batch import BatchHeader, Buffer
from minibroker.records.control import read_end_txn_marker

from .blob import Blob
from .index import CorruptIndexError

ABORTED_TXN = struct.Struct(
    ">h"  # version
    "q"  # producer_id
    "q"  # first_offset
    "q"  # last_offset
    "q"  # last_stable_offset
)
ABORTED_TXN_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return ABORTED_TXN.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex:
    def __init__(self, blob: Blob, base_offset: int) -> None:
        self.blob = blob
        self.base_offset = base_offset
        self._last_offset: int | None = None
        self._unflushed = False

    def _raw_entries(self) -> Iterator[tuple[int, int, int, int, int]]:
        size = self.blob.size - self.blob.size % ABORTED_TXN.size
        return ABORTED_TXN.iter_unpack(self.blob.read_at(size, 0))

    def entries(self) -> Iterator[AbortedTxn]:
        for version, *fields in self._raw_entries():
            if version != ABORTED_TXN_VERSION:
                raise CorruptIndexError(f"unexpected aborted transaction version {version}")
            yield AbortedTxn(*fields)

    def append(self, txn: AbortedTxn) -> None:
        last = self._last_offset
        if last is None:
            last = max((entry.last_offset for entry in self.entries()), default=-1)
        if txn.last_offset <= last:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset {last}"
            )
        self.blob.write_at(txn.encode(), self.blob.size)
        self._last_offset = txn.last_offset
        self._unflushed = True

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping [fetch_offset, upper_bound_offset), and whether
        the search is complete (a later segment cannot hold more)."""
        found = []
        for version, producer_id, first, last, last_stable in self._raw_entries():
            if version != ABORTED_TXN_VERSION:
                raise CorruptIndexError(f"unexpected aborted transaction version {version}")
            if last >= fetch_offset and first < upper_bound_offset:
                found.append(AbortedTxn(producer_id, first, last, last_stable))
            if last_stable >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose marker is at or after `offset`."""
        position = 0
        for txn in self.entries():
            if txn.last_offset >= offset:
                break
            position += ABORTED_TXN.size
        if position < self.blob.size:
            self.blob.truncate(position)
            self._unflushed = True
        self._last_offset = None

    def reset(self, txns: Iterable[AbortedTxn] = ()) -> None:
        """Replace the entries with `txns` (a missing file stays missing if there are none)."""
        if self.blob.exists():
            self.blob.truncate(0)
        self._last_offset = None
        self._unflushed = True
        for txn in txns:
            self.append(txn)

    def check(self) -> None:
        """CorruptIndexError unless the file holds whole entries, each marker in this segment
        or later (Kafka's `TransactionIndex.sanityCheck`)."""
        if self.blob.size % ABORTED_TXN.size:
            raise CorruptIndexError(f"transaction index of {self.blob.size} bytes is torn")
        for txn in self.entries():
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} is less than start offset "
                    f"{self.base_offset}"
                )

    def flush(self) -> None:
        if self._unflushed:
            self.blob.flush()
            self._unflushed = False

    def delete(self) -> None:
        self.blob.delete()


class AbortedTxnTracker:
    """Replays batch headers in log order and answers the aborted transactions their markers
    close, with the last stable offset after each (what the produce path indexes)."""

    def __init__(self) -> None:
        self._ongoing: dict[int, int] = {}

    def on_batch(self, header: BatchHeader, batch: Buffer | None) -> AbortedTxn | None:
        """`batch` (the whole stored batch) is needed for control batches only."""
        if header.producer_id < 0 or not header.is_transactional:
            return None
        if not header.is_control:
            self._ongoing.setdefault(header.producer_id, header.base_offset)
            return None
        marker = None if batch is None else read_end_txn_marker(header, batch)
        if marker is None:
            return None
        first_offset = self._ongoing.pop(header.producer_id, None)
        if first_offset is None or marker.commit:
            return None
        last_stable = min(self._ongoing.values(), default=header.base_offset + 1)
        return AbortedTxn(header.producer_id, first_offset, header.base_offset, last_stable)
