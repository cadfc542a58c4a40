"""Walking a log's stored batches in offset order, for readers inside the broker (the console,
the testing API) that want records rather than bytes to send."""

from __future__ import annotations

from collections.abc import Iterator

from minibroker.records.batch import HEADER_SIZE, BatchHeader

from .base import SCAN_CHUNK_BYTES, OffsetOutOfRange, PartitionLog


def stored_batches(
    log: PartitionLog, start: int, end: int, chunk_bytes: int = SCAN_CHUNK_BYTES
) -> Iterator[tuple[BatchHeader, bytes]]:
    """(header, batch) of every whole stored batch holding offsets in [start, end), control
    batches included; ends early if retention moves the log start past where it reads."""
    offset = max(start, log.log_start_offset)
    while offset < end:
        try:
            data = log.read(offset, chunk_bytes, end)
        except OffsetOutOfRange:
            return
        before, pos = offset, 0
        while pos + HEADER_SIZE <= len(data):
            header = BatchHeader.parse(data, pos)
            yield header, data[pos : pos + header.size]
            pos += header.size
            offset = max(offset, header.last_offset + 1)
        if offset == before:  # no whole batch in what was read
            return
