"""FrameDecoder: frames out of any split of the byte stream, large frames read into buffers
of their own and reused only once nothing refers to them. Each test runs the pure decoder
(the reference) and the C one; a property test requires the same frames, errors and state
from both over random streams and splits."""

from __future__ import annotations

import struct
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.records.accel import pure_python_forced
from minibroker.server import _accel, framing
from minibroker.server.framing import FrameDecoder, FramingError

MAX_FRAME = 1 << 26
# The C decoder whatever MINIBROKER_PURE_PYTHON says (it only chooses what connections use).
C_DECODER = cast(type[FrameDecoder], _accel.FrameDecoder)
DECODERS = [FrameDecoder, C_DECODER]

decoders = pytest.mark.parametrize("make", DECODERS, ids=lambda make: make.__module__)


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


@decoders
@settings(max_examples=60, deadline=None)
@given(_bodies, st.sampled_from([1, 7, 4096, 65536, 1 << 20]))
def test_any_split_gives_the_frames_back(
    make: type[FrameDecoder], bodies: list[bytes], chunk: int
) -> None:
    decoder = make(MAX_FRAME)
    stream = b"".join(_framed(body) for body in bodies)
    assert _receive(decoder, stream, chunk) == bodies
    assert decoder.buffered == 0


@decoders
def test_feed_copies_bytes_in(make: type[FrameDecoder]) -> None:
    decoder = make(MAX_FRAME)
    big = bytes(100_000)
    decoder.feed(_framed(b"abc") + _framed(big) + _framed(b"x")[:3])
    assert decoder.next_frame() == b"abc"
    assert decoder.next_frame() == big
    assert decoder.next_frame() is None
    assert decoder.buffered == 3


@decoders
def test_large_frames_are_writable_and_their_buffer_is_reused(make: type[FrameDecoder]) -> None:
    decoder = make(MAX_FRAME)
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


@decoders
def test_a_buffer_still_referred_to_is_not_reused(make: type[FrameDecoder]) -> None:
    decoder = make(MAX_FRAME)
    decoder.feed(_framed(b"a" * 100_000))
    first = decoder.next_frame()
    assert first is not None
    kept = first[10:20]  # e.g. a request object still holding its records
    decoder.recycle(first)
    decoder.feed(_framed(b"b" * 100_000))
    second = decoder.next_frame()
    assert second is not None and second.obj is not kept.obj
    assert kept == b"a" * 10


@decoders
def test_an_announced_size_is_not_allocated_up_front(make: type[FrameDecoder]) -> None:
    decoder = make(MAX_FRAME)
    decoder.feed(struct.pack(">i", MAX_FRAME) + bytes(100_000))
    assert decoder.next_frame() is None
    assert len(decoder.get_buffer()) <= 8 * 1024 * 1024
    assert decoder.buffered == 100_000


@pytest.mark.parametrize("size", [-1, MAX_FRAME + 1])
@decoders
def test_sizes_outside_the_limit_are_refused(make: type[FrameDecoder], size: int) -> None:
    decoder = make(MAX_FRAME)
    decoder.feed(struct.pack(">i", size))
    with pytest.raises(FramingError):
        decoder.next_frame()


@pytest.mark.parametrize("chunk", [1, 3, 4096, 1 << 20])
@decoders
def test_a_read_after_a_large_frame_that_starts_no_large_frame_goes_on_as_bytes(
    make: type[FrameDecoder],
    chunk: int,
) -> None:
    """After a large frame, reads go into a buffer for the next large one: smaller, larger,
    several frames in one read and partial size prefixes all come out whole."""
    decoder = make(MAX_FRAME)
    bodies = [b"a" * 70_000, b"b" * 10, b"c" * 70_000, b"d" * 69_000, b"e" * 71_000]
    bodies += [b"f" * 200_000, b"g" * 40_000, b"", b"h" * 5]
    stream = b"".join(_framed(body) for body in bodies)
    assert _receive(decoder, stream, chunk) == bodies
    assert decoder.buffered == 0


@pytest.mark.parametrize("size", [-1, MAX_FRAME + 1])
@decoders
def test_sizes_outside_the_limit_after_a_large_frame_are_refused(
    make: type[FrameDecoder], size: int
) -> None:
    decoder = make(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(70_000)), 1 << 20) == [bytes(70_000)]
    decoder.feed(struct.pack(">i", size) + bytes(100))
    with pytest.raises(FramingError):
        decoder.next_frame()


