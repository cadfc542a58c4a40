"""KIP-848 consumer-group records in `__consumer_offsets`: byte layouts written by hand from
Kafka 4.3's record definitions, round trips, tombstones, unknown tagged fields, and a broker
that restarts and compacts a `__consumer_offsets` holding them."""

from __future__ import annotations

import struct
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.groups.consumer_records import (
    CONSUMER_GROUP_RECORD_TYPES,
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    PartitionRacks,
    TopicMetadata,
    TopicPartitions,
    decode_consumer_group_record,
    encode_consumer_group_record,
    record_type,
)
from minibroker.groups.records import RecordFormatError, decode_key
from minibroker.groups.store import LoadedConsumerRecord, LoadedOffset
from minibroker.log.segmented import SegmentedLog
from minibroker.server.broker import Broker
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.conftest import GROUP_SETTINGS
from tests.groups.test_group_wire import create_topic, read_all_records
from tests.groups.wirehelp import commit, fetch_offsets
from tests.wire import WireClient

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def i16(value: int) -> bytes:
    return struct.pack(">h", value)


def i32(value: int) -> bytes:
    return struct.pack(">i", value)


def i64(value: int) -> bytes:
    return struct.pack(">q", value)


def key_string(text: str) -> bytes:
    return i16(len(text)) + text.encode()


def compact(text: str) -> bytes:
    """A compact string of fewer than 127 bytes: length + 1 in one varint byte."""
    return bytes([len(text) + 1]) + text.encode()


# ---- keys: INT16 type, then non-flexible strings -----------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (ConsumerGroupMetadataKey("grp"), i16(3) + key_string("grp")),
        (ConsumerGroupPartitionMetadataKey("grp"), i16(4) + key_string("grp")),
        (
            ConsumerGroupMemberMetadataKey("grp", "m1"),
            i16(5) + key_string("grp") + key_string("m1"),
        ),
        (ConsumerGroupTargetAssignmentMetadataKey("grp"), i16(6) + key_string("grp")),
        (
            ConsumerGroupTargetAssignmentMemberKey("grp", "m1"),
            i16(7) + key_string("grp") + key_string("m1"),
        ),
        (
            ConsumerGroupCurrentMemberAssignmentKey("grp", "m1"),
            i16(8) + key_string("grp") + key_string("m1"),
        ),
        (
            ConsumerGroupRegularExpressionKey("grp", "t.*"),
            i16(16) + key_string("grp") + key_string("t.*"),
        ),
    ],
)
def test_key_layouts(key: ConsumerGroupKey, expected: bytes) -> None:
    key_bytes, value_bytes = encode_consumer_group_record(key, None)
    assert (key_bytes, value_bytes) == (expected, None)
    assert decode_consumer_group_record(key_bytes, None) == ConsumerGroupRecord(key, None)
    assert record_type(key_bytes) in CONSUMER_GROUP_RECORD_TYPES


# ---- values: INT16 version 0, then a flexible struct --------------------------------------


def test_group_metadata_value_without_and_with_metadata_hash() -> None:
    key = ConsumerGroupMetadataKey("g")
    _, plain = encode_consumer_group_record(key, ConsumerGroupMetadataValue(7))
    assert plain == i16(0) + i32(7) + b"\x00"  # no tagged fields: MetadataHash is its default
    _, hashed = encode_consumer_group_record(key, ConsumerGroupMetadataValue(7, 0x0102))
    # one tagged field: tag 0, 8 bytes, the INT64 hash
    assert hashed == i16(0) + i32(7) + b"\x01" + b"\x00\x08" + i64(0x0102)
    assert decode_consumer_group_record(i16(3) + key_string("g"), hashed).value == (
        ConsumerGroupMetadataValue(7, 0x0102)
    )


def test_member_metadata_value_layout() -> None:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=None,
        rack_id="r",
        client_id="cid",
        client_host="/h",
        subscribed_topic_names=["a", "bb"],
        subscribed_topic_regex=None,
        rebalance_timeout_ms=300000,
        server_assignor="uniform",
    )
    expected = (
        i16(0)
        + b"\x00"  # InstanceId null
        + compact("r")
        + compact("cid")
        + compact("/h")
        + b"\x03"  # two topic names
        + compact("a")
        + compact("bb")
        + b"\x00"  # SubscribedTopicRegex null
        + i32(300000)
        + compact("uniform")
        + b"\x00"  # no tagged fields: ClassicMemberMetadata null
    )
    _, encoded = encode_consumer_group_record(ConsumerGroupMemberMetadataKey("g", "m"), value)
    assert encoded == expected


