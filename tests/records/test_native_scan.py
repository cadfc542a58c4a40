"""The C accelerator's record walk against the pure-Python reference: on valid and corrupted
records it must answer exactly what `scan_records_in_python` answers, or decline (None) when
the pure scan rejects, so that the pure scan raises its own error.

These tests call the built extension directly, so they run whatever MINIBROKER_PURE_PYTHON
says; they are skipped only when the extension was not built (no compiler at install)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.records import accel, records
from minibroker.records.records import (
    CorruptRecordsError,
    RecordsSummary,
    encode_record,
    encode_varint,
    scan_records,
    scan_records_in_python,
)

native = pytest.importorskip("minibroker.records._accel")


def _pure(buf: bytes, pos: int, end: int, count: int, max_offset_delta: int | None) -> Any:
    try:
        return scan_records_in_python(
            memoryview(buf), pos, end, count, max_offset_delta=max_offset_delta
        )
    except CorruptRecordsError as e:
        return (e.message, e.record_index)


def _agree(buf: bytes, pos: int, end: int, count: int, max_offset_delta: int | None) -> None:
    expected = _pure(buf, pos, end, count, max_offset_delta)
    answer = native.scan(memoryview(buf), pos, end, count, max_offset_delta)
    if isinstance(expected, RecordsSummary):
        assert answer is not None
        assert RecordsSummary(*answer) == expected
    else:
        assert answer is None
    # and the dispatching entry point, whichever path is active, answers as the reference
    try:
        dispatched: Any = scan_records(buf, pos, end, count, max_offset_delta=max_offset_delta)
    except CorruptRecordsError as e:
        dispatched = (e.message, e.record_index)
    assert dispatched == expected


_sizes = st.sampled_from([0, 1, 10, 63, 64, 100, 1000, 8100, 8200, 20000])
_blobs = st.one_of(st.none(), _sizes.map(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)))
_timestamp_deltas = st.one_of(
    st.integers(-70, 70), st.integers(-(2**40), 2**40), st.integers(-(2**63), 2**63 - 1)
)
_records = st.lists(
    st.tuples(
        _timestamp_deltas,
        st.one_of(st.none(), st.binary(max_size=80)),
        _blobs,
        st.lists(
            st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=3
        ),
        st.integers(0, 20).map(lambda n: (1, 2, -1)[n] if n < 3 else 0),  # now and then a bad delta
    ),
    min_size=1,
    max_size=40,
)


def _body(records_: Any) -> bytes:
    return b"".join(
        encode_record(index + shift, delta, key, value, headers)
        for index, (delta, key, value, headers, shift) in enumerate(records_)
    )


@settings(max_examples=500, deadline=None)
@given(_records, st.data())
def test_native_scan_agrees_on_valid_and_corrupted_records(records_: Any, data: Any) -> None:
    prefix = data.draw(st.integers(0, 3))
    buf = bytes(prefix) + _body(records_)
    count = len(records_) + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    stored = data.draw(st.one_of(st.none(), st.integers(-2, len(records_) + 3)))
    _agree(buf, prefix, len(buf), count, stored)
    corrupted = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 4))):
        corrupted[data.draw(st.integers(0, len(corrupted) - 1))] = data.draw(st.integers(0, 255))
    end = data.draw(st.integers(prefix, len(corrupted)))
    _agree(bytes(corrupted), prefix, end, count, stored)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 4), st.integers(-1, 6), st.data())
def test_native_scan_agrees_on_arbitrary_bytes(
    blob: bytes, pos: int, count: int, data: Any
) -> None:
    end = data.draw(st.integers(0, len(blob)))
    stored = data.draw(st.one_of(st.none(), st.integers(-1, 8)))
    _agree(blob, min(pos, end), end, count, stored)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**31), 2**31 - 1),  # record length
            st.integers(-(2**63), 2**63 - 1),  # timestamp delta
            st.integers(-(2**31), 2**31 - 1),  # key length
            st.integers(-(2**31), 2**31 - 1),  # header count
        ),
        min_size=1,
        max_size=3,
    )
)
def test_native_scan_agrees_on_wild_lengths(fields: Any) -> None:
    """Lengths and counts anywhere in their range, overlong and negative ones included."""
    buf = b"".join(
        encode_varint(length)
        + b"\x00"
        + encode_varint(delta)
        + encode_varint(index)
        + encode_varint(key)
        + encode_varint(-1)
        + encode_varint(headers)
        for index, (length, delta, key, headers) in enumerate(fields)
    )
    _agree(buf, 0, len(buf), len(fields), None)


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff\xff\xff\xff\x0f",  # the largest 5-byte varint
        b"\xff\xff\xff\xff\x7f",  # bits past 32 in the fifth byte, masked as Kafka does
        b"\xff\xff\xff\xff\xff\x01",  # 6 bytes: too long
        b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # a 10-byte varlong
        b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # 11 bytes
    ],
)
def test_overlong_and_extreme_varints(raw: bytes) -> None:
    for offset in range(3):  # as the length, the timestamp delta, the offset delta
        fields = [encode_varint(10), b"\x00", encode_varint(0), encode_varint(0), b"\x01\x01\x00"]
        fields[offset * 2 if offset < 2 else 3] = raw
        buf = b"".join(fields)
        _agree(buf, 0, len(buf), 1, None)


def test_many_records_with_multibyte_offset_deltas() -> None:
    count = 20000
    body = b"".join(
        encode_record(i, i % 50 - 7, None if i % 3 else b"k", b"v", []) for i in range(count)
    )
    assert native.scan(body, 0, len(body), count, None) == (-7, 42, count - (count + 2) // 3)
    _agree(body, 0, len(body), count, None)
    _agree(body, 0, len(body), count, count - 1)


def test_out_of_range_arguments_leave_the_answer_to_python() -> None:
    body = encode_record(0, 0, None, b"v", [])
    assert native.scan(body, 0, len(body), 2**70, None) is None
    assert native.scan(body, 0, len(body), 1, 2**70) is None
    assert native.scan(body, 0, len(body) + 1, 1, None) is None
    assert native.scan(memoryview(body + body)[::2], 0, len(body), 1, None) is None
    assert native.scan(body, 0, len(body), 1, None) == (0, 0, 1)


def test_the_active_path_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(accel.PURE_PYTHON_ENV, "1")
    assert accel._load_scan() is None
    monkeypatch.setenv(accel.PURE_PYTHON_ENV, "0")
    assert accel._load_scan() is native.scan
    monkeypatch.delenv(accel.PURE_PYTHON_ENV)
    assert accel._load_scan() is native.scan
    expected = accel.PURE_PYTHON if records.native_scan is None else accel.NATIVE
    assert accel.active_path() == expected
