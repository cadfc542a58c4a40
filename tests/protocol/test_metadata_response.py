"""Metadata responses spliced from kept topic bytes are what the generic encoder writes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.metadata_response import MIN_TOPICS, encode_metadata_response

_Broker = struct_type(ApiKey.Metadata, "response", "MetadataResponseBroker")
_Topic = struct_type(ApiKey.Metadata, "response", "MetadataResponseTopic")
_Partition = struct_type(
    ApiKey.Metadata, "response", "MetadataResponseTopic", "MetadataResponsePartition"
)
_int32 = st.integers(-(2**31), 2**31 - 1)
_nodes = st.lists(st.integers(0, 2**31 - 1), max_size=3)
_operations = st.one_of(st.none(), st.sets(st.integers(0, 31), max_size=4))
_partitions = st.builds(
    lambda error, index, leader, epoch, replicas, isr, offline: _Partition(
        error_code=error,
        partition_index=index,
        leader_id=leader,
        leader_epoch=epoch,
        replica_nodes=replicas,
        isr_nodes=isr,
        offline_replicas=offline,
    ),
    st.sampled_from([ErrorCode.NO_ERROR, ErrorCode.LEADER_NOT_AVAILABLE]),
    _int32,
    _int32,
    _int32,
    _nodes,
    _nodes,
    _nodes,
)
_topics = st.builds(
    lambda error, name, topic_id, internal, partitions, operations: _Topic(
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=internal,
        partitions=partitions,
        authorized_operations=operations,
    ),
    st.sampled_from([ErrorCode.NO_ERROR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
    st.text(min_size=1, max_size=12),
    st.uuids(),
    st.booleans(),
    st.lists(_partitions, max_size=4),
    _operations,
)
_brokers = st.lists(
    st.builds(
        lambda node, host, port, rack: _Broker(node_id=node, host=host, port=port, rack=rack),
        st.integers(0, 100),
        st.text(min_size=1, max_size=10),
        st.integers(1, 65535),
        st.one_of(st.none(), st.text(max_size=5)),
    ),
    max_size=3,
)


def _response(version: int, topics: list[Any], brokers: list[Any], operations: Any) -> Any:
    return new_response(
        ApiKey.Metadata,
        version,
        throttle_time_ms=7,
        brokers=brokers,
        cluster_id="cluster",
        controller_id=1,
        topics=topics,
        authorized_operations=operations,
        error_code=ErrorCode.NO_ERROR,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 13),
    st.lists(_topics, min_size=MIN_TOPICS, max_size=MIN_TOPICS + 4),
    _brokers,
    _operations,
    st.integers(0, 13),
)
def test_same_bytes_as_the_generic_encoder(
    version: int, topics: list[Any], brokers: list[Any], operations: Any, other_version: int
) -> None:
    for answered in (version, other_version, version):  # topics kept, then asked again
        response = _response(answered, topics, brokers, operations)
        expected = bytes(response.encode(version=answered))
        assert encode_metadata_response(response, answered) == expected
        assert response.topics is topics


def test_few_topics_go_to_the_generic_encoder() -> None:
    response = _response(13, [], [], None)
    assert encode_metadata_response(response, 13) is None