def test_member_metadata_of_a_classic_member_is_tag_0() -> None:
    classic = ClassicMemberMetadata(45000, [ClassicProtocol("range", b"\x01\x02")])
    value = ConsumerGroupMemberMetadataValue(None, None, "c", "h", classic_member_metadata=classic)
    payload = (
        b"\x01"  # a nullable tagged struct: present
        + i32(45000)
        + b"\x02"  # one protocol
        + compact("range")
        + b"\x03\x01\x02"  # compact bytes
        + b"\x00"  # ClassicProtocol tagged fields
        + b"\x00"  # ClassicMemberMetadata tagged fields
    )
    expected = (
        i16(0)
        + b"\x00\x00"
        + compact("c")
        + compact("h")
        + b"\x01"  # no topic names
        + b"\x00"
        + i32(-1)
        + b"\x00"
        + b"\x01"  # one tagged field
        + b"\x00"  # tag 0
        + bytes([len(payload)])
        + payload
    )
    key = ConsumerGroupMemberMetadataKey("g", "m")
    _, encoded = encode_consumer_group_record(key, value)
    assert encoded == expected
    assert decode_consumer_group_record(encode_consumer_group_record(key, None)[0], expected) == (
        ConsumerGroupRecord(key, value)
    )


def test_target_assignment_metadata_value_with_timestamp() -> None:
    key = ConsumerGroupTargetAssignmentMetadataKey("g")
    _, plain = encode_consumer_group_record(key, ConsumerGroupTargetAssignmentMetadataValue(4))
    assert plain == i16(0) + i32(4) + b"\x00"
    value = ConsumerGroupTargetAssignmentMetadataValue(4, 1_700_000_000_000)
    _, stamped = encode_consumer_group_record(key, value)
    assert stamped == i16(0) + i32(4) + b"\x01\x00\x08" + i64(1_700_000_000_000)


def test_target_assignment_member_value_layout() -> None:
    value = ConsumerGroupTargetAssignmentMemberValue([TopicPartitions(TOPIC, [0, 2])])
    _, encoded = encode_consumer_group_record(
        ConsumerGroupTargetAssignmentMemberKey("g", "m"), value
    )
    assert encoded == (
        i16(0) + b"\x02" + TOPIC.bytes + b"\x03" + i32(0) + i32(2) + b"\x00" + b"\x00"
    )


def test_current_member_assignment_layout_with_assignment_epochs() -> None:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=5,
        previous_member_epoch=4,
        state=0,
        assigned_partitions=[TopicPartitions(TOPIC, [1], assignment_epochs=[3])],
        partitions_pending_revocation=[TopicPartitions(TOPIC, [0])],
    )
    key = ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    key_bytes, encoded = encode_consumer_group_record(key, value)
    epochs = b"\x02" + i32(3)  # compact array of one INT32
    assert encoded == (
        i16(0)
        + i32(5)
        + i32(4)
        + b"\x00"  # State, INT8
        + b"\x02"
        + TOPIC.bytes
        + b"\x02"
        + i32(1)
        + b"\x01\x00"  # one tagged field, tag 0 (AssignmentEpochs)
        + bytes([len(epochs)])
        + epochs
        + b"\x02"
        + TOPIC.bytes
        + b"\x02"
        + i32(0)
        + b"\x00"  # AssignmentEpochs null: not written
        + b"\x00"
    )
    assert decode_consumer_group_record(key_bytes, encoded).value == value


def test_regular_expression_value_layout() -> None:
    value = ConsumerGroupRegularExpressionValue(["t1", "t2"], version=12, timestamp=99)
    _, encoded = encode_consumer_group_record(ConsumerGroupRegularExpressionKey("g", "t.*"), value)
    assert encoded == i16(0) + b"\x03" + compact("t1") + compact("t2") + i64(12) + i64(99) + b"\x00"


def test_partition_metadata_as_kafka_3_x_wrote_it_is_read() -> None:
    written = (
        i16(0)
        + b"\x02"  # one topic
        + TOPIC.bytes
        + compact("orders")
        + i32(3)
        + b"\x02"  # one PartitionMetadata
        + i32(0)
        + b"\x02"
        + compact("rack-a")
        + b"\x00"
        + b"\x00"
        + b"\x00"
    )
    record = decode_consumer_group_record(i16(4) + key_string("g"), written)
    assert record == ConsumerGroupRecord(
        ConsumerGroupPartitionMetadataKey("g"),
        ConsumerGroupPartitionMetadataValue(
            [TopicMetadata(TOPIC, "orders", 3, [PartitionRacks(0, ["rack-a"])])]
        ),
    )
    assert encode_consumer_group_record(record.key, record.value)[1] == written


# ---- unknown tagged fields, bad input -----------------------------------------------------


