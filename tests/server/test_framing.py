"""FrameDecoder: frames out of any split of the byte stream, large frames read into buffers
of their own and reused only once nothing refers to them."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.server.framing import FrameDecoder, FramingError

MAX_FRAME = 1 << 26


def _framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _receive(decoder: FrameDecoder, data: bytes, chunk: int) -> list[bytes]:
    """Deliver `data` as a transport would, at most `chunk` bytes per read."""
    frames = []
    pos = 0
    while pos < len(data):
        target = decoder.get_buffer()
        assert len(target) > 0
        count = min(len(target), chunk, len(data) - pos)
        target[:count] = data[pos : pos + count]
        decoder.buffer_updated(count)
        pos += count
        while (frame := decoder.next_frame()) is not None:
            frames.append(bytes(frame))
            decoder.recycle(frame)
    return frames


_bodies = st.lists(
    st.one_of(
        st.binary(max_size=300),
        st.integers(30_000, 300_000).map(lambda n: bytes(range(256)) * (n // 256)),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(_bodies, st.sampled_from([1, 7, 4096, 65536, 1 << 20]))
def test_any_split_gives_the_frames_back(bodies: list[bytes], chunk: int) -> None:
    decoder = FrameDecoder(MAX_FRAME)
    stream = b"".join(_framed(body) for body in bodies)
    assert _receive(decoder, stream, chunk) == bodies
    assert decoder.buffered == 0


def test_feed_copies_bytes_in() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    big = bytes(100_000)
    decoder.feed(_framed(b"abc") + _framed(big) + _framed(b"x")[:3])
    assert decoder.next_frame() == b"abc"
    assert decoder.next_frame() == big
    assert decoder.next_frame() is None
    assert decoder.buffered == 3


def test_large_frames_are_writable_and_their_buffer_is_reused() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.feed(_framed(b"a" * 100_000))
    first = decoder.next_frame()
    assert first is not None and not first.readonly
    decoder.recycle(first)
    decoder.feed(_framed(b"b" * 90_000))
    second = decoder.next_frame()
    assert second == b"b" * 90_000
    # The same buffer (the second frame read into it with its size prefix, 4 bytes in):
    # what the first frame left past the second one's end is still there.
    assert second.obj[90_004:100_000] == b"a" * 9_996


def test_a_buffer_still_referred_to_is_not_reused() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.feed(_framed(b"a" * 100_000))
    first = decoder.next_frame()
    assert first is not None
    kept = first[10:20]  # e.g. a request object still holding its records
    decoder.recycle(first)
    decoder.feed(_framed(b"b" * 100_000))
    second = decoder.next_frame()
    assert second is not None and second.obj is not kept.obj
    assert kept == b"a" * 10


def test_an_announced_size_is_not_allocated_up_front() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.feed(struct.pack(">i", MAX_FRAME) + bytes(100_000))
    assert decoder.next_frame() is None
    assert len(decoder.get_buffer()) <= 8 * 1024 * 1024
    assert decoder.buffered == 100_000


@pytest.mark.parametrize("size", [-1, MAX_FRAME + 1])
def test_sizes_outside_the_limit_are_refused(size: int) -> None:
    decoder = FrameDecoder(MAX_FRAME)
    decoder.feed(struct.pack(">i", size))
    with pytest.raises(FramingError):
        decoder.next_frame()


@pytest.mark.parametrize("chunk", [1, 3, 4096, 1 << 20])
def test_a_read_after_a_large_frame_that_starts_no_large_frame_goes_on_as_bytes(
    chunk: int,
) -> None:
    """After a large frame, reads go into a buffer for the next large one: smaller, larger,
    several frames in one read and partial size prefixes all come out whole."""
    decoder = FrameDecoder(MAX_FRAME)
    bodies = [b"a" * 70_000, b"b" * 10, b"c" * 70_000, b"d" * 69_000, b"e" * 71_000]
    bodies += [b"f" * 200_000, b"g" * 40_000, b"", b"h" * 5]
    stream = b"".join(_framed(body) for body in bodies)
    assert _receive(decoder, stream, chunk) == bodies
    assert decoder.buffered == 0


@pytest.mark.parametrize("size", [-1, MAX_FRAME + 1])
def test_sizes_outside_the_limit_after_a_large_frame_are_refused(size: int) -> None:
    decoder = FrameDecoder(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(70_000)), 1 << 20) == [bytes(70_000)]
    decoder.feed(struct.pack(">i", size) + bytes(100))
    with pytest.raises(FramingError):
        decoder.next_frame()


def test_a_large_frame_is_read_in_one_piece_into_its_own_buffer_after_another() -> None:
    decoder = FrameDecoder(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(70_000)), 1 << 20) == [bytes(70_000)]
    target = decoder.get_buffer()
    assert len(target) == 70_004  # exactly the next frame of that size, with its prefix
    frame = _framed(b"x" * 70_000)
    target[: len(frame)] = frame
    decoder.buffer_updated(len(frame))
    assert decoder.next_frame() == b"x" * 70_000
