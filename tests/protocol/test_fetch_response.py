"""The hand-framed Fetch response is the codec's encoding, byte for byte, for v4-18."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import encode_response, response_class
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.fetch_response import (
    FetchedPartition,
    FetchedTopic,
    NodeEndpoint,
    encode_fetch_response,
    fetch_response_message,
)

int64s = st.integers(-(2**63), 2**63 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
partitions = st.builds(
    FetchedPartition,
    index=st.integers(0, 2**31 - 1),
    error=st.sampled_from(list(ErrorCode)),
    high_watermark=int64s,
    last_stable_offset=int64s,
    log_start_offset=int64s,
    aborted_transactions=st.none() | st.lists(st.tuples(int64s, int64s), max_size=3),
    records=st.binary(max_size=300),
    current_leader=st.none() | st.tuples(int32s, int32s),
)
topics = st.lists(
    st.builds(
        FetchedTopic,
        name=st.text(min_size=1, max_size=200),
        topic_id=st.uuids(),
        partitions=st.lists(partitions, max_size=3),
    ),
    max_size=3,
)
endpoints = st.lists(
    st.builds(
        NodeEndpoint,
        node_id=int32s,
        host=st.text(max_size=50),
        port=int32s,
        rack=st.none() | st.text(max_size=20),
    ),
    max_size=3,
)


@settings(max_examples=500, deadline=None)
@given(
    version=st.integers(0, 18),
    correlation_id=int32s,
    error=st.sampled_from([ErrorCode.NO_ERROR, ErrorCode.FETCH_SESSION_ID_NOT_FOUND]),
    fetched=topics,
    session_id=int32s,
    node_endpoints=endpoints,
)
def test_hand_framed_equals_the_codec(
    version: int,
    correlation_id: int,
    error: ErrorCode,
    fetched: list[Any],
    session_id: int,
    node_endpoints: list[NodeEndpoint],
) -> None:
    if version < 12:  # CurrentLeader is a tagged field: flexible versions only
        fetched = [
            FetchedTopic(
                t.name, t.topic_id, [replace(p, current_leader=None) for p in t.partitions]
            )
            for t in fetched
        ]
    parts = encode_fetch_response(
        version, correlation_id, error, fetched, session_id, node_endpoints
    )
    message = fetch_response_message(version, error, fetched, session_id, node_endpoints)
    assert b"".join(parts) == encode_response(ApiKey.Fetch, version, correlation_id, message)


def test_records_are_parts_of_their_own_not_copies() -> None:
    records = b"r" * 100
    partition = FetchedPartition(0, ErrorCode.NO_ERROR, 5, 5, 0, None, records)
    for version in (12, 18):
        topic = FetchedTopic("t", uuid.uuid4(), [partition, partition])
        parts = encode_fetch_response(version, 7, ErrorCode.NO_ERROR, [topic])
        assert [part is records for part in parts] == [False, True, False, True, False]


def test_v13_names_topics_by_id_and_v16_carries_the_leader_and_its_endpoint() -> None:
    topic_id = uuid.uuid4()
    moved = FetchedPartition(
        3, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, None, b"", current_leader=(2, 7)
    )
    endpoint = NodeEndpoint(2, "127.0.0.1", 9093)
    frame = b"".join(
        encode_fetch_response(
            16, 1, ErrorCode.NO_ERROR, [FetchedTopic("t", topic_id, [moved])], 42, [endpoint]
        )
    )
    response = response_class(ApiKey.Fetch).decode(frame[9:], version=16)
    assert response.session_id == 42
    assert response.responses[0].topic_id == topic_id
    partition = response.responses[0].partitions[0]
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 7)
    assert [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints] == [
        (2, "127.0.0.1", 9093, None)
    ]
