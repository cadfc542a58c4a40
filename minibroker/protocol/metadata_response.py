"""Metadata responses with many topics: each topic entry's bytes are kept and reused.

A Metadata answer for every topic is the largest response most brokers send again and again
(clients refresh it every `metadata.max.age.ms` and after every leader change); with 10,000
partitions kafka-python's generic encoder took tens of milliseconds per answer. The handler
keeps one entry object per topic while the topic's partitions stay as they were
(handlers/metadata.py); here each entry's bytes are kept by the entry's identity, so an
unchanged topic is not encoded again. Everything else goes through the generic encoder: the
response with an empty topic array is encoded, and the topics' bytes spliced in where that
array is (an array is its length followed by its items' bytes). The result is byte for byte
what the generic encoder writes for the whole response (a property test holds them together).
"""

from __future__ import annotations

import functools
import struct
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.varint import encode_uvarint

# Fewer topics than this: the generic encoder alone is as fast.
MIN_TOPICS = 8
_FIRST_FLEXIBLE_VERSION = 9
_CLUSTER_OPERATIONS_VERSIONS = range(8, 11)
_FIRST_TOP_LEVEL_ERROR_VERSION = 13
_MAX_CACHED = 200_000
_INT32 = struct.Struct(">i")

# id(entry) -> (entry, version, bytes); the entry is held so that its id is not reused.
_encoded_topics: dict[int, tuple[Any, int, bytes]] = {}


@functools.cache
def _topics_field() -> Any:
    """The response's topic array field (codec imports this module, hence the late import)."""
    from minibroker.protocol.codec import struct_type

    return struct_type(ApiKey.Metadata, "response", "MetadataResponseTopic")._struct


def _suffix_length(version: int) -> int:
    """Bytes after the topic array: cluster operations (v8-10), error code (v13+), tags."""
    return (
        (4 if version in _CLUSTER_OPERATIONS_VERSIONS else 0)
        + (2 if version >= _FIRST_TOP_LEVEL_ERROR_VERSION else 0)
        + (1 if version >= _FIRST_FLEXIBLE_VERSION else 0)
    )


def _array_length(count: int, flexible: bool) -> bytes:
    return encode_uvarint(count + 1) if flexible else _INT32.pack(count)


def _topic_bytes(entry: Any, version: int, flexible: bool) -> bytes:
    cached = _encoded_topics.get(id(entry))
    if cached is not None and cached[0] is entry and cached[1] == version:
        return cached[2]
    whole: bytes = _topics_field().encode(
        [entry], version=version, compact=flexible, tagged=flexible
    )
    encoded = whole[len(_array_length(1, flexible)) :]
    if len(_encoded_topics) >= _MAX_CACHED:
        _encoded_topics.clear()
    _encoded_topics[id(entry)] = (entry, version, encoded)
    return encoded


def encode_metadata_response(body: Any, version: int) -> bytes | None:
    """The encoded response body, or None to leave it to the generic encoder."""
    topics = body.topics
    if topics is None or len(topics) < MIN_TOPICS:
        return None
    flexible = version >= _FIRST_FLEXIBLE_VERSION
    body.topics = []
    try:
        without_topics: bytes = body.encode(version=version)
    finally:
        body.topics = topics
    empty = _array_length(0, flexible)
    split = len(without_topics) - _suffix_length(version)
    if without_topics[split - len(empty) : split] != empty:
        return None
    parts = [without_topics[: split - len(empty)], _array_length(len(topics), flexible)]
    parts += [_topic_bytes(entry, version, flexible) for entry in topics]
    parts.append(without_topics[split:])
    return b"".join(parts)
