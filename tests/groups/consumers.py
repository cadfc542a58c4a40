"""Group members in child processes (the harness programs' `group_member` op, see
tests/clients/README.md), observed through their event lines."""

from __future__ import annotations

import base64
import json
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from tests.clients.runner import start_client

# Long enough that members starved of CPU (the suite runs on parallel workers) keep their
# sessions: a member kicked out mid-batch reads that batch again, which is at-least-once, not a
# broker fault. A killed member is dropped when it expires, well within the tests' 60 s waits.
SESSION_MS = 3000
STDERR_LINES_KEPT = 30


class Consumed:
    """Everything every member reported, with a condition to wait on."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, int, str]] = []
        self.assignments: dict[str, list[int]] = {}
        # Pattern subscriptions (the job's `pattern`): each member's (topic, partition) pairs.
        self.topic_assignments: dict[str, list[tuple[str, int]]] = {}
        # Pattern subscriptions: (member, topic, partition, offset, value) of each record.
        self.topic_records: list[tuple[str, str, int, int, str]] = []
        self.members: list[ConsumerProcess] = []
        self.results: dict[str, dict[str, Any]] = {}  # each member's result line, once it stops
        self.changed = threading.Condition()

    def add(self, name: str, line: str) -> None:
        fields: dict[str, Any] = json.loads(line)
        with self.changed:
            if fields.get("event") == "assigned":
                self.assignments[name] = fields["partitions"]
                if "topic_partitions" in fields:
                    pairs = [(t, p) for t, p in fields["topic_partitions"]]
                    self.topic_assignments[name] = pairs
            elif fields.get("event") == "record":
                value = base64.b64decode(fields["value"] or "").decode()
                self.records.append((name, fields["partition"], fields["offset"], value))
                if "topic" in fields:
                    where = (fields["topic"], fields["partition"], fields["offset"])
                    self.topic_records.append((name, *where, value))
            else:
                self.results[name] = fields
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while not condition():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"timed out: {len(self.records)} records, {self.assignments}\n"
                        f"results of stopped members: {self.results}\n"
                        + "\n".join(member.stderr_tail() for member in self.members)
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

    def next_offsets(self) -> dict[int, int]:
        """Per partition, the offset after the last record reported."""
        with self.changed:
            ends: dict[int, int] = {}
            for _, partition, offset, _ in self.records:
                ends[partition] = max(ends.get(partition, 0), offset + 1)
            return ends


class ConsumerProcess:
    """One member: `client` is a harness client name (tests/clients/runner.py CLIENTS)."""

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
        protocol: dict[str, str] | None = None,
    ) -> None:
        """`protocol`: more job fields, e.g. {"group_protocol": "consumer"} (KIP-848) or a
        {"pattern": regex} subscription (see tests/clients/README.md)."""
        self.name = name
        self.client = client
        job = {
            "op": "group_member",
            "bootstrap": bootstrap,
            "group": group,
            "topic": topic,
            "assignor": assignor,
            "session_timeout_ms": session_ms,
            "instance_id": instance_id,
            **(protocol or {}),
        }
        self.process = start_client(client, job)
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES_KEPT)
        self._readers = [
            threading.Thread(target=self._read_events, args=(consumed,), daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        with consumed.changed:
            consumed.members.append(self)

    def _read_events(self, consumed: Consumed) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                consumed.add(self.name, line)

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        self._stderr.extend(self.process.stderr)

    def stderr_tail(self) -> str:
        return f"--- {self.name} ({self.client}) stderr:\n" + "".join(self._stderr)

    def terminate(self) -> None:
        """Graceful close: the client leaves the group (a static member does not)."""
        self.process.terminate()
        self._wait()

    def kill(self) -> None:
        """A crash: the member is only removed when its session expires."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self._wait()

    def _wait(self) -> None:
        self.process.wait(30)
        for reader in self._readers:
            reader.join(10)