@decoders
def test_a_large_frame_is_read_in_one_piece_into_its_own_buffer_after_another(
    make: type[FrameDecoder],
) -> None:
    decoder = make(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(70_000)), 1 << 20) == [bytes(70_000)]
    target = decoder.get_buffer()
    assert len(target) == 70_004  # exactly the next frame of that size, with its prefix
    frame = _framed(b"x" * 70_000)
    target[: len(frame)] = frame
    decoder.buffer_updated(len(frame))
    assert decoder.next_frame() == b"x" * 70_000


def _trace(
    decoder: FrameDecoder, stream: bytes, chunks: list[int], keep: list[bool]
) -> list[object]:
    """Everything a connection sees of the decoder over `stream` read in `chunks` (cycled):
    each read's room, each frame (kept, i.e. not recycled, when `keep` says so), the first
    error, and what stays buffered."""
    seen: list[object] = []
    kept = []
    pos = step = 0
    while pos < len(stream):
        target = decoder.get_buffer()
        count = min(len(target), chunks[step % len(chunks)], len(stream) - pos)
        seen.append(("room", len(target), count))
        target[:count] = stream[pos : pos + count]
        del target
        decoder.buffer_updated(count)
        pos += count
        try:
            while (frame := decoder.next_frame()) is not None:
                seen.append(("frame", bytes(frame), frame.readonly, decoder.buffered))
                if keep[len(kept) % len(keep)]:
                    kept.append(frame)
                else:
                    kept.append(None)
                    decoder.recycle(frame)
        except FramingError as exc:
            seen.append(("error", str(exc)))
            return seen
        step += 1
    seen.append(("buffered", decoder.buffered))
    return seen


_sizes = st.one_of(
    st.integers(0, 300),
    st.integers(30_000, 140_000),
    st.sampled_from([32 * 1024, 32 * 1024 + 1, 65_536, -1, -(1 << 31), MAX_FRAME, MAX_FRAME + 1]),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_sizes, min_size=1, max_size=10),
    st.lists(st.one_of(st.integers(1, 9), st.integers(1, 200_000)), min_size=1, max_size=5),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.integers(0, 3),
)
def test_the_c_decoder_matches_the_pure_one(
    sizes: list[int], chunks: list[int], keep: list[bool], cut: int
) -> None:
    """Same rooms offered, frames, errors and buffered counts, whatever the sizes (negative
    and oversized ones included), splits and frames held past their request."""
    stream = b"".join(
        struct.pack(">i", size) + bytes([number % 251]) * max(0, min(size, 150_000))
        for number, size in enumerate(sizes)
    )
    stream = stream[: len(stream) - cut]  # a stream may end inside a frame
    expected = _trace(FrameDecoder(MAX_FRAME), stream, chunks, keep)
    assert _trace(C_DECODER(MAX_FRAME), stream, chunks, keep) == expected


def test_connections_use_the_c_decoder_unless_the_pure_path_is_forced() -> None:
    expected = FrameDecoder if pure_python_forced() else C_DECODER
    assert type(framing.new_decoder(MAX_FRAME)) is expected


@decoders
def test_a_frame_recycled_twice_is_refused_the_second_time(make: type[FrameDecoder]) -> None:
    decoder = make(MAX_FRAME)
    decoder.feed(_framed(bytes(70_000)))
    frame = decoder.next_frame()
    assert frame is not None
    decoder.recycle(frame)
    with pytest.raises(ValueError):
        decoder.recycle(frame)


@decoders
def test_after_a_frame_over_256_kib_reads_go_into_the_scratch_again(
    make: type[FrameDecoder],
) -> None:
    """A burst of reads into buffers of their own, one per frame, is kept to what the spares
    hold: past 256 KiB a frame's start is read into the scratch."""
    decoder = make(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(256 * 1024 - 4)), 1 << 20) == [bytes(256 * 1024 - 4)]
    assert len(decoder.get_buffer()) == 256 * 1024
    decoder = make(MAX_FRAME)
    assert _receive(decoder, _framed(bytes(256 * 1024)), 1 << 20) == [bytes(256 * 1024)]
    assert len(decoder.get_buffer()) == 16 * 1024
