"""Produce validation: every rule rejected with Kafka's code, through hand-built bytes."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    ATTRIBUTES_OFFSET,
    BASE_SEQUENCE_OFFSET,
    BASE_TIMESTAMP_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PRODUCER_ID_OFFSET,
    RECORDS_COUNT_OFFSET,
    BatchHeader,
    compute_crc,
    write_crc,
)
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from minibroker.records.records import RecordInput, build_batch, encode_record, iter_records
from minibroker.records.validate import (
    InvalidRecords,
    ValidatedBatch,
    ValidationConfig,
    validate_produce_records,
)
from tests.records.golden import ClientBatch, client_batches

NOW = 1_800_000_000_000
HOUR = 3_600_000
CONFIG = ValidationConfig(timestamp_before_max_ms=HOUR, timestamp_after_max_ms=HOUR)
RECORDS: list[RecordInput] = [
    (b"k0", b"v0", [("h", b"x")], NOW - 10),
    (None, b"v1", [], NOW - 5),
    (b"k2", None, [("a", None), ("b", b"")], NOW),
]


def batch(codec: int = NONE, records: Sequence[RecordInput] = RECORDS, **kwargs: Any) -> bytes:
    return build_batch(records, compression=codec, **kwargs)


def patched(data: bytes, offset: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    if fix_crc:
        write_crc(out)
    return bytes(out)


def with_body(body: bytes, *, count: int, codec: int = NONE) -> bytes:
    """A valid header around arbitrary record bytes."""
    template = bytearray(batch(codec, [(b"k", b"v", [], NOW)] * count))
    out = template[:HEADER_SIZE] + body
    struct.pack_into(">i", out, LENGTH_OFFSET, len(out) - 12)
    write_crc(out)
    return bytes(out)


def rejected(
    records: bytes, config: ValidationConfig = CONFIG, **kwargs: int | None
) -> InvalidRecords:
    with pytest.raises(InvalidRecords) as info:
        validate_produce_records(records, config, NOW, **kwargs)
    return info.value


def accepted(records: bytes, config: ValidationConfig = CONFIG) -> ValidatedBatch:
    (validated,) = validate_produce_records(records, config, NOW)
    assert compute_crc(validated.data) == BatchHeader.parse(validated.data).crc
    return validated


# -- framing -------------------------------------------------------------------------------


def test_no_bytes_at_all() -> None:
    assert rejected(b"").error_code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("size", [1, 11, 12, 16, 17, 60])
def test_too_short(size: int) -> None:
    assert rejected(batch()[:size]).error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("length", [0, 13, 48, -1])
def test_length_field_below_a_header(length: int) -> None:
    data = patched(batch(), LENGTH_OFFSET, ">i", length, fix_crc=False)
    assert rejected(data).error_code == ErrorCode.CORRUPT_MESSAGE


def test_length_field_beyond_the_bytes() -> None:
    data = batch()
    assert rejected(data[:-1]).error_code == ErrorCode.CORRUPT_MESSAGE
    longer = patched(data, LENGTH_OFFSET, ">i", len(data), fix_crc=False)
    assert rejected(longer).error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("trailing", [b"\x00", b"\x00" * 11, b"\x00" * 12, b"\xff" * 40])
def test_trailing_bytes(trailing: bytes) -> None:
    assert rejected(batch() + trailing).error_code == ErrorCode.CORRUPT_MESSAGE


def test_two_batches_for_one_partition() -> None:
    error = rejected(batch() + batch())
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert "exactly one record batch" in error.message
    old_magic_record = patched(batch(), MAGIC_OFFSET, ">b", 1, fix_crc=False)
    assert rejected(batch() + old_magic_record).error_code == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize(("magic", "code"), [(0, "INVALID_RECORD"), (1, "INVALID_RECORD")])
def test_old_magic_is_invalid_record(magic: int, code: str) -> None:
    data = patched(batch(), MAGIC_OFFSET, ">b", magic, fix_crc=False)
    assert rejected(data).error_code == ErrorCode[code]


@pytest.mark.parametrize("magic", [3, 127, -1, -128])
def test_unknown_magic_is_corrupt(magic: int) -> None:
    data = patched(batch(), MAGIC_OFFSET, ">b", magic, fix_crc=False)
    assert rejected(data).error_code == ErrorCode.CORRUPT_MESSAGE


# -- batch header --------------------------------------------------------------------------


def test_zstd_needs_produce_v7() -> None:
    data = batch(ZSTD)
    error = rejected(data, produce_version=6)
    assert error.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    (validated,) = validate_produce_records(data, CONFIG, NOW, produce_version=7)
    assert BatchHeader.parse(validated.data).compression == ZSTD


def test_base_offset_must_be_zero() -> None:
    data = patched(batch(), 0, ">q", 5, fix_crc=False)
    assert rejected(data).error_code == ErrorCode.INVALID_RECORD


def test_message_too_large() -> None:
    data = batch()
    config = ValidationConfig(max_message_bytes=len(data) - 1)
    assert rejected(data, config).error_code == ErrorCode.MESSAGE_TOO_LARGE
    accepted(data, ValidationConfig(max_message_bytes=len(data)))


@pytest.mark.parametrize("position", [ATTRIBUTES_OFFSET, 30, HEADER_SIZE, -1])
def test_crc_mismatch(position: int) -> None:
    data = bytearray(batch())
    data[position] ^= 0x01
    error = rejected(bytes(data))
    assert error.error_code == ErrorCode.CORRUPT_MESSAGE
    assert "crc" in error.message


def test_crc_field_itself_corrupt() -> None:
    data = bytearray(batch())
    data[MAGIC_OFFSET + 1] ^= 0x80
    assert rejected(bytes(data)).error_code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec: int) -> None:
    data = patched(batch(), ATTRIBUTES_OFFSET, ">h", codec)
    assert rejected(data).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


@pytest.mark.parametrize(
    ("last_offset_delta", "count"), [(-1, 3), (2, 0), (2, -1), (1, 3), (3, 3), (2, 2)]
)
def test_offset_range_and_count(last_offset_delta: int, count: int) -> None:
    data = patched(batch(), LAST_OFFSET_DELTA_OFFSET, ">i", last_offset_delta)
    data = patched(data, RECORDS_COUNT_OFFSET, ">i", count)
    assert rejected(data).error_code == ErrorCode.INVALID_RECORD


def test_control_batches_from_clients() -> None:
    data = patched(batch(), ATTRIBUTES_OFFSET, ">h", 0x20)
    error = rejected(data)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert "control" in error.message


def test_producer_id_needs_a_sequence() -> None:
    data = batch(producer_id=1000, producer_epoch=0, base_sequence=-1)
    assert rejected(data).error_code == ErrorCode.INVALID_RECORD
    accepted(batch(producer_id=1000, producer_epoch=0, base_sequence=0))


# -- records -------------------------------------------------------------------------------


def test_corrupt_compressed_data() -> None:
    data = with_body(b"\x1f\x8b\x08 not really gzip", count=1, codec=GZIP)
    error = rejected(data)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.record_errors and error.record_errors[0][0] == 0


def test_decompressed_size_is_bounded() -> None:
    big: list[RecordInput] = [(None, bytes(200_000), [], NOW)]
    data = batch(ZSTD, big)
    config = ValidationConfig(max_decompressed_bytes=100_000)
    error = rejected(data, config)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert "exceeds" in error.record_errors[0][1]
    accepted(data, ValidationConfig(max_decompressed_bytes=300_000))


RECORD_A = encode_record(0, 0, b"k", b"v", [])
RECORD_B = encode_record(1, 0, b"k", b"v", [])


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize(
    ("records", "count", "index"),
    [
        (RECORD_A, 2, 1),  # fewer records than declared
        (RECORD_A + RECORD_B + RECORD_B, 2, 1),  # records left over
        (RECORD_A + RECORD_A, 2, 1),  # offset deltas 0, 0
        (RECORD_A + encode_record(2, 0, b"k", b"v", []), 2, 1),  # offset deltas 0, 2
        (b"\x0e" + RECORD_A[1:], 1, 0),  # length varint lies (7 for 8)
        (b"\xfe\xff\xff\xff\x07" + RECORD_A[1:], 1, 0),  # length 2**30
        (b"\x80\x80\x80\x80\x80\x80" + RECORD_A[1:], 1, 0),  # 6-byte varint
        (RECORD_A[:4] + b"\xfe\xff\xff\xff\x07" + RECORD_A[5:], 1, 0),  # key length 2**30
        (RECORD_A + RECORD_B[:-1] + b"\x7e", 2, 1),  # 63 headers
    ],
)
def test_record_structure(codec: int, records: bytes, count: int, index: int) -> None:
    body = records if codec == NONE else compress(codec, records)
    error = rejected(with_body(body, count=count, codec=codec))
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in error.record_errors] == [index]


def test_compacted_topic_needs_keys() -> None:
    config = ValidationConfig(compacted=True)
    error = rejected(batch(), config)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert [i for i, _ in error.record_errors] == [1]
    accepted(batch(records=[(b"k", None, [], NOW)]), config)


@pytest.mark.parametrize("codec", [NONE, LZ4])
def test_timestamps_out_of_range(codec: int) -> None:
    records: list[RecordInput] = [
        (b"a", b"", [], NOW - HOUR - 1),
        (b"b", b"", [], NOW - HOUR),
        (b"c", b"", [], NOW + HOUR),
        (b"d", b"", [], NOW + HOUR + 1),
        (b"e", b"", [], -1),  # no timestamp: not checked
    ]
    error = rejected(batch(codec, records))
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in error.record_errors] == [0, 3]
    assert "out of range" in error.record_errors[0][1]
    accepted(batch(codec, records[1:3]))


def test_timestamp_bounds_do_not_apply_to_log_append_time_topics() -> None:
    config = ValidationConfig(
        timestamp_type="LogAppendTime", timestamp_before_max_ms=0, timestamp_after_max_ms=0
    )
    accepted(batch(records=[(b"a", b"", [], 0)]), config)


def test_producer_may_not_set_log_append_time() -> None:
    data = patched(batch(), ATTRIBUTES_OFFSET, ">h", 0x08)
    config = ValidationConfig(timestamp_type="LogAppendTime")
    error = rejected(data, config)
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in error.record_errors] == [0, 1, 2]


def test_key_errors_and_timestamp_errors_together_answer_invalid_timestamp() -> None:
    records: list[RecordInput] = [(None, b"", [], NOW), (b"k", b"", [], 0)]
    error = rejected(batch(records=records), replace(CONFIG, compacted=True))
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [i for i, _ in error.record_errors] == [0, 1]


def test_recompressed_batch_over_max_message_bytes() -> None:
    noise = random.Random(7).randbytes(5_000)
    data = batch(records=[(None, noise, [], NOW)])
    config = ValidationConfig(max_message_bytes=len(data), compression_type="gzip")
    assert rejected(data, config).error_code == ErrorCode.MESSAGE_TOO_LARGE


# -- what validation produces --------------------------------------------------------------


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_valid_batch_is_kept_byte_for_byte(codec: int) -> None:
    data = batch(codec, producer_id=5, producer_epoch=1, base_sequence=10, is_transactional=True)
    validated = accepted(data)
    assert validated.data == data
    assert (validated.producer_id, validated.producer_epoch, validated.base_sequence) == (5, 1, 10)
    assert validated.is_transactional
    assert validated.record_count == 3
    assert validated.max_timestamp == NOW
    assert validated.log_append_time_ms == -1


def test_create_time_max_timestamp_is_recomputed() -> None:
    data = patched(batch(), MAX_TIMESTAMP_OFFSET, ">q", 12345)
    validated = accepted(data)
    assert validated.max_timestamp == NOW
    assert BatchHeader.parse(validated.data).max_timestamp == NOW
    assert validated.data[HEADER_SIZE:] == data[HEADER_SIZE:]


@pytest.mark.parametrize("codec", [NONE, ZSTD])
def test_log_append_time(codec: int) -> None:
    data = batch(codec)
    config = ValidationConfig(timestamp_type="LogAppendTime")
    validated = accepted(data, config)
    header = BatchHeader.parse(validated.data)
    assert header.timestamp_type == 1
    assert header.max_timestamp == NOW == validated.max_timestamp == validated.log_append_time_ms
    assert header.compression == codec
    assert validated.data[HEADER_SIZE:] == data[HEADER_SIZE:]
    assert validated.data[:CRC_OFFSET] == data[:CRC_OFFSET]
    assert (
        validated.data[BASE_TIMESTAMP_OFFSET:MAX_TIMESTAMP_OFFSET]
        == (data[BASE_TIMESTAMP_OFFSET:MAX_TIMESTAMP_OFFSET])
    )
    assert [r.timestamp for r in iter_records(validated.data)] == [NOW] * 3


@pytest.mark.parametrize("source", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize("target", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_topic_compression_type_recompresses(source: int, target: str) -> None:
    data = batch(source, producer_id=9, producer_epoch=2, base_sequence=30, is_transactional=True)
    validated = accepted(data, ValidationConfig(compression_type=target))
    header = BatchHeader.parse(validated.data)
    assert (
        header.compression
        == {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[target]
    )
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 30)
    assert header.is_transactional and header.records_count == 3
    assert (header.base_offset, header.max_timestamp) == (0, NOW)
    decoded = [(r.key, r.value, r.headers, r.timestamp) for r in iter_records(validated.data)]
    assert decoded == [(k, v, list(h), t) for k, v, h, t in RECORDS]


def test_recompression_with_log_append_time() -> None:
    config = ValidationConfig(timestamp_type="LogAppendTime", compression_type="lz4")
    validated = accepted(batch(), config)
    header = BatchHeader.parse(validated.data)
    assert (header.compression, header.timestamp_type, header.max_timestamp) == (LZ4, 1, NOW)
    assert validated.log_append_time_ms == NOW


def test_memoryview_input_is_not_modified() -> None:
    data = bytearray(batch())
    original = bytes(data)
    (validated,) = validate_produce_records(
        memoryview(data), ValidationConfig(timestamp_type="LogAppendTime"), NOW
    )
    assert data == original
    assert validated.data != original


def test_unknown_config_values() -> None:
    with pytest.raises(ValueError):
        ValidationConfig(timestamp_type="WallClock")
    with pytest.raises(ValueError):
        ValidationConfig(compression_type="brotli")


# -- real clients --------------------------------------------------------------------------


@pytest.mark.parametrize("client", client_batches(), ids=lambda c: c.id)
@pytest.mark.parametrize("compression_type", ["producer", "uncompressed", "snappy", "zstd"])
def test_real_client_batches_validate(client: ClientBatch, compression_type: str) -> None:
    header = BatchHeader.parse(client.records)
    config = replace(CONFIG, compression_type=compression_type)
    (validated,) = validate_produce_records(
        client.records, config, header.max_timestamp, produce_version=client.produce_version
    )
    assert validated.producer_id == header.producer_id
    assert validated.base_sequence == header.base_sequence
    assert validated.record_count == header.records_count
    if compression_type == "producer":
        assert validated.data == client.records
    assert [(r.key, r.value, r.headers) for r in iter_records(validated.data)] == [
        (r.key, r.value, r.headers) for r in iter_records(client.records)
    ]


@pytest.mark.parametrize("client", client_batches(), ids=lambda c: c.id)
def test_real_client_batches_with_log_append_time(client: ClientBatch) -> None:
    config = ValidationConfig(timestamp_type="LogAppendTime")
    (validated,) = validate_produce_records(client.records, config, NOW)
    assert validated.log_append_time_ms == NOW
    assert validated.data[HEADER_SIZE:] == client.records[HEADER_SIZE:]
    assert {r.timestamp for r in iter_records(validated.data)} == {NOW}


# -- fuzzing -------------------------------------------------------------------------------

SEEDS = [
    batch(NONE),
    batch(GZIP),
    batch(SNAPPY),
    batch(LZ4),
    batch(ZSTD, producer_id=3, producer_epoch=0, base_sequence=0),
    *(c.records for c in client_batches()[:4]),
]
FUZZ_CONFIGS = [
    CONFIG,
    ValidationConfig(timestamp_type="LogAppendTime", compression_type="gzip", compacted=True),
    ValidationConfig(compression_type="uncompressed", max_decompressed_bytes=64),
]


def _flip(data: bytearray, position: int, value: int) -> None:
    data[position % len(data)] ^= value or 1


def _splice(data: bytearray, position: int, value: int) -> None:
    data[position % len(data) : position % len(data)] = bytes([value]) * (1 + value % 5)


def _cut(data: bytearray, position: int, value: int) -> None:
    del data[position % len(data) : position % len(data) + 1 + value % 8]


def _varint_bomb(data: bytearray, position: int, value: int) -> None:
    start = HEADER_SIZE + position % max(1, len(data) - HEADER_SIZE)
    data[start : start + 1] = b"\xfe\xff\xff\xff" + bytes([value & 0x7F])


MUTATIONS: list[Callable[[bytearray, int, int], None]] = [_flip, _splice, _cut, _varint_bomb]
HEADER_FIELDS = [
    (LAST_OFFSET_DELTA_OFFSET, ">i"),
    (RECORDS_COUNT_OFFSET, ">i"),
    (PRODUCER_ID_OFFSET, ">q"),
    (BASE_SEQUENCE_OFFSET, ">i"),
    (ATTRIBUTES_OFFSET, ">h"),
    (LENGTH_OFFSET, ">i"),
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    config=st.sampled_from(FUZZ_CONFIGS),
    mutations=st.lists(
        st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 10_000), st.integers(0, 255)),
        max_size=4,
    ),
    header_field=st.none() | st.tuples(st.sampled_from(HEADER_FIELDS), st.integers(-3, 2**15 - 1)),
    fix_length=st.booleans(),
    fix_crc=st.booleans(),
)
def test_mutations_only_ever_raise_invalid_records(
    seed: bytes,
    config: ValidationConfig,
    mutations: list[tuple[Callable[[bytearray, int, int], None], int, int]],
    header_field: tuple[tuple[int, str], int] | None,
    fix_length: bool,
    fix_crc: bool,
) -> None:
    """Invariant: any bytes give validated batches or InvalidRecords, nothing else."""
    data = bytearray(seed)
    for mutate, position, value in mutations:
        mutate(data, position, value)
    if header_field is not None and len(data) >= HEADER_SIZE:
        (offset, fmt), value = header_field
        struct.pack_into(fmt, data, offset, value)
    # Repairing the length field and the CRC lets mutations reach the record checks.
    if fix_length and len(data) >= HEADER_SIZE:
        struct.pack_into(">i", data, LENGTH_OFFSET, len(data) - LOG_OVERHEAD)
    if fix_crc and len(data) >= HEADER_SIZE:
        write_crc(data)
    try:
        result = validate_produce_records(bytes(data), config, NOW)
    except InvalidRecords as e:
        assert isinstance(e.error_code, ErrorCode) and e.error_code != ErrorCode.NO_ERROR
        return
    (validated,) = result
    header = BatchHeader.parse(validated.data)
    assert compute_crc(validated.data) == header.crc
    assert len(list(iter_records(validated.data))) == validated.record_count
