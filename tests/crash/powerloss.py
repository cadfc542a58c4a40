"""A power-loss interposer: wraps the `os` calls the broker makes on one data directory and
keeps a model of what a power cut at any point would leave on disk.

The model is the POSIX minimum, as ext4 without `auto_da_alloc` gives it:

- a file's bytes survive as they were at its last `fsync`/`fdatasync` (none if never synced);
- a directory's entries (creations, renames, unlinks) survive as they were at the directory's
  last `fsync`; a directory never synced since it was made keeps no entries;
- `syncfs` (minibroker.log.syncs) makes every file and directory of the data directory durable.

Files are tracked by inode, so a renamed file keeps its synced bytes. Every unlinked or replaced
file is first hard-linked into a graveyard outside the data directory, so that its inode cannot
be reused while an older directory state may still name it.

A crash image is taken just before every fsync, rename, replace and unlink (the points where
the next durable state begins, so each image is the most that can be lost at once); the
durable state does not change between two of them, so every operation between them is covered
by the image before the next. Two variants are built:

- `synced`: only what was synced (directories as at their last fsync);
- `torn`: every directory as it is now (unsynced metadata kept, as a journal may commit it)
  with each file's synced bytes plus a random prefix of the bytes appended since (none, part or
  all of them), the other extreme of what ext4 may keep. Taken before every directory
  operation, these are also every prefix of the directory operations since the last sync (ext4's
  journal commits them in order).

The broker's own fsyncs on the data directory are not passed to the disk: the model, not the
disk, decides what survives. Writes through `open()` file objects (checkpoint temporaries) are
not counted as operations; the image before the fsync or rename that follows them covers them.
"""

from __future__ import annotations

import itertools
import os
import random
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibroker.log import syncs

Entry = tuple[int, bool]  # inode, is a directory
SYNCED = "synced"
TORN = "torn"


@dataclass
class CrashImage:
    """A directory as a power cut would leave it, for every operation from `first_op` to
    `last_op`: its subdirectories and files by relative path."""

    name: str
    variant: str
    first_op: int
    last_op: int
    directories: list[str]
    files: dict[str, bytes]

    def materialise(self, target: Path) -> Path:
        target.mkdir(parents=True)
        for directory in self.directories:
            (target / directory).mkdir()
        for name, content in self.files.items():
            (target / name).write_bytes(content)
        return target


