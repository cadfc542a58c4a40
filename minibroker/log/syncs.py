"""The fsyncs of one request that creates or deletes many partitions, made together.

Creating a partition durably takes four fsyncs (its `partition.metadata`, the rename of it, its
directory, the data directory) and deleting one a checkpoint rewrite: one at a time, a
CreateTopics of 10,000 partitions waited for 40,000 journal commits. Gathered here, the files
are made durable, then renamed into place, then their directories made durable: a power cut
leaves what it would have left one partition at a time. Directories renamed away for deletion
are removed afterwards in a thread, as Kafka removes `-delete` directories after the request
(a start removes any left over).

Each step is either one fsync per path, in parallel threads (ext4 commits concurrent fsyncs
in one journal transaction), or, past `SYNCFS_FROM` paths on Linux, one `syncfs` of the data
directory's filesystem: it writes out every file and directory of that filesystem, these
among them, for the price of one journal commit. It also writes out whatever else is dirty
there (appends not yet flushed), which is why a few paths are still synced one by one.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .checkpoints import fsync_directory as fsync_path

_SYNC_THREADS = 32
_CREATE_FOR_WRITING = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
SYNCFS_FROM = 64


def _load_syncfs() -> ctypes._NamedFuncPointer | None:
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return None
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    return syncfs


_syncfs = _load_syncfs()


def syncfs(anywhere_on_it: Path) -> bool:
    """Make the whole filesystem holding `anywhere_on_it` durable; False where the system
    has no syncfs."""
    if _syncfs is None:
        return False
    fd = os.open(anywhere_on_it, os.O_RDONLY)
    try:
        if _syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error), str(anywhere_on_it))
    finally:
        os.close(fd)
    return True


def fsync_all(paths: Iterable[Path], filesystem: Path | None = None) -> None:
    """fsync every path (files or directories), in parallel, or with one syncfs of
    `filesystem` (a directory holding them all) when they are many."""
    unique = list(dict.fromkeys(paths))
    if filesystem is not None and len(unique) >= SYNCFS_FROM and syncfs(filesystem):
        return
    if len(unique) <= 1:
        for path in unique:
            fsync_path(path)
        return
    with ThreadPoolExecutor(min(_SYNC_THREADS, len(unique))) as pool:
        for _ in pool.map(fsync_path, unique):
            pass


class GroupedSyncs:
    """Writes and removals whose fsyncs wait for `complete`; all of them under `data_dir`."""

    def __init__(self, data_dir: Path | None = None) -> None:
        self._data_dir = data_dir
        self._files: list[Path] = []
        self._renames: list[tuple[Path, Path]] = []
        self._directories: list[Path] = []
        self._removals: list[Path] = []
        self.checkpoint_due = False

    def write_atomically(self, path: Path, data: bytes) -> None:
        """`checkpoints.write_atomically`, its syncs and rename made at `complete`."""
        temporary = path.with_name(path.name + ".tmp")
        # os calls, not open(): no fstat, isatty or seek, once per partition created
        fd = os.open(temporary, _CREATE_FOR_WRITING, 0o644)
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
        self._files.append(temporary)
        self._renames.append((temporary, path))
        self._directories.append(path.parent)

    def sync_directory(self, directory: Path) -> None:
        self._directories.append(directory)

    def remove_after_sync(self, directory: Path) -> None:
        """Remove `directory` once the rename that took it out of the way is durable."""
        self._removals.append(directory)

    def complete(self) -> threading.Thread | None:
        """Make everything durable; returns the thread removing the deleted directories."""
        fsync_all(self._files, self._data_dir)
        for temporary, path in self._renames:
            os.replace(temporary, path)
        fsync_all(self._directories, self._data_dir)
        if not self._removals:
            return None
        remover = threading.Thread(
            target=_remove_all, args=(self._removals,), name="remove-deleted", daemon=True
        )
        remover.start()
        return remover


def _remove_all(directories: list[Path]) -> None:
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
