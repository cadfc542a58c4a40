"""Message formats v0/v1: parsing, Kafka 3.x's produce-path checks and conversion to v2, and
down-conversion of stored v2 batches for Fetch v0-3.

kafka-python's own legacy record code (an independent implementation) writes message sets for
us to read and reads the ones we write, except v0 lz4 (it needs xxhash, not installed here).
"""

from __future__ import annotations

import struct

import lz4.frame
import pytest
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    split_batches,
)
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from minibroker.records.downconvert import UnsupportedDownConversion, down_convert
from minibroker.records.legacy import (
    LegacyFormatError,
    LegacyMessage,
    build_message_set,
    encode_entry,
    encode_message,
    inner_messages,
    iter_entries,
    lz4_with_header_checksum,
    xxh32,
)
from minibroker.records.legacy_validate import (
    validate_legacy_records,
    validate_old_produce_records,
)
from minibroker.records.records import (
    build_batch,
    build_control_batch,
    iter_records,
)
from minibroker.records.validate import InvalidRecords, ValidationConfig

NOW = 1_700_000_000_000
CODECS = [NONE, GZIP, SNAPPY, LZ4]
_KP_CODEC = {NONE: 0, GZIP: 1, SNAPPY: 2, LZ4: 3}


def _three(magic: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    timestamps = [NOW - 2, NOW - 1, NOW] if magic else [-1, -1, -1]
    return [
        (0, timestamps[0], b"k0", b"v0"),
        (1, timestamps[1], None, b"v1"),
        (2, timestamps[2], b"k2", None),
    ]


def _deep(data: bytes) -> list[LegacyMessage]:
    messages: list[LegacyMessage] = []
    for message, crc_ok in iter_entries(data, partial_tail=True):
        assert crc_ok
        messages.extend(inner_messages(message, 1 << 20) if message.codec else [message])
    return messages


def _kafka_python_read(data: bytes) -> list[tuple[int, int | None, bytes | None, bytes | None]]:
    out = []
    pos = 0
    while pos + 12 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        if pos + 12 + size > len(data):
            break
        entry = data[pos : pos + 12 + size]
        for record in LegacyRecordBatch(entry, entry[16]):
            out.append((record.offset, record.timestamp, record.key, record.value))
        pos += 12 + size
    return out


def _rejected(records: bytes, config: ValidationConfig | None = None) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as caught:
        validate_legacy_records(records, config or ValidationConfig(), NOW)
    return caught.value


# ---- the format -----------------------------------------------------------------------------


def test_xxh32_known_values_and_the_lz4_header_checksum() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    for store_size in (False, True):
        frame = lz4.frame.compress(b"abc" * 500, store_size=store_size)
        # lz4's own header checksum is what the correct (non-broken) rewrite produces
        assert lz4_with_header_checksum(frame, broken=False) == frame
        broken = lz4_with_header_checksum(frame, broken=True)
        assert broken != frame
        with pytest.raises(RuntimeError):
            lz4.frame.decompress(broken)


# kafka-python writes v0 lz4 only with xxhash installed
@pytest.mark.parametrize(
    ("magic", "codec"), [(m, c) for m in (0, 1) for c in CODECS if (m, c) != (0, LZ4)]
)
def test_kafka_python_message_sets_read_back(magic: int, codec: int) -> None:
    builder = LegacyRecordBatchBuilder(magic, _KP_CODEC[codec], 1 << 20)
    for offset, timestamp, key, value in _three(magic):
        builder.append(offset, timestamp if magic else None, key, value)
    messages = _deep(bytes(builder.build()))
    expected = [(o, t, k, v) for o, t, k, v in _three(magic)]
    assert [(m.offset, m.timestamp, m.key, m.value) for m in messages] == expected


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_written_message_sets_read_by_kafka_python_and_by_us(magic: int, codec: int) -> None:
    records = [(10 + o, t, k, v) for o, t, k, v in _three(magic)]
    data = build_message_set(records, magic, codec=codec)
    assert [(m.offset, m.timestamp, m.key, m.value) for m in _deep(data)] == records
    if not (magic == 0 and codec == LZ4):
        expected = [(o, t if magic else None, k, v) for o, t, k, v in records]
        assert _kafka_python_read(data) == expected


def test_v0_lz4_wrapper_carries_kafkas_broken_header_checksum() -> None:
    data = build_message_set(_three(0), 0, codec=LZ4)
    (wrapper, _), *_ = list(iter_entries(data))
    assert wrapper.value is not None
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(wrapper.value)
    assert [m.value for m in inner_messages(wrapper, 1 << 20)] == [b"v0", b"v1", None]


def test_v1_lz4_frame_is_a_plain_lz4_frame() -> None:
    data = build_message_set(_three(1), 1, codec=LZ4)
    (wrapper, _), *_ = list(iter_entries(data))
    assert wrapper.value is not None
    assert len(lz4.frame.decompress(wrapper.value)) > 0


def _wrapper(
    offset: int, inner_offsets: list[int], magic: int = 1, attributes: int = GZIP
) -> bytes:
    inner = b"".join(
        encode_entry(o, encode_message(magic, 0, NOW + o, b"k", b"v%d" % o)) for o in inner_offsets
    )
    return encode_entry(offset, encode_message(magic, attributes, NOW, None, compress(GZIP, inner)))


def test_v1_inner_offsets_are_relative_to_the_wrapper() -> None:
    assert [m.offset for m in _deep(_wrapper(17, [0, 1, 2]))] == [15, 16, 17]
    assert [m.offset for m in _deep(_wrapper(0, [0, 1, 2]))] == [0, 1, 2]  # librdkafka's 0
    with pytest.raises(LegacyFormatError, match="less than the last inner message offset"):
        _deep(_wrapper(1, [0, 1, 2]))
    assert [m.offset for m in _deep(_wrapper(9, [7, 8, 9], magic=0))] == [7, 8, 9]  # absolute


def test_a_log_append_time_wrapper_stamps_its_inner_messages() -> None:
    data = build_message_set(_three(1), 1, codec=GZIP, log_append_time=NOW + 5)
    assert [m.timestamp for m in _deep(data)] == [NOW + 5] * 3
    (wrapper, _), *_ = list(iter_entries(data))
    assert wrapper.timestamp_type == TIMESTAMP_LOG_APPEND_TIME


@pytest.mark.parametrize(
    "data",
    [
        build_message_set(_three(1), 1)[:-1],  # cut short
        build_message_set(_three(1), 1) + b"\x00" * 5,  # trailing bytes
        encode_entry(0, b"\x00" * 10),  # under 14 bytes
    ],
)
def test_malformed_sets_are_format_errors(data: bytes) -> None:
    with pytest.raises(LegacyFormatError):
        list(iter_entries(data))


def test_a_partial_tail_ends_the_set_for_readers() -> None:
    data = build_message_set(_three(1), 1)
    assert len(list(iter_entries(data[:-3], partial_tail=True))) == 2


# ---- Produce v0-2: checks and conversion ------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_valid_sets_become_one_v2_batch(magic: int, codec: int) -> None:
    (batch,) = validate_legacy_records(
        build_message_set(_three(magic), magic, codec=codec), ValidationConfig(), NOW
    )
    header = BatchHeader.parse(batch.data)
    assert header.magic == 2
    assert header.compression == codec
    assert header.producer_id == -1
    assert batch.record_count == 3
    assert batch.max_timestamp == (NOW if magic else -1)
    records = list(iter_records(batch.data))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (o, t, k, v, []) for o, t, k, v in _three(magic)
    ]


