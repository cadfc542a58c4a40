"""Message formats v0 and v1 (magic 0 and 1): Kafka's legacy message sets.

A message set is a run of entries, each `offset int64, size int32` followed by `size` bytes
of one message (Kafka's `LegacyRecord.java`):

    crc        uint32  CRC-32 (zlib's, not CRC-32C) of everything after it
    magic      int8    0 or 1
    attributes int8    bits 0-2 the codec; v1 bit 3: LogAppendTime
    timestamp  int64   v1 only
    key        int32 length (-1: null) + bytes
    value      int32 length (-1: null) + bytes

A compressed message (a "wrapper") carries in its value the compressed bytes of a message
set of uncompressed inner messages of the same magic. In v1 the inner offsets are relative
(0, 1, ...) and the wrapper's offset is the absolute offset of the last inner message (0 from
some librdkafka producers: then the inner offsets are taken as they are); in v0 they are
absolute. A v1 LogAppendTime wrapper's timestamp applies to every inner message.

lz4 in v0 (KAFKA-3160): Kafka's first lz4 writer computed the frame header checksum over the
frame's magic number as well, and Kafka never checks that byte in magic 0 messages; here it is
rewritten before decoding, and written the same broken way when Kafka would write it
(down-conversion to v0). zstd never appears in these formats.

Parsing is strict: a field that runs past its message, a message whose fields do not fill
its size exactly, or bytes after the last whole entry are errors (`LegacyFormatError`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from minibroker.records.batch import (
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Buffer,
)
from minibroker.records.compression import LZ4, NONE, ZSTD, CompressionError, compress, decompress

MAGIC_V0 = 0
MAGIC_V1 = 1
ATTR_CODEC_MASK = 0x07
ATTR_LOG_APPEND_TIME = 0x08  # v1 only
NO_TIMESTAMP_TYPE = -1

_ENTRY = struct.Struct(">qi")  # offset, size
_CRC = struct.Struct(">I")
_MAGIC_ATTRIBUTES = struct.Struct(">bb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_CRC_SIZE = _CRC.size
# Kafka's RECORD_OVERHEAD_V0 / V1: crc, magic, attributes, [timestamp], key and value lengths.
OVERHEAD_V0 = 4 + 1 + 1 + 4 + 4
OVERHEAD_V1 = OVERHEAD_V0 + 8
MAGIC_OFFSET = LOG_OVERHEAD + _CRC_SIZE  # 16, where a v2 batch has its magic too


class LegacyFormatError(ValueError):
    """Bytes that are not a well-formed legacy message set.

    `corrupt`: Kafka answers CORRUPT_MESSAGE (structure, CRC); otherwise INVALID_RECORD
    (well-formed messages Kafka refuses, such as a compressed inner message)."""

    def __init__(self, message: str, *, corrupt: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.corrupt = corrupt


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    offset: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP in v0
    key: bytes | None
    value: bytes | None
    crc: int
    size: int  # the entry's size field: the message without offset and size

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == MAGIC_V0:
            return NO_TIMESTAMP_TYPE
        if self.attributes & ATTR_LOG_APPEND_TIME:
            return TIMESTAMP_LOG_APPEND_TIME
        return TIMESTAMP_CREATE_TIME

    @property
    def entry_size(self) -> int:
        return LOG_OVERHEAD + self.size


# ---- reading ------------------------------------------------------------------------------


def iter_entries(
    data: Buffer, *, partial_tail: bool = False
) -> Iterator[tuple[LegacyMessage, bool]]:
    """Each entry's message and whether its CRC matches, in order. With `partial_tail`, an
    incomplete last entry ends the set, as a consumer reads a fetch response."""
    view = memoryview(data)
    pos = 0
    while pos < len(view):
        if len(view) - pos < LOG_OVERHEAD:
            if partial_tail:
                return
            raise LegacyFormatError(f"{len(view) - pos} bytes follow the last message")
        offset, size = _ENTRY.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + size
        if partial_tail and end > len(view):
            return
        if size < OVERHEAD_V0:
            raise LegacyFormatError(
                f"Record size {size} is less than the minimum record overhead ({OVERHEAD_V0})"
            )
        if end > len(view):
            raise LegacyFormatError(f"the message at {pos} needs {size} bytes, {len(view)} sent")
        yield read_message(view[pos + LOG_OVERHEAD : end], offset)
        pos = end


def read_message(message: memoryview, offset: int) -> tuple[LegacyMessage, bool]:
    """One message (from its CRC to its end) and whether its CRC matches."""
    (crc,) = _CRC.unpack_from(message, 0)
    magic, attributes = _MAGIC_ATTRIBUTES.unpack_from(message, _CRC_SIZE)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise LegacyFormatError(f"Invalid magic found in record: {magic}")
    pos = _CRC_SIZE + _MAGIC_ATTRIBUTES.size
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        if len(message) < OVERHEAD_V1:
            raise LegacyFormatError(f"a v1 message needs {OVERHEAD_V1} bytes, has {len(message)}")
        (timestamp,) = _INT64.unpack_from(message, pos)
        pos += _INT64.size
    key, pos = _sized_bytes(message, pos)
    value, pos = _sized_bytes(message, pos)
    if pos != len(message):
        raise LegacyFormatError(f"{len(message) - pos} bytes follow the message's value")
    valid = zlib.crc32(message[_CRC_SIZE:]) == crc
    parsed = LegacyMessage(offset, magic, attributes, timestamp, key, value, crc, len(message))
    return parsed, valid


def _sized_bytes(message: memoryview, pos: int) -> tuple[bytes | None, int]:
    if pos + _INT32.size > len(message):
        raise LegacyFormatError("a length runs past the message")
    (length,) = _INT32.unpack_from(message, pos)
    pos += _INT32.size
    if length < 0:
        if length != -1:
            raise LegacyFormatError(f"invalid length {length}")
        return None, pos
    if pos + length > len(message):
        raise LegacyFormatError(f"a field of {length} bytes runs past the message")
    return bytes(message[pos : pos + length]), pos + length


def inner_messages(wrapper: LegacyMessage, max_decompressed_bytes: int) -> list[LegacyMessage]:
    """The messages of a compressed wrapper with absolute offsets, LogAppendTime applied, as
    Kafka's `AbstractLegacyRecordBatch.DeepRecordsIterator` reads them. Inner CRCs are not
    checked here: `inner_messages_checked` does."""
    return [message for message, _ in inner_messages_checked(wrapper, max_decompressed_bytes)]


def inner_messages_checked(
    wrapper: LegacyMessage, max_decompressed_bytes: int
) -> list[tuple[LegacyMessage, bool]]:
    """`inner_messages`, each with whether its CRC matches."""
    if wrapper.codec == ZSTD:
        raise LegacyFormatError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper.magic}",
            corrupt=False,
        )
    if wrapper.value is None:
        raise LegacyFormatError(
            f"Found invalid compressed record set with null value (magic = {wrapper.magic})",
            corrupt=False,
        )
    try:
        data = decompress_value(wrapper.codec, wrapper.magic, wrapper.value, max_decompressed_bytes)
    except CompressionError as e:
        raise LegacyFormatError(str(e), corrupt=False) from None
    inner = list(iter_entries(data))
    if not inner:
        raise LegacyFormatError(
            "Found invalid compressed record set with no inner records", corrupt=False
        )
    for message, _ in inner:
        if message.magic != wrapper.magic:
            raise LegacyFormatError(
                f"Compressed message magic {message.magic} does not match wrapper magic "
                f"{wrapper.magic}",
                corrupt=False,
            )
        if message.codec != NONE:
            raise LegacyFormatError("Inner messages must not be compressed", corrupt=False)
    return [(_absolute(wrapper, message, inner[-1][0].offset), ok) for message, ok in inner]


def _absolute(wrapper: LegacyMessage, message: LegacyMessage, last_inner: int) -> LegacyMessage:
    if wrapper.magic == MAGIC_V0:
        return message
    if wrapper.offset == 0:  # some librdkafka versions leave the wrapper's offset at 0
        base = 0
    elif wrapper.offset < last_inner:
        raise LegacyFormatError(
            f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{wrapper.offset}' is less than the last inner message offset '{last_inner}' "
            "and it is not zero.",
            corrupt=False,
        )
    else:
        base = wrapper.offset - last_inner
    timestamp = message.timestamp
    attributes = message.attributes
    if wrapper.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        timestamp = wrapper.timestamp
        attributes |= ATTR_LOG_APPEND_TIME
    return LegacyMessage(
        base + message.offset,
        message.magic,
        attributes,
        timestamp,
        message.key,
        message.value,
        message.crc,
        message.size,
    )


def decompress_value(codec: int, magic: int, value: bytes, max_size: int) -> bytes:
    """A wrapper's value decompressed within `max_size` (v0 lz4: its header checksum ignored)."""
    if codec == LZ4 and magic == MAGIC_V0:
        value = lz4_with_header_checksum(value, broken=False)
    return decompress(codec, value, max_size)


