"""A hand-written decoder for Produce requests v0-13 that leaves the records in the frame.

kafka-python's generated decoder copies every partition's records into a `bytes`; on the
produce path that is a copy of nearly the whole request. This decoder builds the same request
objects (the generated classes, the same attributes) but each `records` is a `memoryview`
slice of the frame, so validation reads it where it arrived and the log can stamp the base
offset into it before writing it out.

v0-2 are v3 without the transactional id (None here, as the generated decoder leaves it).
v13 names topics by topic id (a UUID) instead of by name; as the generated decoder, such a
topic has `name` "" and the other versions' topics have `topic_id` None. It only takes the plain
shape: anything it does not expect (tagged fields, null arrays or
names, lengths running past the frame, invalid UTF-8) returns None, and the caller decodes
with the generic decoder, which then answers exactly as it always does.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeAlias

from kafka.protocol.producer.produce import ProduceRequest

from minibroker.records.accel import pure_python_forced

FIRST_VERSION = 0
_FIRST_TRANSACTIONAL_VERSION = 3
LAST_VERSION = 13
_FIRST_FLEXIBLE_VERSION = 9
_FIRST_TOPIC_ID_VERSION = 13

_REQUEST: Any = ProduceRequest
_TOPIC: Any = ProduceRequest.TopicProduceData
_PARTITION: Any = ProduceRequest.TopicProduceData.PartitionProduceData
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_ACKS_AND_TIMEOUT = struct.Struct(">hi")


Walked: TypeAlias = tuple[
    str | None, int, int, list[tuple[str | None, bytes | None, list[tuple[int, int, int]]]], int
]
"""What the C walk answers: (transactional_id, acks, timeout_ms, topics, end), each topic
(name, topic id, partitions), each partition (index, start, stop) of its records in the frame
(start -1: null records)."""


def _load_walk() -> Callable[[memoryview, int, int], Walked | None] | None:
    """The C accelerator's walk of the same plain shape (None for anything else), unless it
    was not built or MINIBROKER_PURE_PYTHON is set."""
    if pure_python_forced():
        return None
    try:
        from minibroker.protocol._accel import walk_produce
    except ImportError:
        return None
    return walk_produce


native_walk = _load_walk()


class _NotPlain(Exception):
    """The request has a shape this decoder leaves to the generic one."""


def decode_produce_request(frame: memoryview, pos: int, version: int) -> tuple[Any, int] | None:
    """(request, end position) or None when the generic decoder must take this frame."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        return None
    if (
        native_walk is not None
        and version >= _FIRST_TRANSACTIONAL_VERSION
        and (walked := native_walk(frame, pos, version)) is not None
    ):
        return _built(frame, walked, version)
    reader = _Reader(frame, pos, flexible=version >= _FIRST_FLEXIBLE_VERSION)
    try:
        request = _read_request(reader, version)
    except (_NotPlain, IndexError, struct.error, UnicodeDecodeError):
        return None
    return request, reader.pos


def _new(cls: Any, version: int) -> Any:
    """An instance as kafka-python's generated decoder makes it (no __init__, no defaults)."""
    obj = object.__new__(cls)
    obj._version = version
    obj.tags = None
    obj.unknown_tags = None
    return obj


def _built(frame: memoryview, walked: Walked, version: int) -> tuple[Any, int]:
    """The request objects `_read_request` makes, from the C walk's answer."""
    transactional_id, acks, timeout_ms, topics, end = walked
    request = _new(_REQUEST, version)
    request.transactional_id = transactional_id
    request.acks = acks
    request.timeout_ms = timeout_ms
    request.topic_data = []
    for name, topic_id, partitions in topics:
        topic = _new(_TOPIC, version)
        topic.name = "" if name is None else name
        topic.topic_id = None if topic_id is None else uuid.UUID(bytes=topic_id)
        topic.partition_data = []
        for index, start, stop in partitions:
            partition = _new(_PARTITION, version)
            partition.index = index
            partition.records = None if start < 0 else frame[start:stop]
            topic.partition_data.append(partition)
        request.topic_data.append(topic)
    return request, end


def _read_request(reader: _Reader, version: int) -> Any:
    request = _new(_REQUEST, version)
    if version >= _FIRST_TRANSACTIONAL_VERSION:
        request.transactional_id = reader.string(nullable=True)
    else:
        request.transactional_id = None
    request.acks, request.timeout_ms = reader.acks_and_timeout()
    request.topic_data = [_read_topic(reader, version) for _ in range(reader.array_length())]
    reader.no_tagged_fields()
    return request


def _read_topic(reader: _Reader, version: int) -> Any:
    topic = _new(_TOPIC, version)
    if version >= _FIRST_TOPIC_ID_VERSION:
        topic.name = ""
        topic.topic_id = reader.uuid()
    else:
        topic.name = reader.string(nullable=False)
        topic.topic_id = None
    topic.partition_data = [_read_partition(reader, version) for _ in range(reader.array_length())]
    reader.no_tagged_fields()
    return topic


def _read_partition(reader: _Reader, version: int) -> Any:
    partition = _new(_PARTITION, version)
    partition.index = reader.int32()
    partition.records = reader.records()
    reader.no_tagged_fields()
    return partition


class _Reader:
    def __init__(self, frame: memoryview, pos: int, *, flexible: bool) -> None:
        self.frame = frame
        self.pos = pos
        self.flexible = flexible

    def int32(self) -> int:
        (value,) = _INT32.unpack_from(self.frame, self.pos)
        self.pos += 4
        return int(value)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def acks_and_timeout(self) -> tuple[int, int]:
        acks, timeout_ms = _ACKS_AND_TIMEOUT.unpack_from(self.frame, self.pos)
        self.pos += _ACKS_AND_TIMEOUT.size
        return acks, timeout_ms

    def _uvarint(self) -> int:
        byte = self.frame[self.pos]
        if byte < 0x80:  # nearly every length, count and tag count in a Produce request
            self.pos += 1
            return byte
        value = 0
        for shift in range(0, 35, 7):
            byte = self.frame[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise _NotPlain

    def _length(self, classic: struct.Struct) -> int:
        """A length (or count) as this version encodes it; -1 for null."""
        if self.flexible:
            return self._uvarint() - 1
        (length,) = classic.unpack_from(self.frame, self.pos)
        self.pos += classic.size
        return int(length)

    def _take(self, length: int) -> memoryview:
        end = self.pos + length
        if end > len(self.frame):
            raise _NotPlain
        data = self.frame[self.pos : end]
        self.pos = end
        return data

    def string(self, *, nullable: bool) -> str | None:
        length = self._length(_INT16)
        if length < 0:
            if nullable:
                return None
            raise _NotPlain
        return str(self._take(length), "utf-8")

    def array_length(self) -> int:
        length = self._length(_INT32)
        if length < 0:
            raise _NotPlain
        return length

    def records(self) -> memoryview | None:
        length = self._length(_INT32)
        return None if length < 0 else self._take(length)

    def no_tagged_fields(self) -> None:
        if self.flexible and self._uvarint() != 0:
            raise _NotPlain