class PowerLossModel:
    def __init__(self, root: Path, graveyard: Path, seed: int = 24) -> None:
        self.root = root.resolve()
        self._prefix = str(self.root) + os.sep
        self.graveyard = graveyard
        self.op_count = 0
        self.fsyncs = 0
        self.images_taken: list[CrashImage] = []
        self._file_bytes: dict[int, bytes] = {}
        self._dir_entries: dict[int, dict[str, Entry]] = {}
        self._adopt_existing()
        self._durable_version = 0
        self._imaged_version = -1
        self._random = random.Random(seed)
        self._lock = threading.RLock()
        self._names = itertools.count()
        self._original: dict[str, Callable[..., Any]] = {}
        self._touched: set[str] = set()
        self._original_syncfs: Callable[[Path], bool] = syncs.syncfs

    # -- what the broker touches -----------------------------------------------------------

    def _mine(self, path: Any, dir_fd: int | None = None) -> bool:
        """Whether the call is on the data directory; remembers the paths it touches."""
        if dir_fd is not None:
            return self._fd_is_mine(dir_fd)
        if isinstance(path, int):
            return self._fd_is_mine(path)
        if not isinstance(path, (str, bytes, os.PathLike)):
            return False
        return self._note(os.path.abspath(os.fsdecode(os.fspath(path))))

    def _fd_is_mine(self, fd: int) -> bool:
        try:
            return self._note(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def _note(self, path: str) -> bool:
        mine = path == str(self.root) or path.startswith(self._prefix)
        if mine:
            self._touched.add(path[len(self._prefix) :])
        return mine

    def saw(self, fragment: str) -> bool:
        """Whether the broker touched a path containing `fragment` (under the interposer)."""
        with self._lock:
            return any(fragment in path for path in self._touched)

    # -- the model -------------------------------------------------------------------------

    def _record_sync(self, fd: int) -> None:
        status = os.fstat(fd)
        if stat.S_ISDIR(status.st_mode):
            entries = self._list(f"/proc/self/fd/{fd}")
            changed = self._dir_entries.get(status.st_ino) != entries
            self._dir_entries[status.st_ino] = entries
        else:
            content = Path(f"/proc/self/fd/{fd}").read_bytes()
            changed = self._file_bytes.get(status.st_ino) != content
            self._file_bytes[status.st_ino] = content
        if changed:
            self._durable_version += 1

    def _adopt_existing(self) -> None:
        """What is in the directory already is on disk (a crash image being recovered, or
        everything after a syncfs)."""
        for directory, _subdirectories, files in os.walk(self.root):
            self._dir_entries[os.stat(directory).st_ino] = self._list(directory)
            for name in files:
                path = Path(directory) / name
                self._file_bytes[os.stat(path).st_ino] = path.read_bytes()

    @staticmethod
    def _list(directory: str) -> dict[str, Entry]:
        with os.scandir(directory) as scan:
            return {e.name: (e.inode(), e.is_dir(follow_symlinks=False)) for e in scan}

    def _bury(self, path: Any, dir_fd: int | None) -> None:
        """Keep the inode of a file about to be unlinked or replaced alive (see the module
        docstring); nothing if there is no such file."""
        target = self.graveyard / f"{next(self._names)}"
        with suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            self._original["link"](path, target, src_dir_fd=dir_fd, follow_symlinks=False)

    # -- crash images ----------------------------------------------------------------------

    def _crash_point(self) -> None:
        """The state after the operations so far: a power cut now leaves this."""
        last_op = self.op_count
        latest = self._latest(SYNCED)
        if latest is not None and self._imaged_version == self._durable_version:
            latest.last_op = last_op
        else:
            self._image(SYNCED, self._build_synced, last_op)
            self._imaged_version = self._durable_version
        self._image(TORN, self._build_torn, last_op)

    def crash_now(self) -> None:
        """Take the crash images of this point (the next operation would take them too)."""
        with self._lock:
            self._crash_point()

    def _latest(self, variant: str) -> CrashImage | None:
        for image in reversed(self.images_taken):
            if image.variant == variant:
                return image
        return None

    def _image(self, variant: str, build: Callable[[CrashImage], None], last_op: int) -> None:
        name = f"{len(self.images_taken):05d}-{variant}"
        image = CrashImage(name, variant, last_op, last_op, [], {})
        build(image)
        self.images_taken.append(image)

    def _build_synced(self, image: CrashImage) -> None:
        self._add_synced_directory(os.stat(self.root).st_ino, "", image)

    def _add_synced_directory(self, inode: int, relative: str, image: CrashImage) -> None:
        for name, (child, is_dir) in self._dir_entries.get(inode, {}).items():
            path = os.path.join(relative, name)
            if is_dir:
                image.directories.append(path)
                self._add_synced_directory(child, path, image)
            else:
                image.files[path] = self._file_bytes.get(child, b"")

    def _build_torn(self, image: CrashImage) -> None:
        for directory, subdirectories, files in os.walk(self.root):
            relative = os.path.relpath(directory, self.root)
            image.directories += [
                os.path.normpath(os.path.join(relative, d)) for d in subdirectories
            ]
            for name in files:
                path = os.path.normpath(os.path.join(relative, name))
                image.files[path] = self._torn_bytes(Path(directory) / name)

    def _torn_bytes(self, path: Path) -> bytes:
        synced = self._file_bytes.get(os.stat(path).st_ino, b"")
        current = path.read_bytes()
        if len(current) <= len(synced) or not current.startswith(synced):
            return synced
        extra = len(current) - len(synced)
        kept = 0 if self._random.random() < 0.3 else self._random.randint(0, extra)
        return current[: len(synced) + kept]

    # -- the wrappers ----------------------------------------------------------------------

    def _count(self, mine: bool) -> None:
        if mine:
            self.op_count += 1

    def _fsync(self, fd: int, name: str) -> None:
        with self._lock:
            if not self._fd_is_mine(fd):
                self._original[name](fd)
                return
            self._crash_point()
            # The model decides what survives; the real sync would only cost time.
            self.op_count += 1
            self.fsyncs += 1
            self._record_sync(fd)

    def _wrap_fsync(self, name: str) -> Callable[[int], None]:
        return lambda fd: self._fsync(fd, name)

    def _syncfs(self, anywhere_on_it: Path) -> bool:
        with self._lock:
            if not self._mine(anywhere_on_it):
                return bool(self._original_syncfs(anywhere_on_it))
            self._crash_point()
            self.op_count += 1
            self.fsyncs += 1
            self._adopt_existing()
            self._durable_version += 1
            return True

    def _wrap_metadata(self, name: str, buries: bool) -> Callable[..., Any]:
        """rename/replace (the target is buried) and unlink/remove (the file is)."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            dir_fd = kwargs.get("dst_dir_fd" if name in ("rename", "replace") else "dir_fd")
            path = args[-1] if len(args) > 1 else args[0]
            with self._lock:
                mine = self._mine(path, dir_fd)
                if mine:
                    self._crash_point()
                    if buries:
                        self._bury(path, dir_fd)
                result = self._original[name](*args, **kwargs)
                self._count(mine)
                return result

        return wrapper

    def _wrap_counted(self, name: str) -> Callable[..., Any]:
        """Calls that change no durable state by themselves (writes, opens, mkdir, truncate):
        counted as operations, so that crash points name them."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = self._original[name](*args, **kwargs)
            with self._lock:
                self._count(self._mine(args[0], kwargs.get("dir_fd")))
            return result

        return wrapper

    @contextmanager
    def installed(self) -> Iterator[PowerLossModel]:
        self.graveyard.mkdir(parents=True, exist_ok=True)
        wrappers: dict[str, Callable[..., Any]] = {
            "fsync": self._wrap_fsync("fsync"),
            "fdatasync": self._wrap_fsync("fdatasync"),
            "rename": self._wrap_metadata("rename", buries=True),
            "replace": self._wrap_metadata("replace", buries=True),
            "unlink": self._wrap_metadata("unlink", buries=True),
            "remove": self._wrap_metadata("remove", buries=True),
            "rmdir": self._wrap_metadata("rmdir", buries=False),
            "open": self._wrap_counted("open"),
            "pwrite": self._wrap_counted("pwrite"),
            "write": self._wrap_counted("write"),
            "ftruncate": self._wrap_counted("ftruncate"),
            "mkdir": self._wrap_counted("mkdir"),
        }
        self._original = {name: getattr(os, name) for name in [*wrappers, "link"]}
        for name, wrapper in wrappers.items():
            setattr(os, name, wrapper)
        self._original_syncfs = syncs.syncfs
        syncs.syncfs = self._syncfs
        try:
            yield self
        finally:
            for name in wrappers:
                setattr(os, name, self._original[name])
            syncs.syncfs = self._original_syncfs


@contextmanager
def syncs_skipped() -> Iterator[None]:
    """`fsync`/`fdatasync`/`syncfs` as no-ops while crash images are recovered: the images are
    scratch copies, and where power is lost again an interposer, not the disk, decides what
    survives."""
    saved = os.fsync, os.fdatasync, syncs.syncfs
    os.fsync = os.fdatasync = lambda fd: None
    syncs.syncfs = lambda anywhere_on_it: True
    try:
        yield
    finally:
        os.fsync, os.fdatasync, syncs.syncfs = saved
