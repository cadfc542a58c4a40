"""Fuzz target: bounded decompression of each codec (`compression.decompress`), as record
validation and reads call it.

The first input byte's low three bits pick the codec (5-7: unknown ones); the rest is the
compressed data. Outcomes allowed: at most `MAX_SIZE` bytes, or CompressionError. For the
known codecs the input also round-trips: compressed as Kafka writes it, it decompresses to
itself."""

from __future__ import annotations

from minibroker.records.compression import CODEC_IDS, CompressionError, compress, decompress

MAX_SIZE = 64 * 1024
_SAMPLE = b"".join(b"key-%d:value-%d;" % (i, i * i) for i in range(200))


def seeds() -> list[bytes]:
    payloads = (_SAMPLE, _SAMPLE[:10], b"\x00" * 5000, b"")
    return [bytes([codec]) + compress(codec, data) for codec in CODEC_IDS for data in payloads]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    codec, payload = data[0] & 0x07, data[1:]
    try:
        out = decompress(codec, payload, MAX_SIZE)
    except CompressionError:
        pass
    else:
        if len(out) > MAX_SIZE:
            raise AssertionError(f"codec {codec} gave {len(out)} bytes over a {MAX_SIZE} limit")
    if codec in CODEC_IDS and len(payload) <= MAX_SIZE:
        round_trip = decompress(codec, compress(codec, payload), MAX_SIZE)
        if round_trip != payload:
            raise AssertionError(f"codec {codec} does not round-trip {len(payload)} bytes")
