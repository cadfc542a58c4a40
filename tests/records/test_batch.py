"""The v2 batch header against bytes packed by hand from Kafka's documented layout."""

from __future__ import annotations

import struct

import crc32c
import pytest

from minibroker.records.batch import (
    ATTRIBUTES_OFFSET,
    BASE_SEQUENCE_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    RECORDS_COUNT_OFFSET,
    BatchHeader,
    compute_crc,
    set_base_offset,
    set_max_timestamp,
    set_partition_leader_epoch,
    split_batches,
    stored_crc,
)

# One record: key b"k", value b"v", no headers (length 8: attributes, ts delta, offset delta,
# key length 1, "k", value length 1, "v", header count 0; all zigzag varints).
RECORD = bytes.fromhex("10000000026b027600")


def hand_batch(
    *,
    base_offset: int = 7,
    epoch: int = 3,
    attributes: int = 0x0013,  # lz4 codec bits, transactional
    producer_id: int = 1234,
    body: bytes = RECORD,
) -> bytes:
    after_crc = (
        struct.pack(">h", attributes)
        + struct.pack(">i", 0)  # last offset delta
        + struct.pack(">q", 1_700_000_000_000)  # base timestamp
        + struct.pack(">q", 1_700_000_000_005)  # max timestamp
        + struct.pack(">q", producer_id)
        + struct.pack(">h", 2)  # producer epoch
        + struct.pack(">i", 40)  # base sequence
        + struct.pack(">i", 1)  # records count
        + body
    )
    crc = crc32c.crc32c(after_crc)
    before_crc = (
        struct.pack(">q", base_offset)
        + struct.pack(">i", 4 + 1 + 4 + len(after_crc))  # epoch, magic, crc, rest
        + struct.pack(">i", epoch)
        + struct.pack(">b", 2)
    )
    return before_crc + struct.pack(">I", crc) + after_crc


def test_crc32c_is_castagnoli() -> None:
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_field_offsets_are_kafkas() -> None:
    assert HEADER_SIZE == 61
    assert (MAGIC_OFFSET, CRC_OFFSET, ATTRIBUTES_OFFSET) == (16, 17, 21)
    assert (MAX_TIMESTAMP_OFFSET, BASE_SEQUENCE_OFFSET, RECORDS_COUNT_OFFSET) == (35, 53, 57)


def test_parse_hand_packed_header() -> None:
    data = hand_batch()
    header = BatchHeader.parse(data)
    assert header == BatchHeader(
        base_offset=7,
        batch_length=len(data) - 12,
        partition_leader_epoch=3,
        magic=2,
        crc=crc32c.crc32c(data[21:]),
        attributes=0x13,
        last_offset_delta=0,
        base_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_005,
        producer_id=1234,
        producer_epoch=2,
        base_sequence=40,
        records_count=1,
    )
    assert header.size == len(data) == HEADER_SIZE + len(RECORD)
    assert header.compression == 3
    assert header.is_transactional
    assert not header.is_control
    assert header.timestamp_type == 0
    assert header.last_offset == 7


def test_attribute_bits() -> None:
    header = BatchHeader.parse(hand_batch(attributes=0x0028 | 4))
    assert header.compression == 4
    assert header.timestamp_type == 1
    assert header.is_control
    assert not header.is_transactional


def test_parse_at_position_and_short_buffer() -> None:
    data = hand_batch()
    assert BatchHeader.parse(b"xyz" + data, 3) == BatchHeader.parse(data)
    with pytest.raises(struct.error):
        BatchHeader.parse(data[:60])


def test_compute_crc_matches_stored() -> None:
    data = hand_batch()
    assert compute_crc(data) == stored_crc(data) == BatchHeader.parse(data).crc
    assert compute_crc(memoryview(data)) == compute_crc(bytearray(data))


def test_stamping_offset_and_epoch_keeps_crc_valid() -> None:
    data = bytearray(hand_batch())
    set_base_offset(data, 1_000_000)
    set_partition_leader_epoch(data, 9)
    header = BatchHeader.parse(data)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000_000, 9)
    assert compute_crc(data) == header.crc


def test_set_max_timestamp_rewrites_type_bit_and_crc() -> None:
    data = bytearray(hand_batch())
    set_max_timestamp(data, 1, 42)
    header = BatchHeader.parse(data)
    assert (header.timestamp_type, header.max_timestamp) == (1, 42)
    assert header.compression == 3 and header.is_transactional
    assert compute_crc(data) == header.crc
    assert data[HEADER_SIZE:] == RECORD
    set_max_timestamp(data, 0, 41)
    assert BatchHeader.parse(data).timestamp_type == 0
    assert compute_crc(data) == BatchHeader.parse(data).crc


def test_set_max_timestamp_unchanged_leaves_bytes() -> None:
    original = hand_batch()
    data = bytearray(original)
    set_max_timestamp(data, 0, 1_700_000_000_005)
    assert data == original


def test_split_batches_whole_partial_and_byte_by_byte() -> None:
    first = hand_batch(base_offset=0)
    second = hand_batch(base_offset=1, body=RECORD)
    data = first + second
    assert [bytes(b) for b in split_batches(data)] == [first, second]
    for cut in range(len(data) + 1):
        expected = [first, second][: (cut >= len(first)) + (cut == len(data))]
        assert [bytes(b) for b in split_batches(data[:cut])] == expected


def test_split_batches_returns_views_without_copying() -> None:
    data = bytearray(hand_batch())
    (view,) = split_batches(data)
    data[HEADER_SIZE] = 0x55
    assert view[HEADER_SIZE] == 0x55


def test_split_batches_stops_at_impossible_length() -> None:
    data = bytearray(hand_batch())
    struct.pack_into(">i", data, 8, 10)
    assert split_batches(data) == []
