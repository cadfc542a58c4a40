"""`__consumer_offsets` key/value formats: golden bytes, round trips, partitioning."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.groups.records import (
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from minibroker.internal.topic import java_string_hash, partition_for


def test_offset_key_golden_bytes() -> None:
    assert encode_offset_key(OffsetKey("g", "t", 3)) == (
        b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    )


def test_group_key_golden_bytes() -> None:
    assert encode_group_key(GroupKey("grp")) == b"\x00\x02\x00\x03grp"


def test_offset_value_v3_golden_bytes() -> None:
    encoded = encode_offset_value(OffsetValue(42, 7, "meta", 1000))
    assert encoded == struct.pack(">hqih4sq", 3, 42, 7, 4, b"meta", 1000)


def test_offset_value_with_expiry_is_v1() -> None:
    encoded = encode_offset_value(OffsetValue(42, 7, "", 1000, 2000))
    assert encoded == struct.pack(">hqhqq", 1, 42, 0, 1000, 2000)
    assert decode_offset_value(encoded) == OffsetValue(42, -1, "", 1000, 2000)


def test_offset_value_v0_as_old_kafka_wrote_it() -> None:
    assert decode_offset_value(struct.pack(">hqh2sq", 0, 5, 2, b"md", 9)) == OffsetValue(
        5, -1, "md", 9
    )


def test_key_version_0_is_an_offset_key() -> None:
    assert decode_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x01") == OffsetKey("g", "t", 1)


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(RecordFormatError):
        decode_key(b"\x00\x07\x00\x01g")
    with pytest.raises(RecordFormatError):
        decode_offset_value(struct.pack(">hq", 9, 1))
    with pytest.raises(RecordFormatError):
        decode_offset_value(b"\x00\x03\x00")


def test_group_value_round_trip() -> None:
    value = GroupValue(
        "consumer",
        4,
        "range",
        "m-1",
        123,
        [
            MemberValue("m-1", None, "c1", "/127.0.0.1", 300, 100, b"sub", b"asg"),
            MemberValue("m-2", "static-2", "c2", "", 300, 100, b"", b""),
        ],
    )
    assert decode_group_value(encode_group_value(value)) == value


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupValue("consumer", 2, None, None, 5, [])
    encoded = encode_group_value(value)
    assert encoded == struct.pack(">hh8sihhqi", 3, 8, b"consumer", 2, -1, -1, 5, 0)
    assert decode_group_value(encoded) == value


@given(st.integers(0, 2**63 - 1), st.integers(-1, 2**31 - 1), st.text(max_size=20))
def test_offset_value_round_trip(offset: int, epoch: int, metadata: str) -> None:
    value = OffsetValue(offset, epoch, metadata, 17)
    assert decode_offset_value(encode_offset_value(value)) == value


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("test") == 3556498
    assert java_string_hash("polygenelubricants") == -(2**31)  # Java's famous MIN_VALUE hash
    assert java_string_hash("\U0001f600") == 1772899  # surrogate pairs count as two units


def test_partition_for_is_kafkas() -> None:
    assert partition_for("test", 50) == 3556498 % 50
    assert partition_for("polygenelubricants", 50) == 0
    assert all(0 <= partition_for(f"g{i}", 7) < 7 for i in range(100))
