"""Every Produce validation rule, through hand-built bytes over TCP.

Each bad batch goes in one request with a good batch for another partition: the bad
partition gets Kafka's error code and stores nothing, the good one is appended.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import write_crc
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

NOW_MS = int(time.time() * 1000)
ATTRIBUTES = 21
LAST_OFFSET_DELTA = 23
RECORDS_COUNT = 57


def _good(value: bytes = b"value", timestamp: int | None = None) -> bytearray:
    return bytearray(build_batch([(b"key", value, [], NOW_MS if timestamp is None else timestamp)]))


def _two_records() -> bytearray:
    return bytearray(build_batch([(b"a", b"1", [], NOW_MS), (b"b", b"2", [], NOW_MS)]))


def _patched(batch: bytearray, offset: int, fmt: str, value: int, crc: bool = True) -> bytearray:
    struct.pack_into(fmt, batch, offset, value)
    if crc:
        write_crc(batch)
    return batch


def _second_record_offset_delta_wrong() -> bytearray:
    batch = _two_records()
    first_length = batch[61] >> 1
    second_record = 61 + 1 + first_length
    # record: length varint, attributes int8, timestamp delta varint (0), offset delta varint
    assert batch[second_record + 2] == 0 and batch[second_record + 3] == 2
    batch[second_record + 3] = 4
    write_crc(batch)
    return batch


CASES: dict[str, tuple[Callable[[], bytes | bytearray], ErrorCode]] = {
    "shorter than a batch header": (lambda: bytes(_good())[:40], ErrorCode.CORRUPT_MESSAGE),
    "length field too long": (
        lambda: _patched(_good(), 8, ">i", 500, crc=False),
        ErrorCode.CORRUPT_MESSAGE,
    ),
    "magic 1": (lambda: _patched(_good(), 16, ">b", 1, crc=False), ErrorCode.INVALID_RECORD),
    "bad crc": (lambda: _patched(_good(), 17, ">I", 12345, crc=False), ErrorCode.CORRUPT_MESSAGE),
    "codec 5": (
        lambda: _patched(_good(), ATTRIBUTES, ">h", 5),
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    ),
    "control batch": (
        lambda: _patched(_good(), ATTRIBUTES, ">h", 0x20),
        ErrorCode.INVALID_RECORD,
    ),
    "last offset delta is not count - 1": (
        lambda: _patched(_two_records(), LAST_OFFSET_DELTA, ">i", 5),
        ErrorCode.INVALID_RECORD,
    ),
    "record count lies": (
        lambda: _patched(_two_records(), RECORDS_COUNT, ">i", 1),
        ErrorCode.INVALID_RECORD,
    ),
    "record offset delta out of order": (
        _second_record_offset_delta_wrong,
        ErrorCode.INVALID_RECORD,
    ),
    "timestamp two hours ahead": (
        lambda: _good(timestamp=NOW_MS + 2 * 3_600_000),
        ErrorCode.INVALID_TIMESTAMP,
    ),
    "larger than max.message.bytes": (
        lambda: _good(value=b"x" * 2000),
        ErrorCode.MESSAGE_TOO_LARGE,
    ),
    "corrupt gzip payload": (
        lambda: _patched(_good(), ATTRIBUTES, ">h", 1),
        ErrorCode.INVALID_RECORD,
    ),
}


@pytest.fixture(scope="module")
def small_broker() -> ThreadedBroker:
    with ThreadedBroker(settings={"message.max.bytes": "1000"}) as running:
        yield running  # type: ignore[misc]


def _end_offset(client: WireClient, topic: str, partition: int) -> int:
    response = client.call(
        ApiKey.ListOffsets,
        1,
        replica_id=-1,
        topics=[{"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}],
    )
    return int(response.topics[0].partitions[0].offset)


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_rejects_only_the_bad_partition(small_broker: ThreadedBroker, case: str) -> None:
    make_bad, expected = CASES[case]
    topic = "v-" + "".join(c if c.isalnum() else "-" for c in case)
    with WireClient(small_broker.bootstrap_servers) as client:
        created = client.call(
            ApiKey.CreateTopics,
            4,
            topics=[{"name": topic, "num_partitions": 2, "replication_factor": 1}],
            timeout_ms=1000,
            validate_only=False,
        )
        assert created.topics[0].error_code == ErrorCode.NO_ERROR
        response = client.call(
            ApiKey.Produce,
            9,
            acks=-1,
            timeout_ms=1000,
            topic_data=[
                {
                    "name": topic,
                    "partition_data": [
                        {"index": 0, "records": bytes(make_bad())},
                        {"index": 1, "records": bytes(_good())},
                    ],
                }
            ],
        )
        bad, good = response.responses[0].partition_responses
        assert (bad.error_code, good.error_code) == (expected, ErrorCode.NO_ERROR)
        assert bad.base_offset == -1 and good.base_offset == 0
        assert bad.error_message
        assert _end_offset(client, topic, 0) == 0
        assert _end_offset(client, topic, 1) == 1
