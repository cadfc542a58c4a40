"""Sans-IO framing: 4-byte big-endian size, then the request (header + body).

Bytes are received into buffers this decoder owns (`get_buffer` / `buffer_updated`, the
shape of asyncio's `BufferedProtocol`), so a request crosses from the kernel to Python once:
small frames are read in batches into a scratch buffer and copied out; a large frame (a
Produce request) is read straight into a buffer of its own, which goes to the handler as a
writable `memoryview` and comes back through `recycle` once its request is answered; it is
reused for a later large frame once nothing else refers to it any more (uvloop, for one,
keeps the view it last read into until its next read). Reusing those buffers avoids
allocating and zero-filling a fresh one for every large request.

After a large frame of up to 256 KiB, the next read (when nothing else is buffered) goes
straight into a buffer that fits a frame of that size, size prefix included: a client sending 64 KiB
batches has each read in one receive into the buffer its request is handled from, without
first reading its start into the scratch and copying it out. A read that turns out not to
start a large frame that fits is copied into the scratch, as if it had been read there.

`FrameDecoder` is the reference; `new_decoder` gives the C one of `minibroker.server._accel`
(the same steps and state, in C: a small request's read is then no Python call in here)
when it was built, unless MINIBROKER_PURE_PYTHON is set.
"""

from __future__ import annotations

import struct
import sys
from typing import cast

from minibroker.records.accel import pure_python_forced

_SIZE = struct.Struct(">i")
_SCRATCH_BYTES = 16 * 1024
# Frames above this are read into a buffer of their own rather than through the scratch.
DIRECT_FRAME_BYTES = 32 * 1024
_MIN_FREE_SCRATCH = 4096
# librdkafka keeps many requests in flight, and a burst of them is read before the first is
# answered: up to 32 buffers (8 MiB in all) wait for reuse.
_MAX_SPARE_BUFFERS = 32
# Buffers are allocated in steps, so that one fits the next frame of about the same size.
_BUFFER_STEP = 8 * 1024
# A frame's buffer starts no larger than this, whatever size the frame announces, and
# doubles as its bytes arrive: a few bytes cannot make the broker allocate 100 MiB.
_FIRST_ALLOCATION = 8 * 1024 * 1024
_MAX_SPARE_BYTES = 8 * 1024 * 1024
# Reading straight into a buffer for the next large frame, only for frames up to this size.
# A loop reads up to 32 times in a row while each read fills the buffer it was given (libuv
# does), which here is a whole frame each time, so that many buffers are taken before any
# request is answered: past this size they would not all return to the spares (1 MiB frames
# then took a fresh buffer, and its page faults, for most requests). Larger frames gain little
# anyway: their first 16 KiB are read into the scratch, then the rest into their own buffer.
_MAX_READ_AHEAD_FRAME = _MAX_SPARE_BYTES // _MAX_SPARE_BUFFERS
# `sys.getrefcount(spare)` inside `_take_buffer` when nothing else holds the spare buffer: the
# spares list, the local name and getrefcount's own argument.
_UNSHARED_REFCOUNT = 3


class FramingError(Exception):
    """Broken framing: negative or oversized length. The connection is closed."""


