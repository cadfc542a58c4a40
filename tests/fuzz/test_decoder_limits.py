"""The request decoder refuses what Kafka's generated readers refuse, at a cost bounded by
the frame (see minibroker/protocol/decoder_limits.py)."""

from __future__ import annotations

import struct

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import MalformedRequest, decode_body, decode_header
from tests.wire import encode_request, request_frame


def _decode(api_key: int, version: int, body: bytes) -> object:
    frame = memoryview(request_frame(api_key, version, 1, body)[4:])
    _, pos = decode_header(frame)
    return decode_body(api_key, version, frame, pos)


def test_null_non_nullable_array_is_malformed() -> None:
    # Produce v4: transactional_id null, acks, timeout, topic_data count -1
    body = struct.pack(">hhii", -1, 1, 1000, -1)
    with pytest.raises(MalformedRequest):
        _decode(ApiKey.Produce, 4, body)


def test_negative_array_count_is_null_as_in_kafka() -> None:
    body = struct.pack(">hhii", -1, 1, 1000, -7)
    with pytest.raises(MalformedRequest):
        _decode(ApiKey.Produce, 4, body)


def test_nullable_array_may_be_null() -> None:
    request = _decode(ApiKey.Metadata, 4, struct.pack(">i?", -1, True))
    assert request.topics is None  # type: ignore[attr-defined]


def test_null_non_nullable_string_is_malformed() -> None:
    body = struct.pack(">ih", 1, -1) + struct.pack(">?", False)  # Metadata v4, one null name
    with pytest.raises(MalformedRequest):
        _decode(ApiKey.Metadata, 4, body)


def test_long_unsigned_varint_is_malformed() -> None:
    with pytest.raises(MalformedRequest):
        _decode(ApiKey.Metadata, 12, b"\xff" * 6 + b"\x01")
    with pytest.raises(MalformedRequest):  # 1 in six bytes: Kafka refuses it as too long
        _decode(ApiKey.Metadata, 12, b"\x81\x80\x80\x80\x80\x00" + b"\x00\x00\x00")


def test_five_byte_varint_still_decodes() -> None:
    body = b"\x81\x80\x80\x80\x00" + b"\x00\x00\x00"  # topics: 1 encoded in 5 bytes -> empty
    request = _decode(ApiKey.Metadata, 12, body)
    assert request.topics == []  # type: ignore[attr-defined]


def test_unknown_tags_on_nested_structs_are_read_in_place() -> None:
    count = 1000
    topic = b"\x00" * 16 + b"\x02a" + b"\x01\x05\x01z"  # one unknown tag 5 = b"z"
    body = bytes([(count + 1) & 0x7F | 0x80, (count + 1) >> 7]) + topic * count + b"\x00\x00\x00"
    request = _decode(ApiKey.Metadata, 12, body)
    topics = request.topics  # type: ignore[attr-defined]
    assert len(topics) == count
    assert topics[-1].name == "a"
    assert topics[-1].unknown_tags == {"_5": b"z"}


def test_well_formed_requests_still_decode() -> None:
    body = encode_request(ApiKey.Metadata, 12, topics=[{"name": "t"}])
    assert _decode(ApiKey.Metadata, 12, body).topics[0].name == "t"  # type: ignore[attr-defined]