def test_uncompressed_messages_of_several_entries_make_one_batch() -> None:
    data = build_message_set(_three(1), 1) + build_message_set(_three(1), 1)
    (batch,) = validate_legacy_records(data, ValidationConfig(), NOW)
    assert batch.record_count == 6


def test_topic_compression_and_log_append_time_are_applied() -> None:
    config = ValidationConfig(compression_type="zstd", timestamp_type="LogAppendTime")
    (batch,) = validate_legacy_records(build_message_set(_three(0), 0, codec=GZIP), config, NOW)
    header = BatchHeader.parse(batch.data)
    assert header.compression == ZSTD
    assert header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
    assert header.max_timestamp == NOW == batch.log_append_time_ms


def test_no_bytes_append_nothing_and_v2_batches_go_the_v2_way() -> None:
    assert validate_legacy_records(b"", ValidationConfig(), NOW) == []
    v2 = build_batch([(b"k", b"v", [], NOW)])
    (batch,) = validate_old_produce_records(v2, ValidationConfig(), NOW)
    assert bytes(batch.data) == v2


def _with_bad_crc(data: bytes) -> bytes:
    broken = bytearray(data)
    broken[12] ^= 0xFF
    return bytes(broken)


def test_corrupt_crcs_are_corrupt_message() -> None:
    assert _rejected(_with_bad_crc(build_message_set(_three(1), 1))).error_code == (
        ErrorCode.CORRUPT_MESSAGE
    )
    inner = encode_entry(0, encode_message(1, 0, NOW, b"k", b"v"))
    bad_inner = inner[:12] + bytes([inner[12] ^ 0xFF]) + inner[13:]
    wrapper = encode_entry(0, encode_message(1, GZIP, NOW, None, compress(GZIP, bad_inner)))
    assert _rejected(wrapper).error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (build_message_set(_three(1), 1)[:-1], ErrorCode.CORRUPT_MESSAGE),
        (build_message_set(_three(1), 1)[:30], ErrorCode.CORRUPT_MESSAGE),
        (
            encode_entry(0, struct.pack(">I", 0) + b"\x03" + b"\x00" * 12),
            ErrorCode.CORRUPT_MESSAGE,
        ),
        (
            build_message_set(_three(0), 0, codec=GZIP) + build_message_set(_three(0), 0),
            ErrorCode.INVALID_RECORD,
        ),
        (
            build_message_set(_three(0), 0) + build_message_set(_three(1), 1),
            ErrorCode.INVALID_RECORD,
        ),
        (
            encode_entry(0, encode_message(1, ZSTD, NOW, None, compress(ZSTD, b"x"))),
            ErrorCode.INVALID_RECORD,
        ),
        (
            encode_entry(0, encode_message(1, 5, NOW, None, b"x")),
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        ),
        (encode_entry(0, encode_message(1, GZIP, NOW, None, None)), ErrorCode.INVALID_RECORD),
        (
            encode_entry(0, encode_message(1, GZIP, NOW, None, b"not gzip")),
            ErrorCode.INVALID_RECORD,
        ),
        (
            encode_entry(0, encode_message(1, GZIP, NOW, None, compress(GZIP, b""))),
            ErrorCode.INVALID_RECORD,
        ),
    ],
    ids=[
        "truncated",
        "cut-mid-set",
        "magic-3",
        "two-entries-one-compressed",
        "mixed-magic",
        "zstd-wrapper",
        "codec-5",
        "null-wrapper-value",
        "undecodable",
        "no-inner-messages",
    ],
)
def test_rejected_sets(data: bytes, error: ErrorCode) -> None:
    assert _rejected(data).error_code == error


