"""The fsyncs of one request that creates or deletes many partitions, made together.

Creating a partition durably takes four fsyncs (its `partition.metadata`, the rename of it, its
directory, the data directory) and deleting one a checkpoint rewrite: one at a time, a
CreateTopics of 10,000 partitions waited for 40,000 journal commits. Gathered here, the files
are synced in parallel threads (ext4 commits concurrent fsyncs in one journal transaction),
then renamed into place, then their directories synced in parallel, then what had to wait for
durability (removing renamed-away directories) runs. Every file and directory still gets its
own fsync, in the same order as before, so a power cut leaves what it would have left one
partition at a time.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .checkpoints import fsync_directory as fsync_path

_SYNC_THREADS = 32


def fsync_all(paths: Iterable[Path]) -> None:
    """fsync every path (files or directories), in parallel."""
    unique = list(dict.fromkeys(paths))
    if len(unique) <= 1:
        for path in unique:
            fsync_path(path)
        return
    with ThreadPoolExecutor(min(_SYNC_THREADS, len(unique))) as pool:
        for _ in pool.map(fsync_path, unique):
            pass


class GroupedSyncs:
    """Writes and removals whose fsyncs wait for `complete`."""

    def __init__(self) -> None:
        self._files: list[Path] = []
        self._renames: list[tuple[Path, Path]] = []
        self._directories: list[Path] = []
        self._removals: list[Path] = []
        self.checkpoint_due = False

    def write_atomically(self, path: Path, data: bytes) -> None:
        """`checkpoints.write_atomically`, its syncs and rename made at `complete`."""
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "wb") as file:
            file.write(data)
        self._files.append(temporary)
        self._renames.append((temporary, path))
        self._directories.append(path.parent)

    def sync_directory(self, directory: Path) -> None:
        self._directories.append(directory)

    def remove_after_sync(self, directory: Path) -> None:
        """Remove `directory` once the rename that took it out of the way is durable."""
        self._removals.append(directory)

    def complete(self) -> None:
        fsync_all(self._files)
        for temporary, path in self._renames:
            os.replace(temporary, path)
        fsync_all(self._directories)
        for directory in self._removals:
            shutil.rmtree(directory)
