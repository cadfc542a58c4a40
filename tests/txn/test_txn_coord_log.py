"""`__transaction_state` records: Kafka's TransactionLogKey v0 and TransactionLogValue v0/v1."""

from __future__ import annotations

import struct

import pytest

from minibroker.txn.state import TxnState, TxnTransit
from minibroker.txn.state_log import (
    TxnRecordError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

ONGOING = TxnTransit(
    producer_id=42,
    last_producer_id=-1,
    producer_epoch=3,
    last_producer_epoch=-1,
    timeout_ms=60_000,
    state=TxnState.ONGOING,
    partitions=frozenset({("b", 1), ("a", 0), ("b", 0)}),
    start_ms=1_700_000_000_000,
    update_ms=1_700_000_000_500,
)


def test_key_bytes() -> None:
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"
    assert decode_key(b"\x00\x00\x00\x02tx") == "tx"
    with pytest.raises(TxnRecordError):
        decode_key(b"\x00\x01\x00\x02tx")


def test_value_v0_bytes() -> None:
    expected = (
        struct.pack(">hqhib", 0, 42, 3, 60_000, 1)
        + struct.pack(">i", 2)
        + b"\x00\x01a"
        + struct.pack(">ii", 1, 0)
        + b"\x00\x01b"
        + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    )
    assert encode_value(ONGOING) == expected
    assert decode_value(expected) == ONGOING


def test_empty_transactions_store_null_partitions() -> None:
    empty = TxnTransit(42, -1, 0, -1, 100, TxnState.EMPTY, frozenset(), -1, 5)
    encoded = encode_value(empty)
    assert encoded[2 + 8 + 2 + 4 + 1 :][:4] == b"\xff\xff\xff\xff"
    assert decode_value(encoded) == empty


def test_value_v1_flexible_with_tagged_previous_producer_id() -> None:
    tagged_previous = b"\x01" + b"\x00" + b"\x08" + struct.pack(">q", 41)
    v1 = (
        struct.pack(">hqhib", 1, 42, 3, 60_000, 1)
        + b"\x02"  # one topic (compact array: n + 1)
        + b"\x02a"  # compact string
        + b"\x02"
        + struct.pack(">i", 0)
        + b"\x00"  # the topic's tagged fields
        + struct.pack(">qq", 7, 6)
        + tagged_previous
    )
    decoded = decode_value(v1)
    assert decoded.partitions == {("a", 0)}
    assert (decoded.producer_id, decoded.last_producer_id) == (42, 41)
    assert (decoded.update_ms, decoded.start_ms) == (7, 6)


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_truncated_values_are_refused(cut: int) -> None:
    with pytest.raises(TxnRecordError):
        decode_value(encode_value(ONGOING)[:cut])