def test_nested_compression_and_inner_magic_mismatch_are_invalid_record() -> None:
    nested = build_message_set(_three(1), 1, codec=GZIP)
    wrapper = encode_entry(2, encode_message(1, GZIP, NOW, None, compress(GZIP, nested)))
    assert _rejected(wrapper).message == "Inner messages must not be compressed"
    v0_inside_v1 = encode_entry(
        0, encode_message(1, GZIP, NOW, None, compress(GZIP, build_message_set(_three(0), 0)))
    )
    assert "does not match wrapper magic" in _rejected(v0_inside_v1).message


def test_decompression_is_bounded() -> None:
    big = build_message_set([(0, NOW, b"k", b"x" * 100_000)], 1, codec=GZIP)
    refused = _rejected(big, ValidationConfig(max_decompressed_bytes=50_000))
    assert refused.error_code == ErrorCode.INVALID_RECORD
    assert "exceeds the limit" in refused.message


def test_size_limits_are_message_too_large() -> None:
    config = ValidationConfig(max_message_bytes=60)
    assert _rejected(build_message_set([(0, NOW, b"k", b"v" * 100)], 1), config).error_code == (
        ErrorCode.MESSAGE_TOO_LARGE
    )
    # each message fits, the converted v2 batch of all of them does not
    many = build_message_set([(i, NOW, b"k", b"v" * 20) for i in range(10)], 1)
    refused = _rejected(many, ValidationConfig(max_message_bytes=200))
    assert refused.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert refused.message.startswith("Message batch size is")


def test_compacted_topics_need_keys_with_the_records_index() -> None:
    config = ValidationConfig(compacted=True)
    compressed = _rejected(build_message_set(_three(1), 1, codec=GZIP), config)
    assert compressed.error_code == ErrorCode.INVALID_RECORD
    assert [index for index, _ in compressed.record_errors] == [1]
    # uncompressed messages are each their own batch in Kafka: index 0
    plain = _rejected(build_message_set(_three(1), 1), config)
    assert plain.record_errors == [(0, "Compacted topic cannot accept message without key")]


def test_timestamps_are_checked_for_v1_only() -> None:
    config = ValidationConfig(timestamp_before_max_ms=1000, timestamp_after_max_ms=1000)
    old = build_message_set([(0, NOW - 5000, b"k", b"v")], 1, codec=SNAPPY)
    refused = _rejected(old, config)
    assert refused.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "is out of range" in refused.record_errors[0][1]
    (batch,) = validate_legacy_records(build_message_set(_three(0), 0), config, NOW)
    assert batch.max_timestamp == -1


def test_producer_set_log_append_time_is_refused_where_kafka_refused_it() -> None:
    stamped = build_message_set(_three(1), 1, log_append_time=NOW)
    # CreateTime topic: the timestamp is in range, Kafka took it
    assert validate_legacy_records(stamped, ValidationConfig(), NOW)
    refused = _rejected(stamped, ValidationConfig(timestamp_type="LogAppendTime"))
    assert refused.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime" in refused.record_errors[0][1]


