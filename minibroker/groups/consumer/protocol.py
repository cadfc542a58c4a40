"""The embedded consumer protocol of classic groups (Kafka's `ConsumerProtocol`): the
subscription a classic member sends in JoinGroup and the assignment it gets in SyncGroup,
for classic members inside a consumer group and for converting groups between protocols.

ConsumerProtocolSubscription: INT16 version; topics (INT32 count, INT16-length strings);
user data (INT32-length bytes, -1 null); v1+ owned partitions (INT32 count of topic, INT32
partitions); v2+ generation id; v3+ rack id (nullable string).
ConsumerProtocolAssignment: INT16 version; assigned partitions (INT32 count of topic, INT32
partitions); user data. Written at version 0 here (every client reads it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class MalformedConsumerProtocol(ValueError):
    """Bytes that are not a consumer-protocol subscription or assignment."""


@dataclass(frozen=True, slots=True)
class Subscription:
    topics: list[str]
    owned: dict[str, list[int]] = field(default_factory=dict)
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _unpack(self, fmt: struct.Struct) -> int:
        try:
            (value,) = fmt.unpack_from(self.data, self.pos)
        except struct.error as exc:
            raise MalformedConsumerProtocol(str(exc)) from exc
        self.pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._unpack(_INT16)

    def int32(self) -> int:
        return self._unpack(_INT32)

    def string(self) -> str | None:
        size = self.int16()
        if size < 0:
            return None
        return self._take(size).decode("utf-8", errors="replace")

    def bytes_(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else self._take(size)

    def _take(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise MalformedConsumerProtocol("truncated")
        taken = self.data[self.pos : self.pos + size]
        self.pos += size
        return taken

    def count(self) -> int:
        return max(self.int32(), 0)

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def topic_partitions(self) -> dict[str, list[int]]:
        parsed: dict[str, list[int]] = {}
        for _ in range(self.count()):
            topic = self.string() or ""
            parsed[topic] = [self.int32() for _ in range(self.count())]
        return parsed


def parse_subscription(metadata: bytes) -> Subscription:
    reader = _Reader(metadata)
    version = reader.int16()
    topics = [reader.string() or "" for _ in range(reader.count())]
    reader.bytes_()
    owned: dict[str, list[int]] = {}
    rack_id = None
    if version >= 1 and not reader.at_end():
        owned = reader.topic_partitions()
    if version >= 2 and not reader.at_end():
        reader.int32()
    if version >= 3 and not reader.at_end():
        rack_id = reader.string()
    return Subscription(topics, owned, rack_id)


def parse_assignment(data: bytes) -> dict[str, list[int]]:
    if not data:
        return {}
    reader = _Reader(data)
    reader.int16()
    return reader.topic_partitions()


def encode_assignment(assignment: dict[str, list[int]]) -> bytes:
    parts = [_INT16.pack(0), _INT32.pack(len(assignment))]
    for topic, partitions in sorted(assignment.items()):
        name = topic.encode()
        parts.append(_INT16.pack(len(name)) + name + _INT32.pack(len(partitions)))
        parts.extend(_INT32.pack(partition) for partition in sorted(partitions))
    parts.append(_INT32.pack(-1))
    return b"".join(parts)
