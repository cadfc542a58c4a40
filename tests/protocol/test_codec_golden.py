"""Golden request frames captured from seven real clients, through the codec adapter."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

from minibroker.protocol.codec import (
    MalformedRequest,
    decode_body,
    decode_header,
    request_class,
)
from minibroker.server.framing import FrameDecoder, FramingError
from tests.reference import GOLDEN_FRAMES

INDEX = json.loads((GOLDEN_FRAMES / "index.json").read_text())["frames"]
DECODABLE = [entry for entry in INDEX if request_class(entry["api_key"]) is not None]


def _ids(entry: dict[str, Any]) -> str:
    return str(entry["file"])


def _frame(entry: dict[str, Any]) -> bytes:
    return (GOLDEN_FRAMES / entry["file"]).read_bytes()


def test_the_golden_frames_are_there() -> None:
    assert len(INDEX) == 97
    assert len(DECODABLE) >= 90


@pytest.mark.parametrize("entry", DECODABLE, ids=_ids)
def test_decodes_and_reencodes_byte_for_byte(entry: dict[str, Any]) -> None:
    frame = memoryview(_frame(entry))
    header, pos = decode_header(frame)
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["api_version"])
    assert header.correlation_id == entry["correlation_id"]
    assert header.client_id == (entry["client_id"] or "")
    body = decode_body(header.api_key, header.api_version, frame, pos)
    assert bytes(body.encode(version=header.api_version)) == bytes(frame[pos:])


@pytest.mark.parametrize("entry", DECODABLE, ids=_ids)
def test_trailing_bytes_are_ignored_as_kafka_does(entry: dict[str, Any]) -> None:
    whole = _frame(entry)
    frame = memoryview(whole + b"\x01\x00\x00")
    header, pos = decode_header(frame)
    body = decode_body(header.api_key, header.api_version, frame, pos)
    assert bytes(body.encode(version=header.api_version)) == whole[pos:]


def test_librdkafka_all_topics_metadata_with_stray_bytes() -> None:
    frame = memoryview(bytes.fromhex("0003000c00000003000772646b61666b610000000000010000"))
    header, pos = decode_header(frame)
    body = decode_body(header.api_key, header.api_version, frame, pos)
    assert (header.client_id, body.topics, body.allow_auto_topic_creation) == (
        "rdkafka",
        None,
        False,
    )


@pytest.mark.parametrize("entry", DECODABLE, ids=_ids)
def test_every_truncation_is_malformed(entry: dict[str, Any]) -> None:
    whole = _frame(entry)
    for cut in range(len(whole) - 1, 0, -max(1, len(whole) // 64)):
        frame = memoryview(whole[:cut])
        with pytest.raises(MalformedRequest):
            header, pos = decode_header(frame)
            decode_body(header.api_key, header.api_version, frame, pos)


@pytest.mark.parametrize("entry", DECODABLE[:12], ids=_ids)
def test_framing_byte_by_byte(entry: dict[str, Any]) -> None:
    whole = _frame(entry)
    decoder = FrameDecoder(max_frame_bytes=1 << 20)
    stream = struct.pack(">i", len(whole)) + whole
    frames = []
    for byte in stream * 2:
        decoder.feed(bytes([byte]))
        if (frame := decoder.next_frame()) is not None:
            frames.append(frame)
    assert frames == [whole, whole]
    assert decoder.buffered == 0


@pytest.mark.parametrize("size", [-1, -(2**31), (1 << 20) + 1])
def test_framing_rejects_negative_and_oversized_lengths(size: int) -> None:
    decoder = FrameDecoder(max_frame_bytes=1 << 20)
    decoder.feed(struct.pack(">i", size))
    with pytest.raises(FramingError):
        decoder.next_frame()
