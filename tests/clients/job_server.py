"""A job server: one long-lived client process that runs many jobs at once (README.md).

Starting a JVM or node costs seconds a job. A server (`java ... JobServer`, `node client.js
--serve`) runs each job on a thread of its own (Java) or in its event loop (node). Requests
and replies are JSON lines on its stdin and stdout, matched by id: `{"id": 7, "job": {...}}`
is answered `{"id": 7, "result": {...}, "stderr": "<the job's own log>"}`, or `"crash":
"<trace>"` instead of `result` when the job threw what would have killed a process of its own;
`{"id": 7, "cancel": true}` (the runner gave up on the job) is answered `"cancelled": true`.
The server's own stderr is kept for the report when it dies; it exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

SERVER_STDERR_CHARS = 20_000
# How long a cancelled job's reply (which carries its stderr so far) is waited for.
CANCEL_REPLY_WAIT_S = 5.0
CLOSE_WAIT_S = 5.0

Reply = dict[str, Any]


class ServerDied(RuntimeError):
    """The server exited (or could not be written to) with the job in flight."""


class ServerGone(ServerDied):
    """The server had exited before the job reached it: the job can go to a new server."""


class ServerTimeout(RuntimeError):
    """No reply within the job's time; the server was told to cancel it."""

    def __init__(self, stderr: str) -> None:
        super().__init__("no reply in time")
        self.stderr = stderr


class JobServer:
    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            env={**os.environ, **env},
        )
        self._lock = threading.Lock()
        self._pending: dict[int, Future[Reply]] = {}
        self.submitted = 0  # jobs handed to this server; the last one's id
        self._exit_report: str | None = None  # set once the server's stdout has closed
        self._stderr_lines: deque[str] = deque()
        self._stderr_chars = 0
        self._stderr_reader = self._thread(self._read_stderr, "stderr")
        self._reply_reader = self._thread(self._read_replies, "replies")

    def _thread(self, target: Any, role: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"{self.name}-server-{role}", daemon=True)
        thread.start()
        return thread

    @property
    def alive(self) -> bool:
        with self._lock:
            return self._exit_report is None and self.process.poll() is None

    @property
    def in_flight(self) -> int:
        """Jobs handed to the server and not answered yet."""
        with self._lock:
            return len(self._pending)

    def run(self, job: Mapping[str, Any], timeout_s: float) -> Reply:
        """The job's reply; ServerTimeout after `timeout_s`, ServerDied if the server exits."""
        job_id, reply = self._submit(job)
        try:
            return reply.result(timeout=timeout_s)
        except FutureTimeout:
            self._send({"id": job_id, "cancel": True})
            try:
                stderr = str(reply.result(timeout=CANCEL_REPLY_WAIT_S).get("stderr", ""))
            except (FutureTimeout, ServerDied):
                stderr = "(no reply to the cancel request)"
            raise ServerTimeout(stderr) from None
        finally:
            with self._lock:
                self._pending.pop(job_id, None)

    def close(self) -> None:
        """Close its stdin (the server exits), and kill it if it lingers."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=CLOSE_WAIT_S)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()

    def _submit(self, job: Mapping[str, Any]) -> tuple[int, Future[Reply]]:
        reply: Future[Reply] = Future()
        with self._lock:
            if self._exit_report is not None:
                raise ServerGone(self._exit_report)
            self.submitted += 1
            job_id = self.submitted
            self._pending[job_id] = reply
            written = self._write({"id": job_id, "job": job})
        if not written:
            self._reply_reader.join(timeout=CLOSE_WAIT_S)  # then its exit report is complete
            with self._lock:
                self._pending.pop(job_id, None)
                report = self._exit_report
            raise ServerGone(report or f"{self.name} job server: stdin closed\n{self.stderr()}")
        return job_id, reply

    def _send(self, request: Mapping[str, Any]) -> None:
        with self._lock:
            self._write(request)

    def _write(self, request: Mapping[str, Any]) -> bool:
        """One request line (the lock held, so that lines never interleave); False if the
        server's stdin is gone."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except (OSError, ValueError):  # ValueError: the pipe was closed on our side
            return False
        return True

    def _read_replies(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                reply: Reply = json.loads(line)
            except ValueError:
                self._keep_stderr(f"(on stdout) {line}")
                continue
            with self._lock:
                pending = self._pending.get(reply.get("id", -1))
            if pending is not None and not pending.done():
                pending.set_result(reply)
        self._exited()

    def _exited(self) -> None:
        code = self.process.wait()
        self._stderr_reader.join(timeout=CLOSE_WAIT_S)
        report = f"{self.name} job server exited with code {code}; its stderr:\n{self.stderr()}"
        with self._lock:
            self._exit_report = report
            in_flight = list(self._pending.values())
        for reply in in_flight:
            if not reply.done():
                reply.set_exception(ServerDied(report))

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._keep_stderr(line)

    def _keep_stderr(self, line: str) -> None:
        with self._lock:
            self._stderr_lines.append(line)
            self._stderr_chars += len(line)
            while self._stderr_chars > SERVER_STDERR_CHARS and len(self._stderr_lines) > 1:
                self._stderr_chars -= len(self._stderr_lines.popleft())

    def stderr(self) -> str:
        """The last SERVER_STDERR_CHARS or so of what the server wrote outside its jobs."""
        with self._lock:
            return "".join(self._stderr_lines)
