"""Byte storage under segments and indexes: a file (through a shared descriptor pool) or memory.

Segments and indexes are written once against `Blob`, so the file-backed and the memory-backed
logs share every line of offset, index and roll logic.
"""

from __future__ import annotations

import os
import resource
import time
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

_CREATE_EMPTY = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
# Below this, reading the bytes costs less than a descriptor of their own and a sendfile.
SMALL_REGION_BYTES = 64 * 1024


class Blob(Protocol):
    @property
    def size(self) -> int: ...

    def write_at(self, data: bytes | bytearray | memoryview, position: int) -> None: ...

    def read_at(self, length: int, position: int) -> bytes: ...

    def region(self, position: int, length: int) -> bytes | FileRegion:
        """`length` bytes from `position`, to be sent as they are: a FileRegion where the bytes
        are in a file (nothing is read now), else (or when they are few) a copy."""
        ...

    def truncate(self, size: int) -> None: ...

    def flush(self) -> None: ...

    def delete(self) -> None: ...

    def exists(self) -> bool: ...


class MemoryBlob:
    def __init__(self) -> None:
        self._data = bytearray()
        self._deleted = False

    @property
    def size(self) -> int:
        return len(self._data)

    def write_at(self, data: bytes | bytearray | memoryview, position: int) -> None:
        self._data[position : position + len(data)] = data

    def read_at(self, length: int, position: int) -> bytes:
        return bytes(memoryview(self._data)[position : position + length])

    def region(self, position: int, length: int) -> bytes:
        return self.read_at(length, position)

    def truncate(self, size: int) -> None:
        del self._data[size:]

    def flush(self) -> None:
        pass

    def delete(self) -> None:
        self._data = bytearray()
        self._deleted = True

    def exists(self) -> bool:
        return not self._deleted


def default_max_open_files() -> int:
    """A quarter of the descriptor limit (sockets need the rest), between 16 and 2048."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 2048
    return max(16, min(2048, soft // 4))


class FilePool:
    """Open descriptors by path, least recently used closed first.

    With 1,000 partitions and three files per segment, keeping every file open would exceed a
    1024-descriptor limit; closing a descriptor loses nothing because every write is a
    `pwrite` at an explicit position and `fsync` on a reopened descriptor flushes the file.
    """

    def __init__(self, max_open: int | None = None) -> None:
        self.max_open = max_open if max_open is not None else default_max_open_files()
        self._fds: OrderedDict[str, int] = OrderedDict()

    def fd(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is not None:
            self._fds.move_to_end(path)
            return fd
        while len(self._fds) >= self.max_open:
            _oldest, old_fd = self._fds.popitem(last=False)
            os.close(old_fd)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._fds[path] = fd
        return fd

    def open_fd(self, path: str) -> int | None:
        """The descriptor of `path` if the pool holds one (not opened for this)."""
        return self._fds.get(path)

    def close(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        while self._fds:
            _path, fd = self._fds.popitem()
            os.close(fd)

    @property
    def open_count(self) -> int:
        return len(self._fds)


class FileBlob:
    """A file whose size is tracked here, so appends never need a `stat`."""

    def __init__(
        self, path: Path | str, pool: FilePool, *, new: bool = False, absent: bool = False
    ) -> None:
        """The file at `path` as it is on disk; with `new`, created empty now (its descriptor
        is opened in the pool on first use); with `absent`, known not to exist yet (created by
        its first write)."""
        self._key = str(path)
        self._pool = pool
        if absent:
            self._size, self.modified_ms = -1, 0
        elif new:
            os.close(os.open(self._key, _CREATE_EMPTY, 0o644))
            self._size, self.modified_ms = 0, time.time_ns() // 1_000_000
        else:
            try:
                status = os.stat(self._key)
            except FileNotFoundError:
                self._size, self.modified_ms = -1, 0
            else:
                self._size, self.modified_ms = status.st_size, status.st_mtime_ns // 1_000_000
        # Whether this process may have changed the file since its last fsync here (as found
        # on disk it is not known to be durable, unless its log says so: mark_synced).
        self._unsynced = True

    @property
    def path(self) -> Path:
        return Path(self._key)

    @property
    def size(self) -> int:
        # (no `max`: a builtin with keyword parsing, and this is asked twice per append)
        return self._size if self._size > 0 else 0

    def exists(self) -> bool:
        return self._size >= 0

    def create(self) -> None:
        self._pool.fd(self._key)
        self._size = max(self._size, 0)

    def write_at(self, data: bytes | bytearray | memoryview, position: int) -> None:
        fds = self._pool._fds  # `FilePool.fd` when the descriptor is open, inline: every append
        fd = fds.get(self._key)
        if fd is None:
            fd = self._pool.fd(self._key)
        else:
            fds.move_to_end(self._key)
        written = os.pwrite(fd, data, position)
        if written < len(data):
            view = memoryview(data)
            while written < len(view):
                written += os.pwrite(fd, view[written:], position + written)
        if position + written > self._size:
            self._size = position + written
        self._unsynced = True

    def read_at(self, length: int, position: int) -> bytes:
        if length <= 0:
            return b""
        return os.pread(self._pool.fd(self._key), length, position)

    def region(self, position: int, length: int) -> bytes | FileRegion:
        if length <= SMALL_REGION_BYTES:
            return self.read_at(length, position)
        return FileRegion(os.dup(self._pool.fd(self._key)), position, length)

    def truncate(self, size: int) -> None:
        fd = self._pool.open_fd(self._key)
        if fd is None and self._size >= 0:
            # By path: no descriptor opened (and another evicted) for one call.
            os.truncate(self._key, size)
        else:
            os.ftruncate(self._pool.fd(self._key) if fd is None else fd, size)
        self._size = size
        self._unsynced = True

    def flush(self) -> None:
        """fsync, unless nothing changed since the last one (or since `mark_synced`)."""
        if self._size >= 0 and self._unsynced:
            os.fsync(self._pool.fd(self._key))
            self._unsynced = False

    def mark_synced(self) -> None:
        """The file as it is is durable (a log opened after a clean shutdown, or an empty file
        whose directory is synced): the next flush need not fsync it."""
        self._unsynced = False

    def delete(self) -> None:
        self._pool.close(self._key)
        self.path.unlink(missing_ok=True)
        self._size = -1

    def rename_to(self, path: Path) -> None:
        self._pool.close(self._key)
        self.path.rename(path)
        self._key = str(path)


class FileRegion:
    """Bytes of a file still on disk, for a response that sends them as they are (sendfile).

    It owns a duplicate of the file's descriptor, so the pool may close its own and retention
    may delete the file before the region is sent (the data stays readable, as with Kafka's
    FileRecords). `close()` releases it; a region dropped unsent releases it when collected.
    """

    __slots__ = ("fd", "position", "remaining")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self.fd = fd
        self.position = position
        self.remaining = length

    def __len__(self) -> int:
        return self.remaining

    def advance(self, sent: int) -> None:
        self.position += sent
        self.remaining -= sent

    def read(self, max_bytes: int | None = None) -> bytes:
        """Up to `max_bytes` (default: all) of the region from its current position, which moves
        past them. Raises OSError if the file is shorter than the region (truncated meanwhile)."""
        length = self.remaining if max_bytes is None else min(max_bytes, self.remaining)
        data = os.pread(self.fd, length, self.position) if length > 0 else b""
        if len(data) < length:
            raise OSError(f"file region ends {length - len(data)} bytes early")
        self.advance(length)
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()