# ---- writing ------------------------------------------------------------------------------


def encode_message(
    magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """One message from its CRC to its end."""
    parts = [_MAGIC_ATTRIBUTES.pack(magic, attributes)]
    if magic == MAGIC_V1:
        parts.append(_INT64.pack(timestamp))
    for field in (key, value):
        parts.append(_INT32.pack(-1 if field is None else len(field)))
        if field is not None:
            parts.append(field)
    body = b"".join(parts)
    return _CRC.pack(zlib.crc32(body)) + body


def encode_entry(offset: int, message: bytes) -> bytes:
    return _ENTRY.pack(offset, len(message)) + message


LegacyInput = tuple[int, int, bytes | None, bytes | None]
"""(absolute offset, timestamp, key, value) of one message to write."""


def build_message_set(
    records: Sequence[LegacyInput],
    magic: int,
    *,
    codec: int = NONE,
    log_append_time: int | None = None,
) -> bytes:
    """The messages as Kafka's `MemoryRecordsBuilder` writes them at `magic`: one entry per
    record, or one wrapper holding them all when `codec` is set. With `log_append_time`
    (v1), every message carries it and the LogAppendTime bit."""
    if not records:
        return b""
    type_bit = ATTR_LOG_APPEND_TIME if magic == MAGIC_V1 and log_append_time is not None else 0

    def timestamp_of(timestamp: int) -> int:
        return log_append_time if log_append_time is not None else timestamp

    if codec == NONE:
        return b"".join(
            encode_entry(offset, encode_message(magic, type_bit, timestamp_of(ts), key, value))
            for offset, ts, key, value in records
        )
    first_offset = records[0][0]
    inner = b"".join(
        encode_entry(
            offset - first_offset if magic == MAGIC_V1 else offset,
            encode_message(magic, type_bit, timestamp_of(ts), key, value),
        )
        for offset, ts, key, value in records
    )
    compressed = compress(codec, inner)
    if codec == LZ4 and magic == MAGIC_V0:
        compressed = lz4_with_header_checksum(compressed, broken=True)
    wrapper_timestamp = timestamp_of(max(ts for _, ts, _, _ in records))
    wrapper = encode_message(magic, codec | type_bit, wrapper_timestamp, None, compressed)
    return encode_entry(records[-1][0], wrapper)


# ---- the lz4 frame header checksum (KAFKA-3160) -------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLAG_CONTENT_SIZE = 0x08
_LZ4_FLAG_DICT_ID = 0x01


def lz4_with_header_checksum(frame: bytes, *, broken: bool) -> bytes:
    """`frame` with its header checksum byte set: the correct one (xxh32 of the frame
    descriptor) or, `broken`, the one Kafka's v0 writer computed (including the magic)."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame  # not an lz4 frame: the decoder reports it
    flags = frame[4]
    checksum_at = 6 + (8 if flags & _LZ4_FLAG_CONTENT_SIZE else 0)
    checksum_at += 4 if flags & _LZ4_FLAG_DICT_ID else 0
    if checksum_at >= len(frame):
        return frame
    covered = frame[0 if broken else 4 : checksum_at]
    checksum = (xxh32(covered) >> 8) & 0xFF
    return frame[:checksum_at] + bytes([checksum]) + frame[checksum_at + 1 :]


_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_MASK = 0xFFFFFFFF
_LANES = struct.Struct("<4I")
_UINT32_LE = struct.Struct("<I")


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def _round(lane: int, word: int) -> int:
    return (_rotl((lane + word * _P2) & _MASK, 13) * _P1) & _MASK


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (lz4 frame checksums), for the few bytes of a frame header."""
    length = len(data)
    pos = 0
    if length >= 16:
        lanes = [(seed + _P1 + _P2) & _MASK, (seed + _P2) & _MASK, seed, (seed - _P1) & _MASK]
        while pos + 16 <= length:
            words = _LANES.unpack_from(data, pos)
            lanes = [_round(lane, word) for lane, word in zip(lanes, words, strict=True)]
            pos += 16
        acc = _rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)
    else:
        acc = seed + _P5
    acc = (acc + length) & _MASK
    while pos + 4 <= length:
        (word,) = _UINT32_LE.unpack_from(data, pos)
        acc = (_rotl((acc + word * _P3) & _MASK, 17) * _P4) & _MASK
        pos += 4
    while pos < length:
        acc = (_rotl((acc + data[pos] * _P5) & _MASK, 11) * _P1) & _MASK
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _MASK
    acc ^= acc >> 13
    acc = (acc * _P3) & _MASK
    return acc ^ (acc >> 16)
