"""Sans-IO framing: 4-byte big-endian size, then the request (header + body)."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FramingError(Exception):
    """Broken framing: negative or oversized length. The connection is closed."""


class FrameDecoder:
    """Feed bytes in, take whole frames out. Never allocates by an untrusted length."""

    def __init__(self, max_frame_bytes: int) -> None:
        self._buffer = bytearray()
        self._max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_frame(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < 4:
            return None
        (size,) = _SIZE.unpack_from(buffer, 0)
        if size < 0 or size > self._max_frame_bytes:
            raise FramingError(f"frame size {size} outside 0..{self._max_frame_bytes}")
        end = 4 + size
        if len(buffer) < end:
            return None
        frame = bytes(buffer[4:end])
        del buffer[:end]
        return frame

    @property
    def buffered(self) -> int:
        return len(self._buffer)
