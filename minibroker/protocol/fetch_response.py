"""The Fetch response (v0-18) framed by hand around stored record bytes.

The codec would copy every partition's records into one new buffer; here the frame is a list
of parts, the small encoded fields as bytes and each partition's records as they were given
(bytes, or any sized object that the connection knows how to send, such as a file region),
so the stored bytes are never copied. The encoding is the codec's, byte for byte (v12+ are
flexible versions: compact lengths, tagged fields, header v1); tests compare the two.

Version notes: v0 has no throttle time (v1+); v0-3 partitions carry only index, error, high
watermark and records (v4 adds the last stable offset and aborted transactions, v5 the log
start offset); topics are named up to v12 and go by topic id from v13. A partition's
CurrentLeader (tag 1) is written when given (Kafka sets it from v16 for NOT_LEADER_OR_FOLLOWER
and FENCED_LEADER_EPOCH), as are the response's NodeEndpoints (tag 0, v16+).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence, Sized
from dataclasses import dataclass
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.varint import encode_uvarint

FIRST_THROTTLE_VERSION = 1
FIRST_TRANSACTIONAL_VERSION = 4
FIRST_FLEXIBLE_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
FIRST_NODE_ENDPOINTS_VERSION = 16
_CURRENT_LEADER_TAG = 1
_NODE_ENDPOINTS_TAG = 0
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">ii")  # frame size, correlation id
_TOP_V7 = struct.Struct(">ihi")  # throttle time, error code, session id
_PARTITION_V0 = struct.Struct(">ihq")  # index, error code, high watermark
_PARTITION = struct.Struct(">ihqqq")  # index, error code, high watermark, LSO, log start
_ABORTED_TXN = struct.Struct(">qq")  # producer id, first offset
_LEADER = struct.Struct(">ii")  # leader id, leader epoch
_NO_TAGGED_FIELDS = b"\x00"

ResponsePart = bytes | Sized
_Topic = struct_type(ApiKey.Fetch, "response", "FetchableTopicResponse")
_Partition = struct_type(ApiKey.Fetch, "response", "FetchableTopicResponse", "PartitionData")
_AbortedTxn = struct_type(
    ApiKey.Fetch, "response", "FetchableTopicResponse", "PartitionData", "AbortedTransaction"
)
_CurrentLeader = struct_type(
    ApiKey.Fetch, "response", "FetchableTopicResponse", "PartitionData", "LeaderIdAndEpoch"
)
_NodeEndpoint = struct_type(ApiKey.Fetch, "response", "NodeEndpoint")


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    index: int
    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None  # (producer id, first offset); None: null
    records: ResponsePart
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch); v12+, tagged


@dataclass(frozen=True, slots=True)
class FetchedTopic:
    name: str  # written v4-12
    topic_id: uuid.UUID  # written v13+
    partitions: Sequence[FetchedPartition]


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


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
            self.current += encode_uvarint(0 if length is None else length + 1)
        else:
            self.current += _INT32.pack(-1 if length is None else length)

    def string(self, value: str | None) -> None:
        encoded = b"" if value is None else value.encode()
        length = None if value is None else len(encoded)
        if self.flexible:
            self.current += encode_uvarint(0 if length is None else length + 1)
        else:
            self.current += struct.pack(">h", -1 if length is None else length)
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
    topics: Sequence[FetchedTopic],
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> list[ResponsePart]:
    """The whole response frame (size, header, body) as parts to write in order; throttle time
    is 0, the preferred read replica -1. `node_endpoints` are written from v16."""
    writer = _Writer(version)
    writer.tagged_fields()  # response header v1 (flexible versions)
    if version >= 7:
        writer.current += _TOP_V7.pack(0, error, session_id)
    elif version >= FIRST_THROTTLE_VERSION:
        writer.current += _INT32.pack(0)
    writer.array_length(len(topics))
    for topic in topics:
        if version >= FIRST_TOPIC_ID_VERSION:
            writer.current += topic.topic_id.bytes
        else:
            writer.string(topic.name)
        writer.array_length(len(topic.partitions))
        for partition in topic.partitions:
            _partition(writer, partition)
        writer.tagged_fields()
    if version >= FIRST_NODE_ENDPOINTS_VERSION and node_endpoints:
        writer.current += b"\x01" + encode_uvarint(_NODE_ENDPOINTS_TAG)
        writer.current += _tagged_value(_node_endpoints(node_endpoints))
    else:
        writer.tagged_fields()
    parts = writer.finish()
    header = _HEADER.pack(writer.size + 4, correlation_id)
    if parts and isinstance(parts[0], bytes):
        parts[0] = header + parts[0]
    else:
        parts.insert(0, header)
    return parts


def _tagged_value(data: bytes) -> bytes:
    return encode_uvarint(len(data)) + data


def _node_endpoints(endpoints: Sequence[NodeEndpoint]) -> bytes:
    writer = _Writer(FIRST_NODE_ENDPOINTS_VERSION)
    writer.array_length(len(endpoints))
    for endpoint in endpoints:
        writer.current += _INT32.pack(endpoint.node_id)
        writer.string(endpoint.host)
        writer.current += _INT32.pack(endpoint.port)
        writer.string(endpoint.rack)
        writer.tagged_fields()
    return bytes(writer.current)


def _partition(writer: _Writer, partition: FetchedPartition) -> None:
    if writer.version < FIRST_TRANSACTIONAL_VERSION:
        writer.current += _PARTITION_V0.pack(
            partition.index, partition.error, partition.high_watermark
        )
        writer.records(partition.records)
        return
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
    if writer.flexible and partition.current_leader is not None:
        leader = _LEADER.pack(*partition.current_leader) + _NO_TAGGED_FIELDS
        writer.current += b"\x01" + encode_uvarint(_CURRENT_LEADER_TAG) + _tagged_value(leader)
    else:
        writer.tagged_fields()


def fetch_response_message(
    version: int,
    error: ErrorCode,
    topics: Sequence[FetchedTopic],
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> Any:
    """The same response as a codec message (records must be bytes here)."""
    endpoints = [
        _NodeEndpoint(node_id=e.node_id, host=e.host, port=e.port, rack=e.rack)
        for e in node_endpoints
    ]
    return new_response(
        ApiKey.Fetch,
        version,
        throttle_time_ms=0,
        error_code=error,
        session_id=session_id,
        responses=[
            _Topic(
                topic=topic.name,
                topic_id=topic.topic_id,
                partitions=[_partition_message(p) for p in topic.partitions],
            )
            for topic in topics
        ],
        node_endpoints=endpoints if version >= FIRST_NODE_ENDPOINTS_VERSION else [],
    )


def _partition_message(partition: FetchedPartition) -> Any:
    aborted = partition.aborted_transactions
    leader = partition.current_leader
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
        current_leader=None
        if leader is None
        else _CurrentLeader(leader_id=leader[0], leader_epoch=leader[1]),
    )
