"""Codec round trips, the wire framings clients use, and bounded decompression."""

from __future__ import annotations

import gzip
import random
import struct

import lz4.frame
import pytest
import snappy
import zstandard

from minibroker.records.compression import (
    CODEC_NAMES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    XERIAL_MAGIC,
    ZSTD,
    CompressionError,
    compress,
    decompress,
)

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
COMPRESSED = [GZIP, SNAPPY, LZ4, ZSTD]
_RANDOM = random.Random(20240501)
PAYLOAD = _RANDOM.randbytes(2_000) + b"kafka " * 30_000 + _RANDOM.randbytes(500)
NOISE = _RANDOM.randbytes(300)


def test_codec_ids_are_kafkas() -> None:
    assert CODEC_NAMES == {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("data", [b"", b"x", PAYLOAD], ids=["empty", "one", "large"])
def test_round_trip(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data), len(data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_from_memoryview(codec: int) -> None:
    compressed = compress(codec, memoryview(PAYLOAD))
    assert decompress(codec, memoryview(compressed), len(PAYLOAD)) == PAYLOAD


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    framed = compress(SNAPPY, PAYLOAD)
    assert framed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    pos, out = 16, b""
    while pos < len(framed):
        (size,) = struct.unpack_from(">i", framed, pos)
        block = snappy.uncompress(framed[pos + 4 : pos + 4 + size])
        assert len(block) <= 32 * 1024
        out += block
        pos += 4 + size
    assert out == PAYLOAD


def test_snappy_reads_raw_blocks() -> None:
    assert decompress(SNAPPY, snappy.compress(PAYLOAD), len(PAYLOAD)) == PAYLOAD


def test_snappy_reads_xerial_built_by_hand() -> None:
    blocks = [snappy.compress(b"hello "), snappy.compress(b"world")]
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    framed += b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    assert decompress(SNAPPY, framed, 100) == b"hello world"


def test_lz4_writes_independent_64k_blocks_that_java_reads() -> None:
    framed = compress(LZ4, PAYLOAD)
    assert framed[:4] == b"\x04\x22\x4d\x18"
    flg, bd = framed[4], framed[5]
    assert flg & 0x20, "block independence (Java's Lz4BlockInputStream requires it)"
    assert not flg & 0x08, "no content size"
    assert (bd >> 4) & 0x7 == 4, "64 KiB maximum block size"


def test_reads_what_the_reference_libraries_write() -> None:
    assert decompress(GZIP, gzip.compress(PAYLOAD), len(PAYLOAD)) == PAYLOAD
    assert decompress(LZ4, lz4.frame.compress(PAYLOAD), len(PAYLOAD)) == PAYLOAD
    stream = zstandard.ZstdCompressor().compressobj()
    zstd_stream = stream.compress(PAYLOAD) + stream.flush()
    assert decompress(ZSTD, zstd_stream, len(PAYLOAD)) == PAYLOAD


def test_lz4_output_larger_than_one_step() -> None:
    payload = bytes(3 << 20) + PAYLOAD + bytes(1 << 20)
    assert decompress(LZ4, compress(LZ4, payload), len(payload)) == payload
    assert decompress(LZ4, compress(LZ4, payload) * 2, 2 * len(payload)) == payload * 2
    with pytest.raises(CompressionError, match="exceeds"):
        decompress(LZ4, compress(LZ4, payload), len(payload) - 1)


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_concatenated_frames(codec: int) -> None:
    assert decompress(codec, compress(codec, b"ab") + compress(codec, b"cd"), 10) == b"abcd"


@pytest.mark.parametrize("codec", CODECS)
def test_output_over_the_bound_is_rejected(codec: int) -> None:
    with pytest.raises(CompressionError, match="exceeds"):
        decompress(codec, compress(codec, PAYLOAD), len(PAYLOAD) - 1)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_bombs_stop_at_the_bound(codec: int) -> None:
    bomb = compress(codec, bytes(64 << 20))
    with pytest.raises(CompressionError, match="exceeds"):
        decompress(codec, bomb, 1 << 20)


def test_snappy_declared_length_is_checked_before_decoding() -> None:
    # A raw block claiming 4 GiB, and a xerial block claiming 2 GiB of input.
    with pytest.raises(CompressionError, match="exceeds"):
        decompress(SNAPPY, b"\xff\xff\xff\xff\x0f" + b"\x00" * 10, 1 << 20)
    header = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    with pytest.raises(CompressionError):
        decompress(SNAPPY, header + struct.pack(">i", 2**31 - 1) + b"x", 1 << 20)


@pytest.mark.parametrize("codec", COMPRESSED)
def test_truncated_data_is_rejected(codec: int) -> None:
    compressed = compress(codec, PAYLOAD)
    for cut in (1, 7, len(compressed) // 2, len(compressed) - 1):
        with pytest.raises(CompressionError):
            decompress(codec, compressed[:-cut], 10 * len(PAYLOAD))


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("garbage", [b"", b"\x01", b"garbage!" * 20, NOISE])
def test_garbage_is_rejected(codec: int, garbage: bytes) -> None:
    with pytest.raises(CompressionError):
        decompress(codec, garbage, 1 << 20)


def test_unknown_codec() -> None:
    with pytest.raises(CompressionError):
        decompress(5, b"", 10)
    with pytest.raises(ValueError):
        compress(7, b"")