class FrameDecoder:
    """Receive bytes in, take whole frames out. Never allocates much more than it received."""

    def __init__(self, max_frame_bytes: int) -> None:
        # Checked against each frame's size prefix, before its body is buffered; the
        # connection lowers it while a SASL client has not authenticated.
        self.max_frame_bytes = max_frame_bytes
        self._scratch = bytearray(_SCRATCH_BYTES)
        self._start = 0  # unread bytes of the scratch are [_start, _end)
        self._end = 0
        self._direct: bytearray | None = None  # the large frame being read, if any
        self._direct_offset = 0  # where its body starts (4 when read with its size)
        self._direct_size = 0
        self._direct_filled = 0
        self._spares: list[bytearray] = []
        # The size of the last large frame, while reads go straight into a buffer for the next
        # one (0: into the scratch); `_ahead` is that buffer, until its bytes are received.
        self._expected = 0
        self._ahead: bytearray | None = None

    # -- receiving ---------------------------------------------------------------------------

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        if self._direct is not None:
            offset = self._direct_offset
            if offset + self._direct_filled == len(self._direct):
                self._grow_direct()
            return memoryview(self._direct)[
                offset + self._direct_filled : offset + self._direct_size
            ]
        if self._expected and self._end == 0:
            wanted = self._expected + 4
            if self._ahead is None or len(self._ahead) < wanted:
                self._ahead = self._take_buffer(wanted)
            return memoryview(self._ahead)[:wanted]
        if len(self._scratch) - self._end < _MIN_FREE_SCRATCH:
            self._make_room()
        return memoryview(self._scratch)[self._end :]

    def buffer_updated(self, nbytes: int) -> None:
        """`nbytes` were written at the start of the last `get_buffer`."""
        if self._direct is not None:
            self._direct_filled += nbytes
        elif self._ahead is not None:
            self._received_ahead(nbytes)
        else:
            self._end += nbytes

    def _received_ahead(self, nbytes: int) -> None:
        """`nbytes` were read into `_ahead`: the start of the large frame it was taken for,
        which then goes on in it, or else bytes for the scratch (and reads go there again)."""
        ahead, self._ahead = self._ahead, None
        assert ahead is not None
        size = _SIZE.unpack_from(ahead)[0] if nbytes >= 4 else -1
        if DIRECT_FRAME_BYTES < size <= self.max_frame_bytes and size + 4 <= len(ahead):
            self._direct = ahead
            self._direct_offset = 4
            self._direct_size = size
            self._direct_filled = min(nbytes - 4, size)
            rest = memoryview(ahead)[4 + self._direct_filled : nbytes]
        else:
            self._expected = 0
            rest = memoryview(ahead)[:nbytes]
        if rest:  # the scratch is empty: these bytes start it
            if len(rest) > len(self._scratch) - _MIN_FREE_SCRATCH:
                self._scratch = bytearray(len(rest) + _SCRATCH_BYTES)
            self._scratch[: len(rest)] = rest
            self._end = len(rest)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Copy `data` in (for callers that receive bytes objects)."""
        view = memoryview(data)
        while view:
            target = self.get_buffer()
            count = min(len(target), len(view))
            target[:count] = view[:count]
            self.buffer_updated(count)
            view = view[count:]

    def _grow_direct(self) -> None:
        assert self._direct is not None
        filled = self._direct_offset + self._direct_filled
        grown = _allocate(min(2 * len(self._direct), self._direct_offset + self._direct_size))
        grown[:filled] = memoryview(self._direct)[:filled]
        self._direct = grown

    def _make_room(self) -> None:
        """Move the unread bytes to the front of the scratch, or into a larger one when the
        scratch holds more whole frames than fit (reading pauses before that goes far)."""
        unread = self._end - self._start
        if len(self._scratch) - unread >= _MIN_FREE_SCRATCH:
            # Same-size slice assignment: no resize, so a transport's view stays valid.
            self._scratch[:unread] = self._scratch[self._start : self._end]
        else:
            grown = bytearray(2 * len(self._scratch))
            grown[:unread] = self._scratch[self._start : self._end]
            self._scratch = grown
        self._start, self._end = 0, unread

    # -- frames ------------------------------------------------------------------------------

    def next_frame(self) -> memoryview | None:
        """The next whole frame (without its size), or None until more bytes arrive."""
        if self._direct is not None:
            return self._finish_direct()
        unread = self._end - self._start
        if unread < 4:
            return None
        (size,) = _SIZE.unpack_from(self._scratch, self._start)
        if size < 0 or size > self.max_frame_bytes:
            raise FramingError(f"frame size {size} outside 0..{self.max_frame_bytes}")
        body_start = self._start + 4
        available = min(size, self._end - body_start)
        if size <= DIRECT_FRAME_BYTES:
            if available < size:
                return None
            end = body_start + size
            frame = self._scratch[body_start:end]  # a slice is a copy
            # `_consume`, inline (once per request)
            if end == self._end:
                self._start = self._end = 0
            else:
                self._start = end
            return memoryview(frame)
        self._direct = self._take_buffer(max(min(size, _FIRST_ALLOCATION), available))
        self._direct_offset = 0
        self._direct_size = size
        self._direct_filled = available
        self._direct[:available] = memoryview(self._scratch)[body_start : body_start + available]
        self._consume(body_start + available)
        return self._finish_direct()

    def _consume(self, position: int) -> None:
        self._start = position
        if self._start == self._end:
            self._start = self._end = 0

    def _finish_direct(self) -> memoryview | None:
        if self._direct is None or self._direct_filled < self._direct_size:
            return None
        offset, size = self._direct_offset, self._direct_size
        frame = memoryview(self._direct)[offset : offset + size]
        self._direct = None
        # The next read goes straight into a buffer for a frame of this size, up to a size
        # whose buffers the spares keep for a whole burst of reads.
        self._expected = size if size + 4 <= _MAX_READ_AHEAD_FRAME else 0
        return frame

    def _take_buffer(self, size: int) -> bytearray:
        """A spare buffer of at least `size` that nothing else refers to (no view, slice or
        object holds it any more), or a new one."""
        for position in range(len(self._spares)):
            spare = self._spares[position]
            if len(spare) >= size and sys.getrefcount(spare) == _UNSHARED_REFCOUNT:
                return self._spares.pop(position)
        return _allocate(min(size, _FIRST_ALLOCATION))

    def recycle(self, frame: memoryview) -> None:
        """Offer a frame's buffer for reuse once its request is answered."""
        buffer = frame.obj
        try:
            frame.release()
        except BufferError:  # something still reads through this very view
            return
        if not isinstance(buffer, bytearray) or len(buffer) <= DIRECT_FRAME_BYTES:
            return
        if len(self._spares) == _MAX_SPARE_BUFFERS:
            smallest = min(range(len(self._spares)), key=lambda i: len(self._spares[i]))
            if len(self._spares[smallest]) >= len(buffer):
                return
            del self._spares[smallest]
        if len(buffer) + sum(map(len, self._spares)) <= _MAX_SPARE_BYTES:
            self._spares.append(buffer)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        return self._end - self._start + (self._direct_filled if self._direct is not None else 0)


def _allocate(size: int) -> bytearray:
    return bytearray(-(-size // _BUFFER_STEP) * _BUFFER_STEP)


def _native_decoder() -> type[FrameDecoder] | None:
    if pure_python_forced():
        return None
    try:
        from minibroker.server._accel import FrameDecoder as Native
    except ImportError:
        return None
    return cast(type[FrameDecoder], Native)


NativeFrameDecoder = _native_decoder()


def new_decoder(max_frame_bytes: int) -> FrameDecoder:
    """The C decoder when there is one, else the pure one: the same frames and errors."""
    return (NativeFrameDecoder or FrameDecoder)(max_frame_bytes)