def test_unknown_tagged_fields_are_kept_and_written_back_in_tag_order() -> None:
    # Epoch 7; tags: 0 = MetadataHash 9, 1 (e.g. a later CreationTimeMs) and 5 unknown.
    written = (
        i16(0) + i32(7) + b"\x03" + b"\x00\x08" + i64(9) + b"\x01\x08" + i64(-1) + b"\x05\x01z"
    )
    record = decode_consumer_group_record(i16(3) + key_string("g"), written)
    assert record.value == ConsumerGroupMetadataValue(7, 9, {1: i64(-1), 5: b"z"})
    assert encode_consumer_group_record(record.key, record.value)[1] == written


def test_unknown_tagged_field_of_a_nested_struct_is_skipped() -> None:
    written = i16(0) + b"\x02" + TOPIC.bytes + b"\x01" + b"\x01\x07\x02ab" + b"\x00"
    record = decode_consumer_group_record(i16(7) + key_string("g") + key_string("m"), written)
    assert record.value == ConsumerGroupTargetAssignmentMemberValue([TopicPartitions(TOPIC, [])])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (i16(3) + key_string("g"), i16(1) + i32(7) + b"\x00"),  # value version 1
        (i16(3) + key_string("g"), i16(0) + i32(7)),  # no tagged-field trailer
        (i16(3) + key_string("g"), i16(0) + i32(7) + b"\x00\x00"),  # trailing byte
        (i16(5) + key_string("g"), i16(0)),  # member key without a member id
        (i16(9) + key_string("g"), i16(0)),  # a share-group record
        (i16(2) + key_string("g"), None),  # classic group metadata
        (i16(8) + key_string("g") + key_string("m"), i16(0) + i32(1) + i32(0) + b"\x00\x05"),
    ],
)
def test_bad_records_raise_record_format_error(key: bytes, value: bytes | None) -> None:
    with pytest.raises(RecordFormatError):
        decode_consumer_group_record(key, value)


def test_classic_decoder_does_not_take_consumer_group_keys() -> None:
    with pytest.raises(RecordFormatError):
        decode_key(i16(3) + key_string("g"))


# ---- round trips --------------------------------------------------------------------------

names = st.text(max_size=20)
ints = st.integers(-(2**31), 2**31 - 1)
longs = st.integers(-(2**63), 2**63 - 1)
topic_partitions = st.builds(
    TopicPartitions,
    st.uuids(),
    st.lists(ints, max_size=4),
    st.none() | st.lists(ints, max_size=4),
)
unknown_tags = st.dictionaries(st.integers(10, 300), st.binary(max_size=200), max_size=2)
values: st.SearchStrategy[tuple[ConsumerGroupKey, ConsumerGroupValue]] = st.one_of(
    st.tuples(
        st.builds(ConsumerGroupMetadataKey, names),
        st.builds(ConsumerGroupMetadataValue, ints, longs, unknown_tags),
    ),
    st.tuples(
        st.builds(ConsumerGroupPartitionMetadataKey, names),
        st.builds(
            ConsumerGroupPartitionMetadataValue,
            st.lists(
                st.builds(
                    TopicMetadata,
                    st.uuids(),
                    names,
                    ints,
                    st.lists(st.builds(PartitionRacks, ints, st.lists(names, max_size=2))),
                ),
                max_size=3,
            ),
        ),
    ),
    st.tuples(
        st.builds(ConsumerGroupMemberMetadataKey, names, names),
        st.builds(
            ConsumerGroupMemberMetadataValue,
            st.none() | names,
            st.none() | names,
            names,
            names,
            st.lists(names, max_size=3),
            st.none() | names,
            ints,
            st.none() | names,
            st.none()
            | st.builds(
                ClassicMemberMetadata,
                ints,
                st.lists(st.builds(ClassicProtocol, names, st.binary(max_size=300)), max_size=2),
            ),
            unknown_tags,
        ),
    ),
    st.tuples(
        st.builds(ConsumerGroupTargetAssignmentMetadataKey, names),
        st.builds(ConsumerGroupTargetAssignmentMetadataValue, ints, longs, unknown_tags),
    ),
    st.tuples(
        st.builds(ConsumerGroupTargetAssignmentMemberKey, names, names),
        st.builds(
            ConsumerGroupTargetAssignmentMemberValue,
            st.lists(st.builds(TopicPartitions, st.uuids(), st.lists(ints, max_size=4))),
        ),
    ),
    st.tuples(
        st.builds(ConsumerGroupCurrentMemberAssignmentKey, names, names),
        st.builds(
            ConsumerGroupCurrentMemberAssignmentValue,
            ints,
            ints,
            st.integers(-128, 127),
            st.lists(topic_partitions, max_size=3),
            st.lists(topic_partitions, max_size=3),
            unknown_tags,
        ),
    ),
    st.tuples(
        st.builds(ConsumerGroupRegularExpressionKey, names, names),
        st.builds(ConsumerGroupRegularExpressionValue, st.lists(names, max_size=3), longs, longs),
    ),
)