# ---- down-conversion ------------------------------------------------------------------------


def _stored(*batches: bytes, base: int = 0) -> bytes:
    """Batches with base offsets stamped one after another, as the log holds them."""
    out = b""
    offset = base
    for batch in batches:
        count = BatchHeader.parse(batch).records_count
        stamped = bytearray(batch)
        struct.pack_into(">q", stamped, 0, offset)
        out += bytes(stamped)
        offset += count
    return out


def _v2(count: int, codec: int = NONE, log_append_time: int | None = None) -> bytes:
    records = [(b"k%d" % i, b"v%d" % i, [("h", b"x")], NOW + i) for i in range(count)]
    if log_append_time is None:
        return build_batch(records, compression=codec)
    return build_batch(
        records,
        compression=codec,
        timestamp_type=TIMESTAMP_LOG_APPEND_TIME,
        max_timestamp=log_append_time,
    )


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_down_conversion_keeps_offsets_keys_values(magic: int, codec: int) -> None:
    stored = _stored(_v2(3, codec), _v2(2, codec), base=100)
    converted = down_convert(stored, magic, 100)
    messages = _deep(converted)
    assert [(m.offset, m.key, m.value) for m in messages] == [
        (100, b"k0", b"v0"),
        (101, b"k1", b"v1"),
        (102, b"k2", b"v2"),
        (103, b"k0", b"v0"),
        (104, b"k1", b"v1"),
    ][: len(messages)]
    assert len(messages) >= 3  # the first batch is always whole
    assert all(m.magic == magic for m in messages)
    expected_timestamps = [NOW, NOW + 1, NOW + 2] if magic else [-1, -1, -1]
    assert [m.timestamp for m in messages[:3]] == expected_timestamps
    entries = list(iter_entries(converted, partial_tail=True))
    assert all(m.codec == codec for m, _ in entries)


def test_uncompressed_batches_start_at_the_fetch_offset_compressed_ones_whole() -> None:
    plain = _stored(_v2(4), base=10)
    assert [m.offset for m in _deep(down_convert(plain, 1, 12))] == [12, 13]
    packed = _stored(_v2(4, GZIP), base=10)
    assert [m.offset for m in _deep(down_convert(packed, 1, 12))] == [10, 11, 12, 13]


def test_control_batches_are_dropped_and_log_append_time_kept() -> None:
    data = _v2(2, log_append_time=NOW + 50)
    control = _control_batch()
    stored = _stored(data, control, _v2(1))
    messages = _deep(down_convert(stored, 1, 0))
    assert [m.offset for m in messages] == [0, 1, 3]
    assert [m.timestamp for m in messages[:2]] == [NOW + 50, NOW + 50]
    assert messages[0].timestamp_type == TIMESTAMP_LOG_APPEND_TIME


def _control_batch() -> bytes:
    return build_control_batch(
        True, producer_id=7, producer_epoch=0, coordinator_epoch=0, timestamp=NOW
    )


def test_sizes_as_kafka_cut_or_padded_with_an_overflow_entry() -> None:
    growing = _stored(_v2(30, GZIP), _v2(30, GZIP))
    converted = down_convert(growing, 1, 0)
    assert len(converted) == max(len(growing), len(down_convert(_stored(_v2(30, GZIP)), 1, 0)))
    headers = [("header", b"x" * 50)]
    shrinking = _stored(build_batch([(b"k%d" % i, b"v%d" % i, headers, NOW) for i in range(5)]))
    converted = down_convert(shrinking, 0, 0)
    assert len(converted) == len(shrinking)
    real = build_message_set([(i, -1, b"k%d" % i, b"v%d" % i) for i in range(5)], 0)
    assert converted.startswith(real)
    overflow_offset, overflow_size = struct.unpack_from(">qi", converted, len(real))
    assert overflow_offset == -1
    assert overflow_size > len(converted) - len(real)


def test_nothing_to_convert_answers_a_lone_overflow_entry() -> None:
    assert down_convert(_stored(_control_batch()), 1, 0) == struct.pack(">qi", -1, 61)
    assert down_convert(b"", 1, 0) == b""


def test_zstd_first_is_refused_later_ends_the_data() -> None:
    with pytest.raises(UnsupportedDownConversion):
        down_convert(_stored(_v2(2, ZSTD), _v2(2)), 1, 0)
    converted = down_convert(_stored(_v2(2), _v2(2, ZSTD)), 1, 0)
    assert [m.offset for m in _deep(converted)] == [0, 1]


def test_split_batches_sees_the_converted_v2_batch_whole() -> None:
    (batch,) = validate_legacy_records(
        build_message_set(_three(1), 1, codec=LZ4), ValidationConfig(), NOW
    )
    assert len(split_batches(bytes(batch.data))) == 1
