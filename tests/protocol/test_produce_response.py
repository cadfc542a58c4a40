"""The hand-written Produce response encoder writes what kafka-python's generic one writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import encode_response, new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.produce_response import encode_produce_response

_Topic = struct_type(ApiKey.Produce, "response", "TopicProduceResponse")
_Partition = struct_type(
    ApiKey.Produce, "response", "TopicProduceResponse", "PartitionProduceResponse"
)
_RecordError = struct_type(
    ApiKey.Produce,
    "response",
    "TopicProduceResponse",
    "PartitionProduceResponse",
    "BatchIndexAndErrorMessage",
)
_int64 = st.integers(-(2**63), 2**63 - 1)
_text = st.one_of(st.none(), st.text(max_size=20))
_partitions = st.builds(
    lambda index, error, base, append_time, start, errors, message: _Partition(
        index=index,
        error_code=error,
        base_offset=base,
        log_append_time_ms=append_time,
        log_start_offset=start,
        record_errors=[_RecordError(batch_index=i, batch_index_error_message=m) for i, m in errors],
        error_message=message,
    ),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from(list(ErrorCode)),
    _int64,
    _int64,
    _int64,
    st.lists(st.tuples(st.integers(0, 2**31 - 1), _text), max_size=3),
    _text,
)
_topics = st.builds(
    lambda name, topic_id, partitions: _Topic(
        name=name, topic_id=topic_id, partition_responses=partitions
    ),
    st.text(max_size=20),
    st.uuids(),
    st.lists(_partitions, max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 13), st.lists(_topics, max_size=3), st.integers(0, 2**31 - 1))
def test_same_bytes_as_the_generic_encoder(version: int, topics: Any, throttle: int) -> None:
    response = new_response(ApiKey.Produce, version, responses=topics, throttle_time_ms=throttle)
    assert encode_produce_response(response, version) == bytes(response.encode(version=version))


def test_tagged_fields_go_through_the_generic_encoder() -> None:
    leader = struct_type(
        ApiKey.Produce,
        "response",
        "TopicProduceResponse",
        "PartitionProduceResponse",
        "LeaderIdAndEpoch",
    )
    partition = _Partition(
        index=0,
        error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
        base_offset=-1,
        current_leader=leader(leader_id=2, leader_epoch=5),
    )
    response = new_response(
        ApiKey.Produce, 10, responses=[_Topic(name="t", partition_responses=[partition])]
    )
    assert encode_produce_response(response, 10) is None
    frame = encode_response(ApiKey.Produce, 10, 7, response)
    assert bytes(frame[9:]) == bytes(response.encode(version=10))
