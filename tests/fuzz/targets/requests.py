"""Fuzz target: a request frame (header and body, without the size prefix) as the broker
reads it (minibroker/server/dispatch.py): `peek_key_version_correlation`, `decode_header`,
`decode_body` with records copied and in place (the hand-written Produce decoder).

The API key and version come from the input's first four bytes; a pair the broker does not
serve (dispatch refuses those before decoding) is mapped onto one it serves, so every API
and version served is reachable. Outcomes allowed: a body or MalformedRequest. Produce frames
must walk alike through the C accelerator and the pure-Python decoder."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

from minibroker.handlers import load_all
from minibroker.handlers.registry import REGISTRY
from minibroker.protocol import produce_request
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import (
    MalformedRequest,
    decode_body,
    decode_header,
    peek_key_version_correlation,
)
from minibroker.protocol.produce_request import decode_produce_request
from tests.fuzz.targets import built_extension
from tests.reference import GOLDEN_FRAMES

NATIVE_WALK = built_extension("minibroker.protocol._accel", "walk_produce")

load_all()
SERVED = sorted(
    (int(key), version)
    for key, spec in REGISTRY.items()
    for version in range(spec.min_version, spec.max_version + 1)
)
_SERVED_SET = frozenset(SERVED)
_KEY_VERSION = struct.Struct(">hh")


def seeds() -> list[bytes]:
    return [path.read_bytes() for path in sorted(GOLDEN_FRAMES.glob("*/*.bin"))]


def served_frame(data: bytes) -> bytearray:
    """`data` with its API key and version replaced by a served pair when they are not one."""
    frame = bytearray(data)
    if len(frame) < _KEY_VERSION.size:
        return frame
    key, version = _KEY_VERSION.unpack_from(frame)
    if (key, version) not in _SERVED_SET:
        key, version = SERVED[((key & 0xFFFF) << 16 | (version & 0xFFFF)) % len(SERVED)]
        _KEY_VERSION.pack_into(frame, 0, key, version)
    return frame


def test_one_input(data: bytes) -> None:
    frame = served_frame(data)
    try:
        peek_key_version_correlation(memoryview(frame))
        header, pos = decode_header(memoryview(frame))
        decode_body(header.api_key, header.api_version, memoryview(bytes(frame)), pos)
    except MalformedRequest:
        pass
    else:
        _decode_in_place(frame, header.api_key, header.api_version, pos)
        if header.api_key == ApiKey.Produce:
            _walks_agree(frame, pos, header.api_version)


def _decode_in_place(frame: bytearray, api_key: int, api_version: int, pos: int) -> None:
    with contextlib.suppress(MalformedRequest):
        decode_body(api_key, api_version, memoryview(frame), pos, records_in_place=True)


def _walks_agree(frame: bytearray, pos: int, version: int) -> None:
    fast = _walked(NATIVE_WALK, frame, pos, version)
    pure = _walked(None, frame, pos, version)
    if fast != pure:
        raise AssertionError(f"native and pure Produce v{version} walks differ: {fast} {pure}")


def _walked(walk: Any, frame: bytearray, pos: int, version: int) -> object:
    saved = produce_request.native_walk
    produce_request.native_walk = walk
    try:
        return _plain(decode_produce_request(memoryview(frame), pos, version))
    finally:
        produce_request.native_walk = saved


def _plain(decoded: tuple[Any, int] | None) -> object:
    if decoded is None:
        return None
    request, end = decoded
    topics = [
        (
            topic.name,
            topic.topic_id,
            [
                (p.index, None if p.records is None else bytes(p.records))
                for p in topic.partition_data
            ],
        )
        for topic in request.topic_data
    ]
    return request.transactional_id, request.acks, request.timeout_ms, topics, end
