"""Assemble the image's root filesystem in the Dockerfile's build stage.

    /opt/minibroker/bin/python docker/slim_rootfs.py ROOT IMAGE_FILES

The image is `FROM scratch` with ROOT copied in, so it holds only what the broker runs:

- the interpreter of the running venv and its standard library, less what a broker never
  imports (the test suite, tkinter, idlelib, ensurepip, lib2to3, the static library under
  config-*, the base image's own site-packages) and compiled to bytecode;
- the venv itself (minibroker and its dependencies, less grpcio, which nothing imports), its
  shared objects stripped of symbols;
- busybox with the applets that start scripts and Testcontainers' port checks use (sh, sleep,
  sed, hostname, cat, awk, grep, nc ...), and bash, which those scripts name in their `#!`;
- every shared library these link (as ldd lists them), the dynamic loader and ld.so.cache;
- IMAGE_FILES (docker/image: the entrypoint, the broker's settings, the Kafka images' start
  scripts), with the directories the broker and those scripts write to owned by uid 1000.

Paths are the build stage's own, symbolic links included, so the same script serves Debian's
python3 (/usr) and the official python images (/usr/local).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path

VENV = Path(sys.prefix)
UID = GID = 1000
# Standard library packages and files a broker never imports.
STDLIB_EXCLUDED = {
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "turtle.py",
    "lib2to3",
    "ensurepip",
    "pydoc_data",
    "sqlite3",
    "sitecustomize.py",  # Debian's: looks for apport's crash handler at every start
    "site-packages",
    "dist-packages",
    "__pycache__",
}
STDLIB_EXCLUDED_PREFIXES = ("config-",)
# Extension modules of the standard library that only its tests or terminals use.
DYNLOAD_EXCLUDED = re.compile(
    r"^(_test|_ctypes_test|xxlimited|_xxtestfuzz|_xxsubinterpreters|_tkinter|_curses|readline"
    r"|audioop|ossaudiodev|nis|_dbm|_gdbm|_sqlite3)"
)
# grpcio (19 MB) comes in as grpcio-tools' dependency; nothing imports it: the Schema Registry
# runs `python -m grpc_tools.protoc`, which needs grpc_tools alone.
SITE_PACKAGES_EXCLUDED = re.compile(r"^(grpc|grpcio-[^/]*\.dist-info)$")
BUSYBOX_APPLETS = [
    "sh",
    "ash",
    "[",
    "[[",
    "awk",
    "basename",
    "cat",
    "chmod",
    "cp",
    "cut",
    "date",
    "dirname",
    "du",
    "echo",
    "egrep",
    "env",
    "expr",
    "false",
    "find",
    "grep",
    "head",
    "hostname",
    "id",
    "kill",
    "ln",
    "ls",
    "mkdir",
    "mktemp",
    "mv",
    "nc",
    "nproc",
    "od",
    "printf",
    "ps",
    "pwd",
    "readlink",
    "rm",
    "rmdir",
    "sed",
    "seq",
    "sleep",
    "sort",
    "stat",
    "tail",
    "tee",
    "test",
    "timeout",
    "touch",
    "tr",
    "true",
    "uname",
    "uniq",
    "wc",
    "which",
    "whoami",
    "xargs",
]
WRITABLE_DIRECTORIES = ["var/lib/minibroker", "home/minibroker", "etc/confluent", "etc/kafka"]
ETC_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n"
    "minibroker:x:1000:1000:minibroker:/home/minibroker:/bin/sh\n",
    "etc/group": "root:x:0:\nminibroker:x:1000:\n",
    "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
}


class RootFs:
    def __init__(self, root: Path) -> None:
        self.root = root

    def at(self, path: Path) -> Path:
        return self.root / path.relative_to("/")

    def replicate(self, path: Path) -> None:
        """`path` (absolute) into the root, with every symbolic link on the way to it (an
        absolute link becomes relative, so nothing written through it leaves the root)."""
        path = Path(os.path.abspath(path))
        if path == Path("/"):
            return
        self.replicate(path.parent)
        dest = self.at(path)
        if os.path.lexists(dest):
            return
        if path.is_symlink():
            target = Path(os.path.normpath(path.parent / os.readlink(path)))
            dest.symlink_to(os.path.relpath(target, path.parent))
            self.replicate(target)
        elif path.is_dir():
            dest.mkdir()
        else:
            shutil.copy2(path, dest)

    def copy_tree(self, source: Path, ignore: Callable[[str, list[str]], Iterable[str]]) -> None:
        self.replicate(source.parent)
        shutil.copytree(source, self.at(source), symlinks=True, ignore=ignore)
        for link in self.at(source).rglob("*"):
            if link.is_symlink() and os.path.isabs(os.readlink(link)):
                self.replicate(Path(os.readlink(link)))


def ignore_stdlib(directory: str, names: list[str]) -> set[str]:
    if Path(directory).name == "lib-dynload":
        return {name for name in names if DYNLOAD_EXCLUDED.match(name)}
    return {
        name
        for name in names
        if name in STDLIB_EXCLUDED or name.startswith(STDLIB_EXCLUDED_PREFIXES)
    }


def ignore_venv(directory: str, names: list[str]) -> set[str]:
    at_top = Path(directory).name == "site-packages"
    return {
        name
        for name in names
        if name == "__pycache__" or (at_top and SITE_PACKAGES_EXCLUDED.match(name))
    }


def is_elf(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


def linked_libraries(files: Iterable[Path]) -> set[Path]:
    """Every shared library and loader the files link, as absolute paths of the build stage."""
    libraries: set[Path] = set()
    for file in files:
        done = subprocess.run(["ldd", str(file)], capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            if "not found" in line:
                raise SystemExit(f"{file}: {line.strip()}")
            libraries.update(Path(word) for word in line.split() if word.startswith("/"))
    return libraries


def install_busybox(rootfs: RootFs) -> None:
    busybox = shutil.which("busybox")
    if busybox is None:
        raise SystemExit("busybox is not installed in the build stage")
    rootfs.replicate(Path(busybox))
    rootfs.replicate(Path("/bin/bash"))
    applet_dir = rootfs.at(Path(busybox).parent)
    for applet in BUSYBOX_APPLETS:
        link = applet_dir / applet
        if not os.path.lexists(link):
            link.symlink_to("busybox")
    if not os.path.lexists(rootfs.at(Path("/bin/sh"))):
        rootfs.at(Path("/bin/sh")).symlink_to(os.path.relpath(busybox, "/bin"))


def strip(files: Iterable[Path]) -> None:
    tool = shutil.which("strip")
    if tool is None:
        print("no strip in the build stage: shared objects keep their symbols")
        return
    subprocess.run([tool, "--strip-unneeded", *map(str, files)], check=True)


def compile_bytecode(rootfs: RootFs, directories: Iterable[Path]) -> None:
    """Bytecode next to every module, named by the paths the image will have; hash-based and
    unchecked, so nothing stats the sources at import."""
    for directory in directories:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "compileall",
                "-q",
                "-j",
                "0",
                "--invalidation-mode",
                "unchecked-hash",
                "-s",
                str(rootfs.root),
                "-p",
                "/",
                str(rootfs.at(directory)),
            ],
            check=True,
        )


def install_image_files(rootfs: RootFs, files: Path) -> None:
    shutil.copytree(files, rootfs.root, symlinks=True, dirs_exist_ok=True)
    for relative, text in ETC_FILES.items():
        (rootfs.root / relative).write_text(text)
    tmp = rootfs.root / "tmp"
    tmp.mkdir(exist_ok=True)
    tmp.chmod(0o1777)
    # Testcontainers' Go module copies its start script into /usr/sbin.
    rootfs.replicate(Path("/usr/sbin"))
    for relative in WRITABLE_DIRECTORIES:
        directory = rootfs.root / relative
        directory.mkdir(parents=True, exist_ok=True)
        for path in [directory, *directory.rglob("*")]:
            os.chown(path, UID, GID, follow_symlinks=False)


def write_loader_cache(rootfs: RootFs) -> None:
    for config in [Path("/etc/ld.so.conf"), *Path("/etc/ld.so.conf.d").glob("*.conf")]:
        rootfs.replicate(config)
    subprocess.run(["ldconfig", "-r", str(rootfs.root)], check=True)


def main() -> None:
    root, image_files = Path(sys.argv[1]), Path(sys.argv[2])
    root.mkdir(parents=True)
    rootfs = RootFs(root)
    stdlib = Path(sysconfig.get_path("stdlib"))
    rootfs.copy_tree(VENV, ignore_venv)
    rootfs.replicate(Path(os.path.realpath(sys.executable)))  # the interpreter the venv links
    rootfs.copy_tree(stdlib, ignore_stdlib)
    install_busybox(rootfs)
    venv_objects = [path for path in rootfs.at(VENV).rglob("*") if is_elf(path)]
    strip(venv_objects)
    elf_files = [path for path in root.rglob("*") if is_elf(path)]
    for library in sorted(linked_libraries(elf_files)):
        rootfs.replicate(library)
    write_loader_cache(rootfs)
    compile_bytecode(rootfs, [stdlib, VENV])
    install_image_files(rootfs, image_files)


if __name__ == "__main__":
    main()
