"""`scan_records` recognises common records inline; on any input, valid or corrupted, it must
answer exactly what decoding every record in general (`_scan_record`) answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.records.records import (
    _INT64_MAX,
    _INT64_MIN,
    CorruptRecordsError,
    RecordsSummary,
    _scan_record,
    encode_record,
    scan_records,
)


def _scan_in_general(buf: bytes, pos: int, end: int, count: int) -> RecordsSummary:
    if count <= 0:
        raise CorruptRecordsError(f"invalid record count {count}")
    deltas = []
    null_keys = 0
    for index in range(count):
        pos, delta, null_key = _scan_record(buf, pos, end, index)
        deltas.append(delta)
        null_keys += null_key
    if pos != end:
        raise CorruptRecordsError(
            "Incorrect declared batch size, records still remaining in file", count - 1
        )
    return RecordsSummary(
        min(deltas, default=_INT64_MAX), max(deltas, default=_INT64_MIN), null_keys
    )


def _outcome(scan: Any, buf: bytes, pos: int, end: int, count: int) -> Any:
    try:
        return scan(memoryview(buf), pos, end, count)
    except CorruptRecordsError as e:
        return (e.message, e.record_index)


_sizes = st.sampled_from([0, 1, 10, 63, 64, 100, 1000, 8100, 8200, 20000])
_blobs = st.one_of(st.none(), _sizes.map(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)))
_records = st.lists(
    st.tuples(
        st.one_of(st.integers(-70, 70), st.integers(-(2**40), 2**40)),
        st.one_of(st.none(), st.binary(max_size=80)),
        _blobs,
        st.lists(
            st.tuples(st.text(max_size=3), st.one_of(st.none(), st.binary(max_size=3))), max_size=2
        ),
        st.integers(0, 20).map(lambda n: 0 if n else 1),  # now and then a wrong offset delta
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(_records, st.data())
def test_inline_path_agrees_with_general_decoding(records: Any, data: Any) -> None:
    body = bytearray(
        b"".join(
            encode_record(index + shift, delta, key, value, headers)
            for index, (delta, key, value, headers, shift) in enumerate(records)
        )
    )
    prefix = data.draw(st.integers(0, 3))
    buf = bytes(prefix) + bytes(body)
    count = len(records) + data.draw(st.sampled_from([0, 0, 0, -1, 1]))
    end = len(buf)
    assert _outcome(scan_records, buf, prefix, end, count) == _outcome(
        _scan_in_general, buf, prefix, end, count
    )
    corrupted = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        corrupted[data.draw(st.integers(0, len(corrupted) - 1))] = data.draw(st.integers(0, 255))
    end = data.draw(st.integers(prefix, len(corrupted)))
    assert _outcome(scan_records, bytes(corrupted), prefix, end, count) == _outcome(
        _scan_in_general, bytes(corrupted), prefix, end, count
    )


def test_many_records_take_two_and_three_byte_offset_deltas() -> None:
    count = 20000
    body = b"".join(encode_record(i, i % 50, None, b"v", []) for i in range(count))
    summary = scan_records(memoryview(body), 0, len(body), count)
    assert summary == RecordsSummary(0, 49, count)
    assert summary == _scan_in_general(body, 0, len(body), count)
