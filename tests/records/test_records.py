"""Records: varints, hand-encoded golden batches, real clients' batches, control batches."""

from __future__ import annotations

import struct

import crc32c
import pytest

from minibroker.records.batch import HEADER_SIZE, BatchHeader, compute_crc
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from minibroker.records.records import (
    CorruptRecordsError,
    Record,
    RecordInput,
    build_batch,
    build_control_batch,
    encode_varint,
    iter_records,
    read_varint,
    read_varlong,
    scan_records,
)
from tests.records.golden import ClientBatch, client_batches

# key b"k", value b"v", no headers, timestamp delta 0, offset delta 0
RECORD_0 = bytes.fromhex("10000000026b027600")
# key null, value b"", header ("h", null), timestamp delta 5, offset delta 1
RECORD_1 = bytes.fromhex("12000a02010002026801")
BASE_TIMESTAMP = 1_700_000_000_000


def hand_batch(body: bytes, *, count: int = 2, attributes: int = 0, max_delta: int = 5) -> bytes:
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        count - 1,
        BASE_TIMESTAMP,
        BASE_TIMESTAMP + max_delta,
        -1,
        -1,
        -1,
        count,
    )
    after_crc += body
    head = struct.pack(">qiib", 0, 9 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


GOLDEN = hand_batch(RECORD_0 + RECORD_1)
GOLDEN_RECORDS = [
    Record(0, BASE_TIMESTAMP, b"k", b"v", []),
    Record(1, BASE_TIMESTAMP + 5, None, b"", [("h", None)]),
]


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
    ],
)
def test_varint_vectors(value: int, encoded: str) -> None:
    data = bytes.fromhex(encoded)
    assert encode_varint(value) == data
    assert read_varint(data, 0) == (value, len(data))
    assert read_varlong(data, 0) == (value, len(data))


def test_varlong_extremes() -> None:
    for value in (2**63 - 1, -(2**63), 2**40, -(2**40)):
        data = encode_varint(value)
        assert read_varlong(data + b"\x00", 0) == (value, len(data))


def test_overlong_varints_are_errors() -> None:
    with pytest.raises(CorruptRecordsError):
        read_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(CorruptRecordsError):
        read_varlong(b"\x80" * 10 + b"\x01", 0)
    with pytest.raises(IndexError):
        read_varint(b"\x80\x80", 0)


def test_build_batch_matches_hand_encoding() -> None:
    built = build_batch(
        [(b"k", b"v", [], BASE_TIMESTAMP), (None, b"", [("h", None)], BASE_TIMESTAMP + 5)]
    )
    assert built == GOLDEN


def test_iter_records_of_golden_batch() -> None:
    assert list(iter_records(GOLDEN)) == GOLDEN_RECORDS
    assert list(iter_records(memoryview(GOLDEN))) == GOLDEN_RECORDS


def test_offsets_add_the_base_offset() -> None:
    batch = build_batch([(b"a", b"1", [], 10), (b"b", b"2", [], 11)], base_offset=1000)
    assert [r.offset for r in iter_records(batch)] == [1000, 1001]


def test_log_append_time_replaces_record_timestamps() -> None:
    batch = hand_batch(RECORD_0 + RECORD_1, attributes=0x08, max_delta=99)
    assert [r.timestamp for r in iter_records(batch)] == [BASE_TIMESTAMP + 99] * 2


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_round_trip_every_codec(codec: int) -> None:
    records: list[RecordInput] = [
        (f"key-{i}".encode(), bytes([i % 256]) * i, [("n", str(i).encode()), ("z", None)], 5 + i)
        for i in range(300)
    ] + [(None, None, [], 1)]
    batch = build_batch(
        records,
        compression=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=9,
        is_transactional=True,
    )
    header = BatchHeader.parse(batch)
    assert header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 9)
    assert header.is_transactional and not header.is_control
    assert header.records_count == 301 and header.last_offset_delta == 300
    assert (header.base_timestamp, header.max_timestamp) == (5, 304)
    assert compute_crc(batch) == header.crc
    decoded = [(r.key, r.value, r.headers, r.timestamp) for r in iter_records(batch)]
    assert decoded == [(k, v, list(h), t) for k, v, h, t in records]