@given(values)
def test_round_trip(pair: tuple[ConsumerGroupKey, ConsumerGroupValue]) -> None:
    key, value = pair
    key_bytes, value_bytes = encode_consumer_group_record(key, value)
    assert decode_consumer_group_record(key_bytes, value_bytes) == ConsumerGroupRecord(key, value)
    assert decode_consumer_group_record(key_bytes, None) == ConsumerGroupRecord(key, None)


# ---- a broker: restart and compaction -----------------------------------------------------

GROUP = "cg"


def consumer_group_records(epoch: int) -> list[tuple[bytes, bytes | None]]:
    return [
        encode_consumer_group_record(
            ConsumerGroupMemberMetadataKey(GROUP, "m1"),
            ConsumerGroupMemberMetadataValue(None, None, "c", "h", ["t"]),
        ),
        encode_consumer_group_record(
            ConsumerGroupMetadataKey(GROUP), ConsumerGroupMetadataValue(epoch)
        ),
        encode_consumer_group_record(
            ConsumerGroupCurrentMemberAssignmentKey(GROUP, "m1"),
            ConsumerGroupCurrentMemberAssignmentValue(epoch, epoch - 1, 0),
        ),
    ]


def append(broker: ThreadedBroker, records: list[tuple[bytes, bytes | None]]) -> None:
    async def run() -> None:
        assert broker.broker is not None
        broker.broker.groups.store.append(GROUP, records, int(time.time() * 1000))

    broker.call(run())


def loaded_consumer_records(broker: ThreadedBroker) -> list[ConsumerGroupRecord]:
    async def run() -> list[ConsumerGroupRecord]:
        running: Broker | None = broker.broker
        assert running is not None
        return [
            item.record
            for item in running.groups.store.load_with_consumer_records()
            if isinstance(item, LoadedConsumerRecord)
        ]

    found = broker.call(run())
    assert isinstance(found, list)
    return found


def loaded_offsets(broker: ThreadedBroker) -> int:
    async def run() -> int:
        assert broker.broker is not None
        loaded = broker.broker.groups.store.load_with_consumer_records()
        return sum(isinstance(item, LoadedOffset) for item in loaded)

    found = broker.call(run())
    assert isinstance(found, int)
    return found


def test_restart_with_consumer_group_records_keeps_classic_offsets(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=GROUP_SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "t", 2)
            commit(client, GROUP, {("t", 0): 5})
            append(broker, consumer_group_records(3))
            commit(client, GROUP, {("t", 1): 6})
            append(
                broker,
                [encode_consumer_group_record(ConsumerGroupPartitionMetadataKey(GROUP), None)],
            )
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            assert fetch_offsets(client, GROUP, None) == {
                ("t", 0): (5, 3, ""),  # the helper commits leader epoch 3
                ("t", 1): (6, 3, ""),
            }
        records = loaded_consumer_records(broker)
        assert [type(r.key).__name__ for r in records] == [
            "ConsumerGroupMemberMetadataKey",
            "ConsumerGroupMetadataKey",
            "ConsumerGroupCurrentMemberAssignmentKey",
            "ConsumerGroupPartitionMetadataKey",
        ]
        assert records[1].value == ConsumerGroupMetadataValue(3)
        assert records[3].value is None
        assert loaded_offsets(broker) == 2


def test_compaction_keeps_the_last_record_of_each_consumer_group_key(tmp_path: Path) -> None:
    settings = {
        **GROUP_SETTINGS,
        "offsets.topic.num.partitions": "1",
        "offsets.topic.segment.bytes": "1000",
        "log.cleaner.backoff.ms": "20",
    }
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as broker:
        for epoch in range(1, 31):
            append(broker, consumer_group_records(epoch))
        append(
            broker,
            [
                encode_consumer_group_record(
                    ConsumerGroupCurrentMemberAssignmentKey(GROUP, "m1"), None
                )
            ],
        )

        async def stored() -> int:
            assert broker.broker is not None
            log = broker.broker.logs.get("__consumer_offsets", 0)
            assert isinstance(log, SegmentedLog)
            return len(read_all_records(log))

        deadline = time.monotonic() + 30
        while (count := broker.call(stored())) and isinstance(count, int) and count >= 60:
            assert time.monotonic() < deadline, "__consumer_offsets was not compacted"
            time.sleep(0.02)
        broker.restart()
        latest = {r.key: r.value for r in loaded_consumer_records(broker)}
        assert latest[ConsumerGroupMetadataKey(GROUP)] == ConsumerGroupMetadataValue(30)
        assert latest[ConsumerGroupMemberMetadataKey(GROUP, "m1")] is not None
        assert latest.get(ConsumerGroupCurrentMemberAssignmentKey(GROUP, "m1")) is None
