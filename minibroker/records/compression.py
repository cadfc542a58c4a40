"""Kafka's record compression codecs, decompressing untrusted data within an output bound.

Codec ids are the low three bits of a batch's attributes. What real clients write:
- gzip: RFC 1952 members (Java reads concatenated members, so we do too);
- snappy: raw snappy (librdkafka) or the xerial framing Java's `SnappyOutputStream` writes
  (an 8-byte magic, two int32 versions, then int32-length-prefixed raw blocks);
- lz4: the LZ4 frame format with independent blocks (what Java's `Lz4BlockOutputStream`
  writes and reads);
- zstd: zstd frames.

`decompress` never allocates by a length taken from the data: declared sizes are checked
against the bound before use, and streaming decoders are fed or drained in bounded steps.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Callable
from typing import TypeAlias

import lz4.frame
import snappy
import zstandard

NONE = 0
GZIP = 1
SNAPPY = 2
LZ4 = 3
ZSTD = 4

CODEC_NAMES = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
CODEC_IDS = frozenset(CODEC_NAMES.values())

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, minimum compatible version
_XERIAL_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # xerial SnappyOutputStream's default block size
_INT32 = struct.Struct(">i")

# A zstd block regenerates at most 128 KiB and takes at least 4 input bytes (header + RLE
# byte), so feeding N input bytes yields at most about N * 32 KiB of output.
_ZSTD_MAX_EXPANSION = 32 * 1024
# lz4 output is taken in steps of at least 1 MiB, and 8 bytes per compressed byte.
_LZ4_MIN_STEP = 1 << 20
_LZ4_STEP_PER_INPUT_BYTE = 8
_ZSTD_MIN_FEED = 64
# Frames declare the window the decoder must allocate: allow what real compressors use
# (2 MiB at the default level, 8 MiB at the highest) and up to Kafka's 128 MiB for large
# bounds, never more.
_ZSTD_MIN_WINDOW = 1 << 24
_ZSTD_MAX_WINDOW = 1 << 27

Buffer: TypeAlias = bytes | bytearray | memoryview


class CompressionError(ValueError):
    """Compressed data that is corrupt, truncated, or decompresses to more than allowed."""


def compress(codec: int, data: Buffer) -> bytes:
    """Compress `data` the way Kafka's Java producer and broker write each codec."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return gzip.compress(data, mtime=0)
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return bytes(
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
    if codec == ZSTD:
        return bytes(zstandard.ZstdCompressor().compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: int, data: Buffer, max_size: int) -> bytes:
    """Decompress `data`; `CompressionError` if it is corrupt or the output exceeds `max_size`."""
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise CompressionError(f"unknown compression codec {codec}")
    try:
        return decoder(data, max_size)
    except CompressionError:
        raise
    except (zlib.error, snappy.UncompressError, zstandard.ZstdError, RuntimeError) as e:
        raise CompressionError(f"corrupt compressed data: {e}") from e
    except Exception as e:  # the codec libraries raise assorted undocumented types on bad input
        raise CompressionError(f"corrupt compressed data: {e!r}") from e


def _too_large(max_size: int) -> CompressionError:
    return CompressionError(f"decompressed size exceeds the limit of {max_size} bytes")


def _identity(data: Buffer, max_size: int) -> bytes:
    if len(data) > max_size:
        raise _too_large(max_size)
    return bytes(data)


def _gunzip(data: Buffer, max_size: int) -> bytes:
    out = bytearray()
    pending = bytes(data)
    while True:
        decoder = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        while not decoder.eof:
            chunk = decoder.decompress(pending, max_size - len(out) + 1)
            pending = decoder.unconsumed_tail
            out += chunk
            if len(out) > max_size:
                raise _too_large(max_size)
            if not (chunk or pending or decoder.eof):
                raise CompressionError("truncated gzip data")
        pending = decoder.unused_data
        if not pending:
            return bytes(out)


def _read_uvarint(data: Buffer, pos: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 35, 7):
        if pos >= len(data):
            break
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise CompressionError("bad snappy length")


def _snappy_block(block: Buffer, budget: int, max_size: int) -> bytes:
    declared, _ = _read_uvarint(block, 0)
    if declared > budget:
        raise _too_large(max_size)
    out = snappy.uncompress(bytes(block))
    if len(out) != declared:
        raise CompressionError("snappy block length mismatch")
    return bytes(out)


def _unsnappy(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    if bytes(view[: len(XERIAL_MAGIC)]) != XERIAL_MAGIC:
        return _snappy_block(view, max_size, max_size)
    if len(view) < _XERIAL_HEADER.size:
        raise CompressionError("truncated xerial snappy header")
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(view):
        if pos + _INT32.size > len(view):
            raise CompressionError("truncated xerial snappy block length")
        (block_len,) = _INT32.unpack_from(view, pos)
        pos += _INT32.size
        if block_len < 0 or pos + block_len > len(view):
            raise CompressionError("xerial snappy block length exceeds the data")
        out += _snappy_block(view[pos : pos + block_len], max_size - len(out), max_size)
        pos += block_len
    return bytes(out)


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = snappy.compress(bytes(view[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_INT32.pack(len(block)))
        parts.append(bytes(block))
    return b"".join(parts)


def _unlz4(data: Buffer, max_size: int) -> bytes:
    """LZ4 frames one after another, through lz4's chunk decoder itself: its
    `LZ4FrameDecompressor` wrapper copies the input, and the decoder allocates the whole
    `max_length` it is given, so output is taken in steps sized from the input (one step
    usually holds a whole batch, and is then returned as it is)."""
    view = memoryview(data)
    step = max(_LZ4_MIN_STEP, _LZ4_STEP_PER_INPUT_BYTE * len(view))
    parts: list[bytes] = []
    total = 0
    pos = 0
    while True:
        context = lz4.frame.create_decompression_context()
        while True:
            limit = min(step, max_size - total + 1)
            chunk, read, end_of_frame = lz4.frame.decompress_chunk(
                context, view[pos:], max_length=limit
            )
            pos += read
            total += len(chunk)
            if total > max_size:
                raise _too_large(max_size)
            parts.append(chunk)
            if end_of_frame:
                break
            if (len(chunk) < limit and pos >= len(view)) or not (chunk or read):
                raise CompressionError("truncated lz4 frame")
        if pos >= len(view):
            return parts[0] if len(parts) == 1 else b"".join(parts)


def _unzstd(data: Buffer, max_size: int) -> bytes:
    context = zstandard.ZstdDecompressor(
        max_window_size=min(max(_ZSTD_MIN_WINDOW, max_size), _ZSTD_MAX_WINDOW)
    )
    out = bytearray()
    view = memoryview(data)
    pos = 0
    decoder = context.decompressobj()
    while True:
        # Feed little enough input that the output cannot run far past the bound.
        feed = view[pos : pos + max(_ZSTD_MIN_FEED, (max_size - len(out)) // _ZSTD_MAX_EXPANSION)]
        out += decoder.decompress(feed)
        if len(out) > max_size:
            raise _too_large(max_size)
        pos += len(feed)
        if decoder.eof:
            # Whatever of `feed` the frame did not use starts the next frame.
            pos -= len(decoder.unused_data)
            if pos >= len(view):
                return bytes(out)
            decoder = context.decompressobj()
        elif pos >= len(view):
            raise CompressionError("truncated zstd frame")


_DECODERS: dict[int, Callable[[Buffer, int], bytes]] = {
    NONE: _identity,
    GZIP: _gunzip,
    SNAPPY: _unsnappy,
    LZ4: _unlz4,
    ZSTD: _unzstd,
}
