"""The broker the matrix runs against: one given by address, or minibroker started here as
`python -m minibroker serve` on a free 127.0.0.1 port (which can also be restarted); and, for
the replication scenario, an in-process 3-node cluster whose nodes can be stopped one by one."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from minibroker.testing import KafkaCluster

READY = re.compile(r"minibroker ready on (\S+):(\d+)")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


# What the acls and quota-throttle scenarios need, unseen by the others: an authorizer that
# allows whatever no ACL names (Kafka's allow.everyone.if.no.acl.found; the acls cells bind
# only names of their own), and quota windows short enough for a few megabytes to exceed a
# quota (Kafka never measures a rate over less than quota.window.num - 1 windows: 10 s by
# default). A broker given by --bootstrap needs the same settings for those two rows.
MATRIX_SETTINGS = (
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found=true",
    "quota.window.num=2",
    "quota.window.size.seconds=1",
)


class BrokerStartError(RuntimeError):
    pass


class OwnBroker:
    """`python -m minibroker serve` in a subprocess, with its data in a temporary folder,
    MATRIX_SETTINGS and then `overrides` (which win).

    `restart()` stops it with SIGTERM (a clean shutdown), `restart(crash=True)` kills it with
    SIGKILL; either starts it again on the same port and data directory.
    """

    def __init__(self, overrides: Sequence[str] = ()) -> None:
        self._overrides = [*MATRIX_SETTINGS, *overrides]
        self._folder = Path(tempfile.mkdtemp(prefix="minibroker-compat-"))
        self._port = 0
        self._process: subprocess.Popen[str] | None = None
        self._log = open(self._folder / "broker.log", "a")  # noqa: SIM115 (closed in close())

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self._port}"

    @property
    def log_path(self) -> Path:
        return self._folder / "broker.log"

    def start(self) -> OwnBroker:
        argv = [sys.executable, "-m", "minibroker", "serve", "--listen", self.bootstrap]
        argv += ["--data-dir", str(self._folder / "data")]
        for override in self._overrides:
            argv += ["--override", override]
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self._log, text=True, env=dict(os.environ)
        )
        self._process = process
        port = self._wait_until_ready(process)
        if port is None:
            self.stop()
            raise BrokerStartError(
                f"minibroker did not start; its log:\n{self.log_path.read_text()[-5000:]}"
            )
        self._port = port
        threading.Thread(target=self._drain, args=(process,), daemon=True).start()
        return self

    def _wait_until_ready(self, process: subprocess.Popen[str]) -> int | None:
        """The port of the ready line, or None if the broker exits or stays silent too long."""
        found: list[int] = []

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                match = READY.search(line)
                if match:
                    found.append(int(match.group(2)))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(START_TIMEOUT_S)
        return found[0] if found else None

    @staticmethod
    def _drain(process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for _ in process.stdout:
            pass

    def stop(self, crash: bool = False) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if crash:
            process.kill()
            process.wait()
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, crash: bool = False) -> None:
        self.stop(crash)
        self.start()

    def close(self) -> None:
        self.stop()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> OwnBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def own_broker(overrides: Sequence[str] = ()) -> Iterator[OwnBroker]:
    with OwnBroker(overrides) as broker:
        yield broker


@contextmanager
def own_cluster(overrides: Sequence[str] = (), nodes: int = 3) -> Iterator[KafkaCluster]:
    """An in-process cluster of `nodes` minibroker nodes on free 127.0.0.1 ports, for the
    scenarios that stop one node of several (a `serve --nodes` subprocess cannot); `overrides`
    as `KEY=VALUE` broker settings."""
    settings = dict(override.split("=", 1) for override in overrides)
    with KafkaCluster(nodes, storage="memory", config=settings) as cluster:
        yield cluster
