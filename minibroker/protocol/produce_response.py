"""A hand-written encoder for Produce responses v0-13, the answer to every produce request.

kafka-python's generic encoder walks the schema for each response; this one writes the few
fields a Produce response has directly (v13: topic ids, 16 bytes, instead of names), byte for
byte what the generic encoder writes (a property test holds them together). A response with
tagged fields set (CurrentLeader, NodeEndpoints or unknown tags) returns None and goes through
the generic encoder. v0 has no throttle time; v2 adds each partition's log append time.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

from minibroker.protocol.varint import encode_uvarint

FIRST_VERSION = 0
_FIRST_THROTTLE_VERSION = 1
_FIRST_LOG_APPEND_TIME_VERSION = 2
LAST_VERSION = 13
_FIRST_FLEXIBLE_VERSION = 9
_FIRST_TOPIC_ID_VERSION = 13
_FIRST_LOG_START_OFFSET_VERSION = 5
_FIRST_RECORD_ERRORS_VERSION = 8

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_V0 = struct.Struct(">ihq")  # index, error_code, base_offset
_PARTITION = struct.Struct(">ihqq")  # ... and log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... and log_start_offset
_INT64 = struct.Struct(">q")
_NO_TAGGED_FIELDS = b"\x00"


class _HasTags(Exception):
    """A struct carries tagged fields: left to the generic encoder."""


def encode_produce_response(response: Any, version: int) -> bytes | None:
    """The response body, or None when the generic encoder must write it."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    writer = _Writer(version)
    try:
        writer.response(response)
    except (_HasTags, AttributeError, TypeError, struct.error, UnicodeEncodeError):
        return None  # the generic encoder answers these as it always did
    return b"".join(writer.parts)


class _Writer:
    def __init__(self, version: int) -> None:
        self.version = version
        self.flexible = version >= _FIRST_FLEXIBLE_VERSION
        self.parts: list[bytes] = []

    def response(self, response: Any) -> None:
        _untagged(response)
        self.length(len(response.responses))
        for topic in response.responses:
            _untagged(topic)
            if self.version >= _FIRST_TOPIC_ID_VERSION:
                self.parts.append(topic.topic_id.bytes)
            else:
                self.string(topic.name)
            self.length(len(topic.partition_responses))
            for partition in topic.partition_responses:
                self.partition(partition)
            self.end_struct()
        if self.version >= _FIRST_THROTTLE_VERSION:
            self.parts.append(_INT32.pack(response.throttle_time_ms))
        self.end_struct()

    def partition(self, partition: Any) -> None:
        _untagged(partition)
        if self.version >= _FIRST_LOG_APPEND_TIME_VERSION:
            self.parts.append(
                _PARTITION.pack(
                    partition.index,
                    partition.error_code,
                    partition.base_offset,
                    partition.log_append_time_ms,
                )
            )
        else:
            self.parts.append(
                _PARTITION_V0.pack(partition.index, partition.error_code, partition.base_offset)
            )
        if self.version >= _FIRST_LOG_START_OFFSET_VERSION:
            self.parts.append(_INT64.pack(partition.log_start_offset))
        if self.version >= _FIRST_RECORD_ERRORS_VERSION:
            self.length(len(partition.record_errors))
            for record_error in partition.record_errors:
                _untagged(record_error)
                self.parts.append(_INT32.pack(record_error.batch_index))
                self.string(record_error.batch_index_error_message)
                self.end_struct()
            self.string(partition.error_message)
        self.end_struct()

    def length(self, count: int) -> None:
        """An array count (never null here)."""
        self.parts.append(encode_uvarint(count + 1) if self.flexible else _INT32.pack(count))

    def string(self, text: str | None) -> None:
        if text is None:
            self.parts.append(b"\x00" if self.flexible else _INT16.pack(-1))
            return
        data = text.encode()
        self.parts.append(
            encode_uvarint(len(data) + 1) if self.flexible else _INT16.pack(len(data))
        )
        self.parts.append(data)

    def end_struct(self) -> None:
        if self.flexible:
            self.parts.append(_NO_TAGGED_FIELDS)


def _untagged(struct_value: Any) -> None:
    if struct_value.tags or struct_value.unknown_tags:
        raise _HasTags


# (index, error code, base offset, log append time, log start offset, error message)
PartitionAnswer = tuple[int, int, int, int, int, str | None]


def encode_produce_answers(
    version: int, topics: Sequence[tuple[str, uuid.UUID, Sequence[PartitionAnswer]]]
) -> bytes | None:
    """The body `encode_produce_response` writes for a response of these topics (name, id)
    and partitions, with no record errors, no tagged fields and no throttle: what nearly
    every produce request gets, written without building the response objects first. None
    when the generic encoder must write it (as `encode_produce_response` answers)."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    flexible = version >= _FIRST_FLEXIBLE_VERSION
    end = _NO_TAGGED_FIELDS if flexible else b""
    parts = [_count(len(topics), flexible)]
    try:
        for name, topic_id, partitions in topics:
            if version >= _FIRST_TOPIC_ID_VERSION:
                parts.append(topic_id.bytes)
            else:
                parts.append(_string(name, flexible))
            parts.append(_count(len(partitions), flexible))
            for index, error, base_offset, append_time, log_start, message in partitions:
                if version >= _FIRST_LOG_START_OFFSET_VERSION:
                    parts.append(
                        _PARTITION_V5.pack(index, error, base_offset, append_time, log_start)
                    )
                elif version >= _FIRST_LOG_APPEND_TIME_VERSION:
                    parts.append(_PARTITION.pack(index, error, base_offset, append_time))
                else:
                    parts.append(_PARTITION_V0.pack(index, error, base_offset))
                if version >= _FIRST_RECORD_ERRORS_VERSION:
                    parts.append(_count(0, flexible))
                    parts.append(_string(message, flexible))
                parts.append(end)
            parts.append(end)
    except (struct.error, UnicodeEncodeError):
        return None
    if version >= _FIRST_THROTTLE_VERSION:
        parts.append(_INT32.pack(0))  # throttle_time_ms
    parts.append(end)
    return b"".join(parts)


def _count(count: int, flexible: bool) -> bytes:
    return encode_uvarint(count + 1) if flexible else _INT32.pack(count)


def _string(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return b"\x00" if flexible else _INT16.pack(-1)
    data = text.encode()
    return (encode_uvarint(len(data) + 1) if flexible else _INT16.pack(len(data))) + data
