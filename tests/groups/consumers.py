"""Group consumers in child processes (group_consumer.py), observed through their output."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("group_consumer.py")
SESSION_MS = 1000


class Consumed:
    """Everything every consumer process printed, with a condition to wait on."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, int, str]] = []
        self.assignments: dict[str, list[int]] = {}
        self.changed = threading.Condition()

    def add(self, name: str, line: str) -> None:
        fields: list[Any] = json.loads(line)
        with self.changed:
            if fields[0] == "assigned":
                self.assignments[name] = fields[1]
            else:
                self.records.append((name, fields[0], fields[1], fields[2]))
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out: {len(self.records)} records, {self.assignments}"
                    )
                self.changed.wait(remaining)

    def values(self) -> list[str]:
        with self.changed:
            return [value for _, _, _, value in self.records]

    def by_consumer(self) -> dict[str, int]:
        with self.changed:
            counts: dict[str, int] = {}
            for name, _, _, _ in self.records:
                counts[name] = counts.get(name, 0) + 1
            return counts


class ConsumerProcess:
    def __init__(
        self,
        consumed: Consumed,
        name: str,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        assignor: str = "range",
        instance_id: str | None = None,
        session_ms: int = SESSION_MS,
    ) -> None:
        self.name = name
        command = [
            sys.executable,
            str(SCRIPT),
            client,
            bootstrap,
            group,
            topic,
            str(session_ms),
            assignor,
        ]
        if instance_id is not None:
            command.append(instance_id)
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self._reader = threading.Thread(target=self._read, args=(consumed,), daemon=True)
        self._reader.start()

    def _read(self, consumed: Consumed) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            consumed.add(self.name, line)

    def terminate(self) -> None:
        """Graceful close: the client leaves the group."""
        self.process.terminate()
        self.process.wait(30)
        self._reader.join(10)

    def kill(self) -> None:
        """A crash: the member is only removed when its session expires."""
        self.process.kill()
        self.process.wait(30)
        self._reader.join(10)
