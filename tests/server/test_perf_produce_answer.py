"""The Produce answer framed straight from the partition results is, byte for byte, the frame
the codec encodes from the message `_response` builds (which test hooks get instead)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.config import BrokerConfig
from minibroker.handlers.produce import (
    FIRST_SERVED_VERSION,
    LAST_VERSION,
    PartitionResult,
    TopicResults,
    _response,
    _response_frame,
)
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import RequestHeader, encode_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.broker import Broker
from minibroker.server.context import RequestContext, Session

_BROKER = Broker(BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"}), in_memory=True)

_results = st.builds(
    PartitionResult,
    error=st.sampled_from([ErrorCode.NO_ERROR, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
    base_offset=st.integers(-1, 2**62),
    log_append_time_ms=st.integers(-1, 2**42),
    log_start_offset=st.integers(-1, 2**62),
    error_message=st.none() | st.text(max_size=20),
)
_topics = st.lists(
    st.tuples(
        st.builds(
            SimpleNamespace,
            name=st.text(min_size=1, max_size=10),
            topic_id=st.none() | st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)),
        ),
        st.lists(st.tuples(st.integers(0, 1000), _results), max_size=3),
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    version=st.integers(FIRST_SERVED_VERSION, LAST_VERSION),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    topics=_topics,
)
def test_direct_frame_is_the_codec_frame(
    version: int, correlation_id: int, topics: TopicResults
) -> None:
    header = RequestHeader(ApiKey.Produce, version, correlation_id, "c")
    ctx = RequestContext(_BROKER, header, _BROKER.config.listeners[0], Session())
    framed = _response_frame(ctx, topics)
    assert framed is not None
    expected = encode_response(ApiKey.Produce, version, correlation_id, _response(ctx, topics))
    assert framed.parts == [expected]
    assert encode_response(ApiKey.Produce, version, correlation_id, framed.message()) == expected


def test_record_errors_and_leaders_go_through_the_codec() -> None:
    header = RequestHeader(ApiKey.Produce, LAST_VERSION, 1, "c")
    ctx = RequestContext(_BROKER, header, _BROKER.config.listeners[0], Session())
    topic = SimpleNamespace(name="t", topic_id=None)
    with_errors = PartitionResult(record_errors=[(0, "bad")])
    with_leader = PartitionResult(current_leader=(1, 0))
    assert _response_frame(ctx, [(topic, [(0, with_errors)])]) is None
    assert _response_frame(ctx, [(topic, [(0, with_leader)])]) is None
