"""A power-loss interposer: wraps the `os` calls the broker makes on a data directory and keeps
a model of what a power cut at any point would leave on disk.

The model is the POSIX minimum, as ext4 without `auto_da_alloc` gives it:

- a file's bytes survive as they were at its last `fsync`/`fdatasync` (none if never synced);
- a directory's entries (creations, renames, unlinks) survive as they were at the directory's
  last `fsync`; a directory never synced since it was made keeps no entries;
- `syncfs` (minibroker.log.syncs) makes every file and directory of the data directory durable.

Files are tracked by inode, so a renamed file keeps its synced bytes. Every unlinked or replaced
file is first hard-linked into a graveyard outside the data directory, so that its inode cannot
be reused while an older directory state may still name it.

Two variants of crash image are built:

- `synced`: only what was synced (directories as at their last fsync);
- `torn`: every directory as it is now (unsynced metadata kept, as a journal may commit it)
  with each file's synced bytes plus a random prefix of the bytes appended since (none, part or
  all of them), the other extreme of what ext4 may keep.

Two modes. `eager` (the crash tests): a crash image of each variant is taken just before every
fsync, rename, replace and unlink (the points where the next durable state begins, so each image
is the most that can be lost at once); the durable state does not change between two of them,
so every operation between them is covered by the image before the next; torn images taken
before every directory operation are also every prefix of the directory operations since the
last sync (ext4's journal commits them in order). Writes, opens and truncations are counted as
operations so that images name them. Not eager (a cluster's `crash_node`, the Jepsen nemesis):
no image is taken until `crash_image` asks for one, and writes are not counted, so a node's
appends pass through no wrapper at all; only the calls that change durable state (fsyncs,
renames, unlinks) pay for the model.

Several models may be installed at once (one per node of an in-process cluster): the `os`
functions are wrapped once, process-wide, and each call goes to the model whose directory it
touches (an fd's path is found through /proc/self/fd); calls elsewhere go straight through.

The broker's own fsyncs on a modelled directory are not passed to the disk: the model, not the
disk, decides what survives. Writes through `open()` file objects (checkpoint temporaries) are
not counted as operations; the image before the fsync or rename that follows them covers them.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
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
VARIANTS = (SYNCED, TORN)
# A model that is not eager forgets the unlinked files no synced directory names any more
# after this many unlinks and replacements (the graveyard would otherwise grow without end).
COLLECT_EVERY = 256


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
    """The model of one directory (`root`); `installed()` (or `install`/`uninstall`) puts it
    between the broker and the disk."""

    def __init__(self, root: Path, graveyard: Path, seed: int = 24, *, eager: bool = True) -> None:
        self.root = root.resolve()
        self._prefix = str(self.root) + os.sep
        self.graveyard = graveyard
        self.eager = eager
        self.active = True  # False while `restore` rebuilds the directory
        self.op_count = 0
        self.fsyncs = 0
        self.images_taken: list[CrashImage] = []
        self._file_bytes: dict[int, bytes] = {}
        self._dir_entries: dict[int, dict[str, Entry]] = {}
        self._buried: dict[int, Path] = {}
        self._burials = 0
        self._adopt_existing()
        self._durable_version = 0
        self._imaged_version = -1
        self._random = random.Random(seed)
        self._lock = threading.RLock()
        self._names = itertools.count()
        self._touched: set[str] = set()

    # -- what the broker touches -----------------------------------------------------------

    def note(self, path: str) -> bool:
        """Whether the absolute `path` is in the directory; remembers the paths it touches."""
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
        try:
            inode = os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_ino
        except OSError:
            return
        if inode in self._buried:
            return
        target = self.graveyard / f"{next(self._names)}"
        with suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            os.link(path, target, src_dir_fd=dir_fd, follow_symlinks=False)
            self._buried[inode] = target
        self._burials += 1
        if not self.eager and self._burials % COLLECT_EVERY == 0:
            self._collect()

    def _collect(self) -> None:
        """Forget the inodes that neither a synced directory nor the directory as it is now
        names: no crash image can hold them any more."""
        named = self._synced_inodes()
        for directory, _subdirectories, _files in os.walk(self.root):
            named.add(os.stat(directory).st_ino)
            named.update(inode for inode, _is_dir in self._list(directory).values())
        for inode, path in list(self._buried.items()):
            if inode not in named:
                path.unlink(missing_ok=True)
                del self._buried[inode]
                self._file_bytes.pop(inode, None)
        for inode in list(self._dir_entries):
            if inode not in named:
                del self._dir_entries[inode]

    def _synced_inodes(self) -> set[int]:
        """The root and everything its synced directory entries reach."""
        root = os.stat(self.root).st_ino
        reached, pending = {root}, [root]
        while pending:
            for child, is_dir in self._dir_entries.get(pending.pop(), {}).values():
                if child not in reached:
                    reached.add(child)
                    if is_dir:
                        pending.append(child)
        return reached

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

    def crash_image(self, variant: str) -> CrashImage:
        """What a power cut now would leave (`SYNCED` or `TORN`), not kept in `images_taken`."""
        build = {SYNCED: self._build_synced, TORN: self._build_torn}[variant]
        with self._lock:
            image = CrashImage(f"now-{variant}", variant, self.op_count, self.op_count, [], {})
            build(image)
            return image

    def restore(self, image: CrashImage) -> None:
        """The power comes back: the directory becomes `image` (written past the interposer),
        all of it on disk, and the graveyard of the lost state is emptied."""
        with self._lock:
            self.active = False
            try:
                shutil.rmtree(self.root)
                image.materialise(self.root)
                for path in self._buried.values():
                    path.unlink(missing_ok=True)
            finally:
                self.active = True
            self._buried.clear()
            self._file_bytes.clear()
            self._dir_entries.clear()
            self._adopt_existing()
            self._durable_version += 1

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

    # -- the calls, from the interposer ----------------------------------------------------

    def counted(self) -> None:
        with self._lock:
            self.op_count += 1

    def fsynced(self, fd: int) -> None:
        with self._lock:
            if self.eager:
                self._crash_point()
            # The model decides what survives; the real sync would only cost time.
            self.op_count += 1
            self.fsyncs += 1
            self._record_sync(fd)

    def synced_all(self) -> None:
        """A syncfs of the filesystem holding the directory."""
        with self._lock:
            if self.eager:
                self._crash_point()
            self.op_count += 1
            self.fsyncs += 1
            self._adopt_existing()
            self._durable_version += 1

    def metadata_call(
        self,
        call: Callable[..., Any],
        target: Any,
        dir_fd: int | None,
        buries: bool,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """rename/replace (the target is buried) and unlink/remove (the file is), rmdir."""
        with self._lock:
            if self.eager:
                self._crash_point()
            if buries:
                self._bury(target, dir_fd)
            result = call(*args, **kwargs)
            self.op_count += 1
            return result

    # -- installing ------------------------------------------------------------------------

    def install(self) -> None:
        self.graveyard.mkdir(parents=True, exist_ok=True)
        _INTERPOSER.add(self)

    def uninstall(self) -> None:
        _INTERPOSER.remove(self)

    @contextmanager
    def installed(self) -> Iterator[PowerLossModel]:
        self.install()
        try:
            yield self
        finally:
            self.uninstall()


SYNC_CALLS = ("fsync", "fdatasync")
METADATA_CALLS = {"rename": True, "replace": True, "unlink": True, "remove": True, "rmdir": False}
COUNTED_CALLS = ("open", "pwrite", "write", "ftruncate", "mkdir")


class _Interposer:
    """The `os` wrappers, installed once for every model, each call sent to its model."""

    def __init__(self) -> None:
        self.models: tuple[PowerLossModel, ...] = ()
        self._lock = threading.Lock()
        self._original: dict[str, Callable[..., Any]] = {}
        self._original_syncfs = syncs.syncfs
        self._wrappers: dict[str, Callable[..., Any]] = {
            **{name: self._wrap_sync(name) for name in SYNC_CALLS},
            **{name: self._wrap_metadata(name, buries) for name, buries in METADATA_CALLS.items()},
            **{name: self._wrap_counted(name) for name in COUNTED_CALLS},
        }

    def add(self, model: PowerLossModel) -> None:
        with self._lock:
            if not self.models:
                self._original = {name: getattr(os, name) for name in self._wrappers}
                self._original_syncfs = syncs.syncfs
            self.models = (*self.models, model)
            self._install()

    def remove(self, model: PowerLossModel) -> None:
        with self._lock:
            self.models = tuple(each for each in self.models if each is not model)
            self._install()

    def _install(self) -> None:
        """Writes are wrapped only while an eager model counts them."""
        counting = any(model.eager for model in self.models)
        for name, wrapper in self._wrappers.items():
            wanted = bool(self.models) and (counting or name not in COUNTED_CALLS)
            setattr(os, name, wrapper if wanted else self._original[name])
        if self.models:
            syncs.syncfs = self._syncfs
        else:
            syncs.syncfs = self._original_syncfs

    # -- whose call ------------------------------------------------------------------------

    def _owner(self, path: str) -> PowerLossModel | None:
        for model in self.models:
            if model.active and model.note(path):
                return model
        return None

    def owner_of_fd(self, fd: int) -> PowerLossModel | None:
        try:
            return self._owner(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return None

    def owner_of_path(self, path: Any, dir_fd: int | None = None) -> PowerLossModel | None:
        if dir_fd is not None:
            return self.owner_of_fd(dir_fd)
        if isinstance(path, int):
            return self.owner_of_fd(path)
        if not isinstance(path, (str, bytes, os.PathLike)):
            return None
        return self._owner(os.path.abspath(os.fsdecode(os.fspath(path))))

    # -- the wrappers ----------------------------------------------------------------------

    def _wrap_sync(self, name: str) -> Callable[[int], None]:
        def wrapper(fd: int) -> None:
            model = self.owner_of_fd(fd)
            if model is None:
                self._original[name](fd)
            else:
                model.fsynced(fd)

        return wrapper

    def _syncfs(self, anywhere_on_it: Path) -> bool:
        """Makes durable every modelled directory on the same filesystem."""
        device = os.stat(anywhere_on_it).st_dev
        modelled = [m for m in self.models if m.active and os.stat(m.root).st_dev == device]
        for model in modelled:
            model.synced_all()
        if self.owner_of_path(anywhere_on_it) is not None:
            return True
        return bool(self._original_syncfs(anywhere_on_it))

    def _wrap_metadata(self, name: str, buries: bool) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            dir_fd = kwargs.get("dst_dir_fd" if name in ("rename", "replace") else "dir_fd")
            path = args[-1] if len(args) > 1 else args[0]
            model = self.owner_of_path(path, dir_fd)
            if model is None:
                return self._original[name](*args, **kwargs)
            return model.metadata_call(self._original[name], path, dir_fd, buries, args, kwargs)

        return wrapper

    def _wrap_counted(self, name: str) -> Callable[..., Any]:
        """Calls that change no durable state by themselves (writes, opens, mkdir, truncate):
        counted as operations, so that crash points name them."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = self._original[name](*args, **kwargs)
            model = self.owner_of_path(args[0], kwargs.get("dir_fd"))
            if model is not None:
                model.counted()
            return result

        return wrapper


_INTERPOSER = _Interposer()


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
