"""The brokers a benchmark runs against, each in a child process whose CPU and RSS we read:
minibroker (`minibroker serve` on disk) and librdkafka's mock cluster."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import procstat

if TYPE_CHECKING:
    from benchmarks.tls import TlsClient

MINIBROKER = "minibroker"
MOCK = "mock"


@dataclass
class RunningBroker:
    name: str
    bootstrap: str
    process: subprocess.Popen[str]
    data_dir: Path | None = None
    tls: TlsClient | None = None  # its listener is TLS (benchmarks/tls.py)

    @property
    def pid(self) -> int:
        return self.process.pid

    def connect(self) -> socket.socket:
        """A raw client connection (TLS on a TLS listener), Nagle off."""
        return connect(self.bootstrap, self.tls)

    def client_settings(self) -> dict[str, Any]:
        """librdkafka's settings for a client of this broker."""
        tls = {} if self.tls is None else self.tls.client_settings()
        return {"bootstrap.servers": self.bootstrap, "log_level": 0, **tls}

    def cpu_seconds(self) -> float:
        return procstat.cpu_seconds(self.pid)

    def user_cpu_seconds(self) -> float:
        return procstat.user_cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        return procstat.rss_bytes(self.pid)

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def connect(bootstrap: str, tls: TlsClient | None = None) -> socket.socket:
    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock if tls is None else tls.wrap(sock)


def receive(sock: socket.socket, size: int) -> bytes:
    """What `sock` has (a TLS socket may hold decrypted bytes that select() does not see)."""
    data = sock.recv(size)
    if isinstance(sock, ssl.SSLSocket):
        while pending := sock.pending():
            data += sock.recv(pending)
    return data


def _ready_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait()
        raise RuntimeError(f"broker exited with {process.returncode} before it was ready")
    return line.strip()


def start_minibroker(
    data_dir: Path,
    *overrides: str,
    wrapper: Sequence[str] = (),
    in_memory: bool = False,
    nodes: int = 1,
    listen: bool = True,
) -> RunningBroker:
    """`minibroker serve` on `data_dir` (or `--in-memory`; `--nodes N`: an in-process
    cluster); `wrapper` runs it under a tool (e.g. valgrind); `listen`: a PLAINTEXT listener
    on any port (else the overrides give the listeners)."""
    argv = [*wrapper, sys.executable, "-m", "minibroker", "serve"]
    argv += ["--listen", "127.0.0.1:0"] if listen else []
    argv += ["--nodes", str(nodes)] if nodes > 1 else []
    argv += ["--in-memory"] if in_memory else ["--data-dir", str(data_dir)]
    argv += ["--log-level", "WARNING"]
    for override in overrides:
        argv += ["--override", override]
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    bootstrap = _ready_line(process).rsplit(" ", 1)[-1]
    return RunningBroker(MINIBROKER, bootstrap, process, data_dir)


def start_mock() -> RunningBroker:
    argv = [sys.executable, "-m", "benchmarks.mock_cluster"]
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    return RunningBroker(MOCK, _ready_line(process), process)
