"""The Fetch response (v4-12) framed by hand around stored record bytes.

The codec would copy every partition's records into one new buffer; here the frame is a list
of parts, the small encoded fields as bytes and each partition's records as they were given
(bytes, or any sized object that the connection knows how to send, such as a file region),
so the stored bytes are never copied. The encoding is the codec's, byte for byte (v12 is a
flexible version: compact lengths, empty tagged fields, header v1); tests compare the two.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence, Sized
from dataclasses import dataclass
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode

FIRST_FLEXIBLE_VERSION = 12
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">ii")  # frame size, correlation id
_TOP_V7 = struct.Struct(">ihi")  # throttle time, error code, session id
_PARTITION = struct.Struct(">ihqqq")  # index, error code, high watermark, LSO, log start
_ABORTED_TXN = struct.Struct(">qq")  # producer id, first offset
_NO_TAGGED_FIELDS = b"\x00"

ResponsePart = bytes | Sized
_Topic = struct_type(ApiKey.Fetch, "response", "FetchableTopicResponse")
_Partition = struct_type(ApiKey.Fetch, "response", "FetchableTopicResponse", "PartitionData")
_AbortedTxn = struct_type(
    ApiKey.Fetch, "response", "FetchableTopicResponse", "PartitionData", "AbortedTransaction"
)


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    index: int
    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None  # (producer id, first offset); None: null
    records: ResponsePart


def _unsigned_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _Writer:
    """Fields into the current bytes part; records become parts of their own."""

    def __init__(self, version: int) -> None:
        self.flexible = version >= FIRST_FLEXIBLE_VERSION
        self.version = version
        self.parts: list[ResponsePart] = []
        self.current = bytearray()
        self.size = 0

    def array_length(self, length: int | None) -> None:
        if self.flexible:
            self.current += _unsigned_varint(0 if length is None else length + 1)
        else:
            self.current += _INT32.pack(-1 if length is None else length)

    def string(self, value: str) -> None:
        encoded = value.encode()
        if self.flexible:
            self.current += _unsigned_varint(len(encoded) + 1)
        else:
            self.current += struct.pack(">h", len(encoded))
        self.current += encoded

    def tagged_fields(self) -> None:
        if self.flexible:
            self.current += _NO_TAGGED_FIELDS

    def records(self, records: ResponsePart) -> None:
        self.array_length(len(records))
        if len(records):
            self._close_current()
            self.parts.append(records)
            self.size += len(records)

    def _close_current(self) -> None:
        if self.current:
            self.parts.append(bytes(self.current))
            self.size += len(self.current)
            self.current = bytearray()

    def finish(self) -> list[ResponsePart]:
        self._close_current()
        return self.parts


def encode_fetch_response(
    version: int,
    correlation_id: int,
    error: ErrorCode,
    topics: Sequence[tuple[str, Sequence[FetchedPartition]]],
) -> list[ResponsePart]:
    """The whole response frame (size, header, body) as parts to write in order; throttle time
    and session id are 0, the preferred read replica -1."""
    writer = _Writer(version)
    writer.tagged_fields()  # response header v1 (flexible versions)
    writer.current += _TOP_V7.pack(0, error, 0) if version >= 7 else _INT32.pack(0)
    writer.array_length(len(topics))
    for name, partitions in topics:
        writer.string(name)
        writer.array_length(len(partitions))
        for partition in partitions:
            _partition(writer, partition)
        writer.tagged_fields()
    writer.tagged_fields()
    parts = writer.finish()
    header = _HEADER.pack(writer.size + 4, correlation_id)
    if parts and isinstance(parts[0], bytes):
        parts[0] = header + parts[0]
    else:
        parts.insert(0, header)
    return parts


def _partition(writer: _Writer, partition: FetchedPartition) -> None:
    fields = _PARTITION.pack(
        partition.index,
        partition.error,
        partition.high_watermark,
        partition.last_stable_offset,
        partition.log_start_offset,
    )
    writer.current += fields if writer.version >= 5 else fields[:-8]
    aborted = partition.aborted_transactions
    writer.array_length(None if aborted is None else len(aborted))
    for producer_id, first_offset in aborted or ():
        writer.current += _ABORTED_TXN.pack(producer_id, first_offset)
        writer.tagged_fields()
    if writer.version >= 11:
        writer.current += _INT32.pack(-1)
    writer.records(partition.records)
    writer.tagged_fields()


def fetch_response_message(
    version: int,
    error: ErrorCode,
    topics: Sequence[tuple[str, Sequence[FetchedPartition]]],
) -> Any:
    """The same response as a codec message (records must be bytes here)."""
    return new_response(
        ApiKey.Fetch,
        version,
        throttle_time_ms=0,
        error_code=error,
        session_id=0,
        responses=[
            _Topic(topic=name, partitions=[_partition_message(p) for p in partitions])
            for name, partitions in topics
        ],
    )


def _partition_message(partition: FetchedPartition) -> Any:
    aborted = partition.aborted_transactions
    return _Partition(
        partition_index=partition.index,
        error_code=partition.error,
        high_watermark=partition.high_watermark,
        last_stable_offset=partition.last_stable_offset,
        log_start_offset=partition.log_start_offset,
        aborted_transactions=None
        if aborted is None
        else [_AbortedTxn(producer_id=pid, first_offset=first) for pid, first in aborted],
        preferred_read_replica=-1,
        records=partition.records,
    )
