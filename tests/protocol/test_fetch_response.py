"""The hand-framed Fetch response is the codec's encoding, byte for byte, for v4-12."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import encode_response
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import (
    FetchedPartition,
    encode_fetch_response,
    fetch_response_message,
)

int64s = st.integers(-(2**63), 2**63 - 1)
partitions = st.builds(
    FetchedPartition,
    index=st.integers(0, 2**31 - 1),
    error=st.sampled_from(list(ErrorCode)),
    high_watermark=int64s,
    last_stable_offset=int64s,
    log_start_offset=int64s,
    aborted_transactions=st.none() | st.lists(st.tuples(int64s, int64s), max_size=3),
    records=st.binary(max_size=300),
)
topics = st.lists(
    st.tuples(st.text(min_size=1, max_size=200), st.lists(partitions, max_size=3)), max_size=3
)


@settings(max_examples=300, deadline=None)
@given(
    version=st.integers(4, 12),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    error=st.sampled_from([ErrorCode.NO_ERROR, ErrorCode.FETCH_SESSION_ID_NOT_FOUND]),
    fetched=topics,
)
def test_hand_framed_equals_the_codec(
    version: int, correlation_id: int, error: ErrorCode, fetched: list[Any]
) -> None:
    parts = encode_fetch_response(version, correlation_id, error, fetched)
    message = fetch_response_message(version, error, fetched)
    assert b"".join(parts) == encode_response(ApiKey.Fetch, version, correlation_id, message)


def test_records_are_parts_of_their_own_not_copies() -> None:
    records = b"r" * 100
    partition = FetchedPartition(0, ErrorCode.NO_ERROR, 5, 5, 0, None, records)
    parts = encode_fetch_response(12, 7, ErrorCode.NO_ERROR, [("t", [partition, partition])])
    assert [part is records for part in parts] == [False, True, False, True, False]
