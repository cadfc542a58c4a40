"""Down-conversion of stored v2 batches to legacy message sets for Fetch v0-3.

As Kafka 3.x's `LazyDownConversionRecords` and `RecordsUtil.downConvert` did for fetchers
older than message format v2 (magic 0 for Fetch v0-1, magic 1 for Fetch v2-3):
- control batches are dropped (transactional data, aborted or not, is served: these
  fetchers read uncommitted); headers, producer ids and leader epochs are dropped;
- each record keeps its absolute offset, key and value; v1 keeps its timestamp and a
  LogAppendTime batch's append time (with the LogAppendTime bit), v0 has none;
- an uncompressed batch becomes one message per record, leaving out records before the
  fetch offset; a compressed batch becomes one wrapper message in the same codec holding
  all its records (v1 inner offsets relative, v0 absolute, v0 lz4 with KAFKA-3160's header);
- a zstd batch cannot be converted: if it is the first batch with records to convert the
  whole partition is refused (`UnsupportedDownConversion`, UNSUPPORTED_COMPRESSION_TYPE),
  else the converted data ends before it and the consumer meets the error on its next fetch.

The answer's size is Kafka's: the larger of the stored bytes read and the first converted
batch, so a first batch that grows is still sent whole. Converted data beyond that size is
cut (the client sees a partial last message and fetches it again); converted data short of it
is followed by an "overflow" entry (offset -1 and a length reaching past the end), which the
clients skip. Stored data that converts to nothing but is not empty answers a lone 12-byte
overflow entry, as Kafka. Kafka writes the padding in 128 KiB chunks, each with an overflow
header; here one header and zeros: the same up to the first header, which is all a client
reads.
"""

from __future__ import annotations

import struct

from minibroker.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    Buffer,
    split_batches,
)
from minibroker.records.compression import NONE, ZSTD
from minibroker.records.legacy import LegacyInput, build_message_set
from minibroker.records.records import DEFAULT_MAX_DECOMPRESSED_BYTES, iter_records

_OVERFLOW = struct.Struct(">qi")  # offset -1, a length past the end


class UnsupportedDownConversion(Exception):
    """The first batch to convert is zstd-compressed: Kafka answered the partition
    UNSUPPORTED_COMPRESSION_TYPE."""


def down_convert(
    stored: Buffer,
    to_magic: int,
    fetch_offset: int,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """The legacy message set a Fetch v0-3 answers for `stored` (whole v2 batches)."""
    converted: list[bytes] = []
    for batch in split_batches(stored):
        header = BatchHeader.parse(batch)
        if header.is_control:
            continue
        if header.compression == ZSTD:
            if not converted:
                raise UnsupportedDownConversion(
                    "Down-conversion of zstandard-compressed batches is not supported"
                )
            break
        messages = _convert_batch(batch, header, to_magic, fetch_offset, max_decompressed_bytes)
        if messages:
            converted.append(messages)
    return _sized(converted, len(stored))


def _convert_batch(
    batch: memoryview, header: BatchHeader, to_magic: int, fetch_offset: int, max_bytes: int
) -> bytes:
    records: list[LegacyInput] = [
        (record.offset, record.timestamp, record.key, record.value)
        for record in iter_records(batch, max_decompressed_bytes=max_bytes)
        if header.compression != NONE or record.offset >= fetch_offset
    ]
    log_append_time = (
        header.max_timestamp if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME else None
    )
    return build_message_set(
        records, to_magic, codec=header.compression, log_append_time=log_append_time
    )


def _sized(converted: list[bytes], stored_size: int) -> bytes:
    if not converted:
        return _overflow(LOG_OVERHEAD, LOG_OVERHEAD) if stored_size else b""
    size = max(stored_size, len(converted[0]))
    data = b"".join(converted)
    if len(data) >= size:
        return data[:size]
    return data + _overflow(size - len(data), size - len(data))


def _overflow(length: int, remaining: int) -> bytes:
    """Kafka's overflow entry, cut or zero-padded to `length` bytes."""
    entry = _OVERFLOW.pack(-1, max(remaining + 1, HEADER_SIZE))
    return (entry + bytes(max(0, length - len(entry))))[:length]
