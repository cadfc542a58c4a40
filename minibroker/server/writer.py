"""Response frames to the transport, in order, with flow control and no copies of stored bytes.

Bytes parts go through the transport. A file region (the records of a Fetch response, still in
their segment file) goes from the file to the socket with `sendfile` whenever nothing is queued
in the transport ahead of it on a plain TCP connection (uvloop's loop has no `sendfile`, so the
socket is written directly, which is safe while the transport holds nothing). Otherwise (TLS,
a full socket, or bytes still queued ahead of it) its next chunk is read into the transport:
a chunk is larger than the high-water mark, so unless the socket takes it at once the
transport pauses the writer, and resumes it once drained, when sendfile can go on.

The transport's write buffer limits are (64 KiB, 0): small responses are coalesced by the
loop as usual, and a paused writer resumes only on an empty transport. So at most a chunk and
the high-water mark per connection sit in memory; frames wait here as encoded fields and file
regions, never as copies.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections import deque
from collections.abc import Callable, Sized

from minibroker.log.blob import FileRegion
from minibroker.protocol.codec import EncodedFrame

HIGH_WATER = 64 * 1024
READ_CHUNK = 256 * 1024  # > HIGH_WATER


def _sendfile_socket(transport: asyncio.Transport) -> int | None:
    """The descriptor of the transport's socket when regions may be sent straight to it."""
    if transport.get_extra_info("sslcontext") is not None:
        return None
    sock = transport.get_extra_info("socket")
    if sock is None or sock.type != socket.SOCK_STREAM:
        return None
    fd = sock.fileno()
    return fd if isinstance(fd, int) and fd >= 0 else None


class ResponseWriter:
    def __init__(
        self,
        transport: asyncio.Transport,
        on_frame_written: Callable[[], None],
        on_error: Callable[[str], None],
    ) -> None:
        self._transport = transport
        self._on_frame_written = on_frame_written
        self._on_error = on_error
        self._frames: deque[deque[bytes | bytearray | Sized]] = deque()
        # Frames not yet wholly handed to the transport: `len(self._frames)`, kept as an
        # attribute since the connection reads it for every request.
        self.queued_frames = 0
        self._paused = False
        self._closed = False
        # Nothing queued, not paused, not closed: an answer in one piece goes straight to the
        # transport (an attribute, as the connection reads it for every answer).
        self.direct = True
        self._socket_fd = _sendfile_socket(transport)
        transport.set_write_buffer_limits(high=HIGH_WATER, low=0)

    def write(self, frames: list[bytearray | EncodedFrame]) -> None:
        """Queue the frames (answers that became ready together) and write what may be. The
        caller goes on itself: `on_frame_written` is only for frames written on `resume`."""
        if len(frames) == 1 and self.direct:
            only = frames[0]
            if isinstance(only, bytearray):  # one answer in one piece, nothing ahead of it
                self._transport.write(only)
                return
        for frame in frames:
            if self._closed:
                _release(frame.parts if isinstance(frame, EncodedFrame) else [])
                continue
            self._frames.append(deque(frame.parts if isinstance(frame, EncodedFrame) else [frame]))
        self.queued_frames = len(self._frames)
        self._pump()
        self._update_direct()

    def pause(self) -> None:
        self._paused = True
        self.direct = False

    def resume(self) -> None:
        self._paused = False
        written = self._pump()
        self._update_direct()
        if written:
            self._on_frame_written()

    def _update_direct(self) -> None:
        self.direct = not self._frames and not self._paused and not self._closed

    def close(self) -> None:
        """Drop what is still queued (the connection is gone)."""
        self._closed = True
        self.direct = False
        while self._frames:
            _release(self._frames.popleft())
        self.queued_frames = 0

    def _pump(self) -> bool:
        """Hand queued parts to the transport: consecutive bytes parts in one write (one
        send for many small answers), up to the high-water mark between pause checks.
        Whether a whole frame was handed over."""
        written = False
        batch: list[bytes | bytearray] = []
        batch_bytes = 0
        try:
            while self._frames and not self._paused and not self._closed:
                parts = self._frames[0]
                if not parts:
                    self._frames.popleft()
                    self.queued_frames -= 1
                    written = True
                elif isinstance(parts[0], FileRegion):
                    self._flush(batch)
                    batch_bytes = 0
                    self._write_region(parts, parts[0])
                else:
                    part = parts.popleft()
                    batch.append(part)  # type: ignore[arg-type]
                    batch_bytes += len(part)
                    if batch_bytes >= HIGH_WATER:
                        self._flush(batch)
                        batch_bytes = 0
            self._flush(batch)
        except OSError as exc:  # the peer went away, or a segment file failed
            self._on_error(f"writing a response failed: {exc}")
            return False
        return written

    def _flush(self, batch: list[bytes | bytearray]) -> None:
        if len(batch) == 1:
            self._transport.write(batch[0])
        elif batch:
            self._transport.writelines(batch)
        batch.clear()

    def _write_region(self, parts: deque[bytes | bytearray | Sized], part: FileRegion) -> None:
        if part.remaining == 0:
            parts.popleft()
            part.close()
        elif not self._sendfile(part):
            self._transport.write(part.read(READ_CHUNK))

    def _sendfile(self, region: FileRegion) -> bool:
        """Send what the socket takes now; False when it takes nothing or may not be used."""
        if self._socket_fd is None or self._transport.get_write_buffer_size():
            return False
        try:
            sent = os.sendfile(self._socket_fd, region.fd, region.position, region.remaining)
        except BlockingIOError:
            return False
        if sent == 0:
            raise OSError(f"file region ends {region.remaining} bytes early")
        region.advance(sent)
        return True


def _release(parts: deque[bytes | bytearray | Sized] | list[bytes | Sized]) -> None:
    for part in parts:
        if isinstance(part, FileRegion):
            part.close()
