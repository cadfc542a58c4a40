"""The hand-written Produce decoder gives what kafka-python's generated one gives, with the
records left in the frame, and hands everything unusual to the generic decoder."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import (
    MalformedRequest,
    decode_body,
    decode_header,
    request_class,
)
from minibroker.protocol.produce_request import decode_produce_request
from tests.protocol.test_codec_golden import DECODABLE, _frame

PRODUCE_GOLDEN = [entry for entry in DECODABLE if entry["api_key"] == ApiKey.Produce]
ProduceRequest: Any = request_class(ApiKey.Produce)


def _plain(body: Any) -> Any:
    """Every attribute the decoders set, records as bytes, for comparison."""
    return (
        type(body),
        body._version,
        body.tags,
        body.unknown_tags,
        body.transactional_id,
        body.acks,
        body.timeout_ms,
        # a corrupted flexible frame may decode to a null array (compact length 0)
        None
        if body.topic_data is None
        else [
            (
                type(topic),
                topic._version,
                topic.tags,
                topic.unknown_tags,
                topic.name,
                topic.topic_id,
                None
                if topic.partition_data is None
                else [
                    (
                        type(p),
                        p._version,
                        p.tags,
                        p.unknown_tags,
                        p.index,
                        None if p.records is None else bytes(p.records),
                    )
                    for p in topic.partition_data
                ],
            )
            for topic in body.topic_data
        ],
    )


def _both(frame: memoryview) -> tuple[Any, Any]:
    """(generic, in place) decodings, or the MalformedRequest each raised."""
    results = []
    for in_place in (False, True):
        try:
            header, pos = decode_header(frame)
            body = decode_body(
                header.api_key, header.api_version, frame, pos, records_in_place=in_place
            )
            results.append(_plain(body))
        except MalformedRequest:
            results.append(MalformedRequest)
    return results[0], results[1]


def test_golden_produce_frames_decode_alike_with_records_in_the_frame() -> None:
    assert len(PRODUCE_GOLDEN) == 8
    for entry in PRODUCE_GOLDEN:
        frame = memoryview(bytearray(_frame(entry)))
        header, pos = decode_header(frame)
        decoded = decode_produce_request(frame, pos, header.api_version)
        assert decoded is not None, entry["file"]
        body, end = decoded
        generic = decode_body(header.api_key, header.api_version, frame, pos)
        assert _plain(body) == _plain(generic)
        assert end == len(frame)
        records = body.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview) and records.obj is frame.obj
        assert not records.readonly


def test_every_truncation_and_trailing_bytes_answer_alike() -> None:
    for entry in PRODUCE_GOLDEN:
        whole = _frame(entry)
        generic, in_place = _both(memoryview(whole + b"\x00\x01"))
        assert generic == in_place
        for cut in range(len(whole) - 1, 8, -1):
            generic, in_place = _both(memoryview(bytearray(whole[:cut])))
            assert generic == in_place, (entry["file"], cut)


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
_records = st.one_of(st.none(), st.binary(max_size=64))
_partitions = st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), _records), max_size=3)
_requests = st.tuples(
    st.integers(0, 13),
    st.one_of(st.none(), _names),
    st.sampled_from([-1, 0, 1, 2]),
    st.lists(st.tuples(_names, st.uuids(), _partitions), max_size=3),
)


def _encoded(version: int, transactional_id: str | None, acks: int, topics: Any) -> bytes:
    request = ProduceRequest(
        version=version,
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=1500,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=name,
                topic_id=topic_id,
                partition_data=[
                    ProduceRequest.TopicProduceData.PartitionProduceData(index=i, records=r)
                    for i, r in partitions
                ],
            )
            for name, topic_id, partitions in topics
        ],
    )
    header = ProduceRequest.flexible_version_q(version)
    prefix = bytes.fromhex("0000") + version.to_bytes(2, "big") + b"\x00\x00\x00\x07\x00\x01c"
    return prefix + (b"\x00" if header else b"") + bytes(request.encode(version=version))


@settings(max_examples=300, deadline=None)
@given(_requests, st.data())
def test_generated_requests_and_their_corruptions_decode_alike(request: Any, data: Any) -> None:
    whole = _encoded(*request)
    generic, in_place = _both(memoryview(bytearray(whole)))
    assert generic == in_place != MalformedRequest
    corrupted = bytearray(whole)
    body_start = 12  # corruptions leave the request header alone
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(body_start, len(corrupted) - 1))
        corrupted[position] = data.draw(st.integers(0, 255))
    generic, in_place = _both(memoryview(corrupted))
    assert generic == in_place
