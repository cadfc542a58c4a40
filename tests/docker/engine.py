"""A Docker engine for the image tests, set up on this machine from Debian's packages.

`docker_engine()` installs docker.io, docker-compose and debootstrap with apt-get when they
are missing and starts `dockerd --ip=127.0.0.1` (on overlay2, or vfs where the kernel lacks
overlayfs) when no daemon answers: its default bridge with ports published on 127.0.0.1 for
Testcontainers, host networking for the other tests; it stops that daemon again on exit.
Registry images cannot be pulled, so `build_base_image()` builds a stand-in for
`python:3.12-slim`'s build stage with debootstrap (this Debian release's python3 and venv, a
C compiler, Python's headers and busybox, what the Dockerfile's build stage would get from
apt-get; kept between runs under a tag naming its packages), and `build_image()` builds
docker/Dockerfile on it with BuildKit from a wheelhouse made with this machine's own pip
settings, passed to the build through pip's environment variables. Nothing about this
machine's package index goes into the repository. Every failure raises `DockerUnavailable`
with the reason.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCKER = "/usr/bin/docker"  # docker.io's client, the same version as the daemon it runs
COMPOSE = "/usr/bin/docker-compose"
PACKAGES = {"docker.io": "/usr/bin/dockerd", "docker-compose": COMPOSE, "debootstrap": None}
IMAGE = "minibroker:e2e-test"
BUILD_STAGE_IMAGE = "minibroker:e2e-test-build"
TEST_LABEL = "org.minibroker.e2e-test=1"
LOCK_FILE = Path(tempfile.gettempdir()) / "minibroker-docker-tests.lock"
DAEMON_LOG = Path(tempfile.gettempdir()) / "minibroker-dockerd.log"
DAEMON_START_TIMEOUT_S = 60.0
STORAGE_DRIVERS = ["overlay2", "vfs"]
# What the stand-in base image does not need: package lists and caches, docs, translations.
BASE_ROOTFS_TRIM = [
    "var/cache/apt",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
]


class DockerUnavailable(Exception):
    """Docker cannot be set up or used here; the message says why."""


def run(
    args: Sequence[str],
    *,
    timeout: float = 120,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run a command; with `check`, a failure raises DockerUnavailable with its output."""
    try:
        done = subprocess.run(
            list(args),
            capture_output=True,
            timeout=timeout,
            env=None if env is None else {**os.environ, **env},
            input=input_bytes,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DockerUnavailable(f"{' '.join(args)}: {exc}") from exc
    if check and done.returncode != 0:
        output = (done.stdout + done.stderr).decode(errors="replace")[-4000:]
        raise DockerUnavailable(f"{' '.join(args)} exited {done.returncode}:\n{output}")
    return done


def docker(*args: str, timeout: float = 120, check: bool = True) -> str:
    return run([DOCKER, *args], timeout=timeout, check=check).stdout.decode().strip()


def _missing_packages() -> list[str]:
    return [
        package
        for package, binary in PACKAGES.items()
        if not Path(binary or f"/usr/sbin/{package}").exists()
    ]


def _install_packages() -> None:
    missing = _missing_packages()
    if not missing:
        return
    if os.geteuid() != 0:
        raise DockerUnavailable(f"installing {missing} needs root (running as {os.geteuid()})")
    apt_env = {"DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    if run(install, timeout=900, env=apt_env, check=False).returncode != 0:
        run(["apt-get", "update", "-q"], timeout=900, env=apt_env)
        run(install, timeout=900, env=apt_env)


def _daemon_answers() -> bool:
    return run([DOCKER, "info"], timeout=30, check=False).returncode == 0


def _start_daemon() -> subprocess.Popen[bytes]:
    """dockerd on overlay2 where the kernel has overlayfs (containers start without copying
    the image), on vfs otherwise."""
    if os.geteuid() != 0:
        raise DockerUnavailable("no Docker daemon answers and starting dockerd needs root")
    failures: list[str] = []
    for driver in STORAGE_DRIVERS:
        try:
            return _start_daemon_with(driver)
        except DockerUnavailable as exc:
            failures.append(str(exc))
    raise DockerUnavailable("\n".join(failures))


def _start_daemon_with(storage_driver: str) -> subprocess.Popen[bytes]:
    with DAEMON_LOG.open("wb") as log:
        daemon = subprocess.Popen(
            # --ip: ports published without an address (Testcontainers' exposed ports) bind
            # to 127.0.0.1 only, as clients here connect only through 127.0.0.1.
            ["dockerd", f"--storage-driver={storage_driver}", "--ip=127.0.0.1"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + DAEMON_START_TIMEOUT_S
    while not _daemon_answers():
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            daemon.wait()
            tail = DAEMON_LOG.read_text(errors="replace")[-3000:]
            raise DockerUnavailable(
                f"dockerd --storage-driver={storage_driver} did not come up "
                f"(exit {daemon.returncode}):\n{tail}"
            )
        time.sleep(0.2)
    return daemon


def _stop_daemon(daemon: subprocess.Popen[bytes]) -> None:
    daemon.terminate()
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


@contextmanager
def docker_engine() -> Iterator[None]:
    """A running engine, for one test session at a time on this machine."""
    with LOCK_FILE.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install_packages()
        daemon = None if _daemon_answers() else _start_daemon()
        try:
            _check_default_bridge()
            yield
        finally:
            if daemon is not None:
                _stop_daemon(daemon)


def _check_default_bridge() -> None:
    """The Testcontainers tests publish ports from Docker's default bridge network."""
    if run([DOCKER, "network", "inspect", "bridge"], check=False).returncode != 0:
        raise DockerUnavailable(
            "the running dockerd has no default bridge network (started with --bridge=none?); "
            "stop it and the tests start one with its bridge"
        )


def _os_release() -> dict[str, str]:
    pairs = (line.partition("=") for line in Path("/etc/os-release").read_text().splitlines())
    return {key: value.strip('"') for key, _, value in pairs if key}


def debian_mirror() -> str:
    """The first Debian mirror this machine's apt uses (deb822 or one-line sources)."""
    deb822 = Path("/etc/apt/sources.list.d/debian.sources")
    if deb822.exists():
        for line in deb822.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    one_line = Path("/etc/apt/sources.list")
    if one_line.exists():
        for line in one_line.read_text().splitlines():
            fields = line.split()
            if fields[:1] == ["deb"]:
                return next(field for field in fields[1:] if "://" in field)
    raise DockerUnavailable("no Debian mirror found in /etc/apt sources")


BUILD_STAGE_PACKAGES = ["python3", "python3-venv", "python3-dev", "gcc", "libc6-dev", "busybox"]


def build_base_image() -> str:
    """A stand-in for the Dockerfile's build stage on python:3.12-slim: python3 and its venv,
    a C compiler and Python's headers, and busybox (the image's shell and tools)."""
    return _debootstrap_image("minibroker-python-build", BUILD_STAGE_PACKAGES)


def _debootstrap_image(name: str, packages: list[str]) -> str:
    """A minimal image of this Debian release with `packages`, kept under a fixed tag."""
    codename = _os_release().get("VERSION_CODENAME")
    if not codename:
        raise DockerUnavailable("/etc/os-release has no VERSION_CODENAME")
    # The tag names the packages: a changed list builds a new image instead of reusing one.
    packages_hash = hashlib.sha256(" ".join(packages).encode()).hexdigest()[:8]
    tag = f"local/{name}:{codename}-{packages_hash}"
    if run([DOCKER, "image", "inspect", tag], check=False).returncode == 0:
        return tag
    with tempfile.TemporaryDirectory(prefix="minibroker-rootfs-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        run(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=" + ",".join(packages),
                codename,
                str(rootfs),
                debian_mirror(),
            ],
            timeout=900,
        )
        for path in BASE_ROOTFS_TRIM:
            shutil.rmtree(rootfs / path, ignore_errors=True)
        (rootfs / "usr/bin/python").symlink_to("python3")
        _import_rootfs(rootfs, tag)
    return tag


def _import_rootfs(rootfs: Path, tag: str) -> None:
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        imported = subprocess.run(
            [DOCKER, "import", "-", tag], stdin=tar.stdout, capture_output=True, timeout=300
        )
    finally:
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
    if imported.returncode != 0 or tar.returncode != 0:
        raise DockerUnavailable(f"docker import failed: {imported.stderr.decode()}")


def _context_entries() -> list[str]:
    """The paths the repository's .dockerignore lets into the build context."""
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line[1:].rstrip("/") for line in lines if line.startswith("!")]


def build_context(directory: Path) -> Path:
    """What `docker build .` at the repository root sends, plus `wheels/`: a wheelhouse of
    minibroker's dependencies and build requirements made with this machine's pip settings."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so")
    for entry in _context_entries():
        source = REPO / entry
        if source.is_dir():
            shutil.copytree(source, directory / entry, ignore=ignore, symlinks=True)
        else:
            (directory / entry).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, directory / entry)
    (directory / "docker").mkdir(exist_ok=True)
    shutil.copy2(REPO / "docker" / "Dockerfile", directory / "docker" / "Dockerfile")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    wheels = directory / "wheels"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "-w", str(wheels)]
    run([*pip_wheel, str(directory), *pyproject["build-system"]["requires"]], timeout=900)
    # The image builds minibroker from its sources; a fresh wheel of it would only change
    # the context on every run and defeat the build cache.
    for own_wheel in wheels.glob("minibroker-*.whl"):
        own_wheel.unlink()
    return directory


def build_image(build_base: str) -> str:
    """docker/Dockerfile built without network, its build stage on `build_base`; returns the
    image tag."""
    with tempfile.TemporaryDirectory(prefix="minibroker-context-") as scratch:
        context = build_context(Path(scratch))
        build = [
            "build",
            "--network",
            "none",
            "-f",
            str(context / "docker" / "Dockerfile"),
            "--build-arg",
            f"BUILD_IMAGE={build_base}",
            "--build-arg",
            "PIP_NO_INDEX=1",
            "--build-arg",
            "PIP_FIND_LINKS=/src/wheels",
            "--label",
            TEST_LABEL,
        ]
        # Tagging the build stage keeps it out of the prune below, so the next run reuses it.
        _build(*build, "--target", "build", "-t", BUILD_STAGE_IMAGE, str(context))
        _build(*build, "-t", IMAGE, str(context))
    docker("image", "prune", "--force", "--filter", f"label={TEST_LABEL}")
    return IMAGE


def _build(*args: str) -> None:
    """`docker build` with BuildKit, the default builder since Docker 23. docker.io 20.10's
    legacy builder commits a container for every instruction, and on the vfs storage driver
    each commit copies the whole root filesystem: 180 s for the Dockerfile here, 23 s with
    BuildKit.

    BuildKit's cache (/var/lib/docker/buildkit) outlives a change of the daemon's storage
    driver, and its entries then name layers the new driver lacks ("failed to prepare ...
    no such file or directory"): that cache is dropped and the build run once more."""
    try:
        run([DOCKER, *args], timeout=900, env={"DOCKER_BUILDKIT": "1"})
    except DockerUnavailable as exc:
        if "failed to prepare" not in str(exc):
            raise
        docker("builder", "prune", "--all", "--force", timeout=300)
        run([DOCKER, *args], timeout=900, env={"DOCKER_BUILDKIT": "1"})


def image_size_bytes(image: str) -> int:
    return int(docker("image", "inspect", "--format", "{{.Size}}", image))


def container_state(container: str) -> dict[str, object]:
    state: dict[str, object] = json.loads(
        docker("inspect", "--format", "{{json .State}}", container)
    )
    return state


def container_config(image: str) -> Any:
    """The image's `Config` (User, Entrypoint, Volumes, Healthcheck, ...) as parsed JSON."""
    return json.loads(docker("image", "inspect", "--format", "{{json .Config}}", image))


def logs(container: str) -> str:
    """The container's stdout and stderr."""
    done = run([DOCKER, "logs", container], check=False)
    return (done.stdout + done.stderr).decode(errors="replace")
