"""The C accelerator's Produce request walk against the pure-Python decoder: on golden,
generated and corrupted frames, `decode_produce_request` answers the same through both (the
same objects, records left in the frame, the same end, or None for the generic decoder).

The native run uses the built extension even under MINIBROKER_PURE_PYTHON=1; skipped only when
it was not built."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol import produce_request
from minibroker.protocol.codec import decode_header
from minibroker.protocol.produce_request import decode_produce_request
from tests.protocol.test_produce_request import PRODUCE_GOLDEN, _encoded, _frame, _plain, _requests

native = pytest.importorskip("minibroker.protocol._accel")


@contextmanager
def _walk(walk: Any) -> Iterator[None]:
    saved = produce_request.native_walk
    produce_request.native_walk = walk
    try:
        yield
    finally:
        produce_request.native_walk = saved


def _decoded(frame: memoryview, pos: int, version: int) -> Any:
    decoded = decode_produce_request(frame, pos, version)
    if decoded is None:
        return None
    body, end = decoded
    for topic in body.topic_data:
        for partition in topic.partition_data:
            if partition.records is not None:
                assert partition.records.obj is frame.obj
    return _plain(body), end


def _agree(data: bytes | bytearray, pos: int, version: int) -> None:
    frame = memoryview(bytearray(data))
    with _walk(native.walk_produce):
        fast = _decoded(frame, pos, version)
    with _walk(None):
        pure = _decoded(frame, pos, version)
    assert fast == pure


@pytest.mark.parametrize("entry", PRODUCE_GOLDEN, ids=lambda entry: entry["file"])
def test_golden_frames_and_their_truncations(entry: Any) -> None:
    whole = _frame(entry)
    header, pos = decode_header(memoryview(whole))
    _agree(whole, pos, header.api_version)
    _agree(whole + b"\x00\x01", pos, header.api_version)
    for cut in range(len(whole) - 1, pos - 1, -1):
        _agree(whole[:cut], pos, header.api_version)


@settings(max_examples=400, deadline=None)
@given(_requests, st.data())
def test_generated_requests_and_their_corruptions(request: Any, data: Any) -> None:
    whole = _encoded(*request)
    header, pos = decode_header(memoryview(whole))
    _agree(whole, pos, header.api_version)
    corrupted = bytearray(whole)
    for _ in range(data.draw(st.integers(1, 4))):
        corrupted[data.draw(st.integers(pos, len(corrupted) - 1))] = data.draw(st.integers(0, 255))
    _agree(corrupted, pos, header.api_version)
    _agree(corrupted, pos, data.draw(st.integers(0, 14)))  # read as another version


def test_arguments_out_of_range_leave_the_answer_to_python() -> None:
    frame = memoryview(bytearray(_encoded(9, None, 1, [])))
    assert native.walk_produce(frame, len(frame) + 1, 9) is None
    assert native.walk_produce(frame, -1, 9) is None
    assert native.walk_produce(frame[::2], 12, 9) is None
    assert native.walk_produce(frame, 2**70, 9) is None
