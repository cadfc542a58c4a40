"""A broker in a child process (`python -m minibroker serve`) and checks of its data.

Running the broker in its own process lets the tests kill it with SIGKILL and read its own
memory high-water mark (VmHWM) rather than the test runner's.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

READY_TIMEOUT_SECONDS = 30


class BrokerProcess:
    def __init__(
        self, data_dir: Path, log_file: Path, settings: Mapping[str, str] | None = None
    ) -> None:
        self.data_dir = data_dir
        self.log_file = log_file
        self.settings = dict(settings or {})
        self.address = ""
        self._process: subprocess.Popen[str] | None = None
        self._log_read = 0

    def start(self, port: int = 0) -> str:
        """Start on `port` (0: a free one) and return HOST:PORT once it is ready."""
        overrides = [arg for k, v in self.settings.items() for arg in ("--override", f"{k}={v}")]
        with self.log_file.open("a") as log:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "minibroker",
                    "serve",
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--data-dir",
                    str(self.data_dir),
                    *overrides,
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        assert "ready" in line, f"broker did not start: {line!r}\n{self.log_file.read_text()}"
        self.address = line.split()[-1]
        return self.address

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def peak_rss_kib(self) -> int:
        """The process's resident-set high-water mark (VmHWM), in KiB."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise AssertionError("no VmHWM in /proc status")

    def kill(self) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGKILL)
        self._process.wait(timeout=READY_TIMEOUT_SECONDS)

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit status."""
        if self._process is None or self._process.poll() is not None:
            return self._process.returncode if self._process else 0
        self._process.send_signal(signal.SIGTERM)
        return self._process.wait(timeout=READY_TIMEOUT_SECONDS)

    def logged_tracebacks(self) -> list[str]:
        """Tracebacks the broker logged since the last call."""
        if not self.log_file.exists():
            return []
        with self.log_file.open() as log:
            log.seek(self._log_read)
            text = log.read()
            self._log_read = log.tell()
        return text.split("Traceback")[1:]


def dump_log_problems(data_dir: Path) -> list[str]:
    """Run `minibroker dump-log --deep-iteration` over every segment and index in
    `data_dir`; return what it reports as wrong (empty when everything checks out)."""
    files = sorted(
        str(path)
        for suffix in ("*.log", "*.index", "*.timeindex")
        for path in data_dir.glob(f"*/{suffix}")
    )
    if not files:
        return []
    result = subprocess.run(
        [sys.executable, "-m", "minibroker", "dump-log", "--deep-iteration", *files],
        capture_output=True,
        text=True,
        timeout=300,
    )
    problems = [line for line in result.stderr.splitlines() if line.strip()]
    if result.returncode != 0:
        problems.append(f"dump-log exit status {result.returncode}")
    for marker in ("isvalid: false", "could not decode", "invalid bytes at the end"):
        problems += [line for line in result.stdout.splitlines() if marker in line]
    return problems