def test_compressed_batch_holds_compressed_record_bytes() -> None:
    batch = build_batch([(b"k", b"v", [], BASE_TIMESTAMP)], compression=GZIP)
    assert batch[HEADER_SIZE:] == compress(GZIP, RECORD_0)


def test_build_batch_needs_records() -> None:
    with pytest.raises(ValueError):
        build_batch([])


def test_control_batch_is_kafkas_end_transaction_marker() -> None:
    batch = build_control_batch(
        True, producer_id=4000, producer_epoch=7, coordinator_epoch=12, timestamp=123
    )
    header = BatchHeader.parse(batch)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 7, -1)
    assert header.records_count == 1
    (record,) = iter_records(batch)
    assert record.key == struct.pack(">hh", 0, 1)
    assert record.value == struct.pack(">hi", 0, 12)
    assert record.timestamp == 123
    abort = build_control_batch(
        False, producer_id=4000, producer_epoch=7, coordinator_epoch=12, timestamp=123
    )
    assert next(iter(iter_records(abort))).key == struct.pack(">hh", 0, 0)


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (RECORD_0, 2),  # fewer records than the count
        (RECORD_0 + RECORD_1, 1),  # records left over
        (RECORD_0[:-1], 1),  # record cut short
        (b"\x12" + RECORD_0[1:], 1),  # length says 9, body has 8
        (b"\x0e" + RECORD_0[1:], 1),  # length says 7, body has 8
        (b"\x01" + RECORD_0[1:], 1),  # negative length
        (RECORD_0[:3] + b"\x02" + RECORD_0[4:], 1),  # offset delta 1 for record 0
        (RECORD_0[:4] + b"\xfe\xff\xff\xff\x07" + RECORD_0[5:], 1),  # key length 2**30
        (RECORD_0 + RECORD_1[:6] + b"\x01" + RECORD_1[7:], 2),  # header count -1
        (RECORD_0 + RECORD_1[:6] + b"\x7e" + RECORD_1[7:], 2),  # 63 headers in 3 bytes
        (RECORD_0 + RECORD_1[:7] + b"\x01" + RECORD_1[8:], 2),  # null header key
        (RECORD_0[:2] + b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 1),  # 11-byte varlong
        (b"\xff\xff\xff\xff\x0f", 1),  # length -2**31
    ],
)
def test_malformed_records_are_errors(body: bytes, count: int) -> None:
    with pytest.raises(CorruptRecordsError):
        scan_records(body, 0, len(body), count)
    with pytest.raises(CorruptRecordsError):
        list(iter_records(hand_batch(body, count=count)))


def test_scan_summarises_timestamps_and_null_keys() -> None:
    summary = scan_records(GOLDEN, HEADER_SIZE, len(GOLDEN), 2)
    assert (summary.min_timestamp_delta, summary.max_timestamp_delta) == (0, 5)
    assert summary.null_keys == 1


def test_scan_many_records_past_one_byte_offset_deltas() -> None:
    batch = build_batch([(None, b"x", [], i) for i in range(200)])
    summary = scan_records(batch, HEADER_SIZE, len(batch), 200)
    assert (summary.min_timestamp_delta, summary.max_timestamp_delta) == (0, 199)
    assert summary.null_keys == 200


@pytest.mark.parametrize("client", client_batches(), ids=lambda c: c.id)
def test_real_client_batches_decode(client: ClientBatch) -> None:
    header = BatchHeader.parse(client.records)
    assert header.size == len(client.records)
    assert compute_crc(client.records) == header.crc
    records = list(iter_records(client.records))
    assert len(records) == header.records_count
    assert [r.offset for r in records] == list(range(len(records)))
    for record in records:
        assert record.key is not None and record.value is not None
        if client.client == "kcat":
            assert (record.key, record.headers) == (b"ik", [("h", b"i")])
            assert record.value.startswith(b"idem")
        else:
            n = record.key.removeprefix(b"k")
            assert record.value == (b"v" + n) * 20
            assert record.headers == [("h1", b"x" + n), ("trace", b"abc")]
        assert header.base_timestamp <= record.timestamp <= header.max_timestamp


def test_real_clients_cover_the_codecs() -> None:
    codecs = {BatchHeader.parse(c.records).compression for c in client_batches()}
    assert {NONE, GZIP, LZ4} <= codecs
