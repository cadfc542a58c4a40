"""An operation history in Jepsen's shape, written as JSON lines.

Every client operation is recorded twice: an `invoke` when it starts and its completion, `ok`
(it happened), `fail` (it definitely did not happen) or `info` (unknown: it may have). Each
entry has the process that ran it, the time since the history began (ns), the function `f`
and a value.

Client operations (`f` = "send", "poll" or "txn") carry a list of micro-operations, as
Jepsen's Kafka workloads do:
- `["send", key, value]` at invoke; `["send", key, [offset, value]]` once acknowledged;
- `["poll"]` at invoke; `["poll", {key: [[offset, value], ...]}]` once read.
A key is "topic/partition"; every value is written once by the workloads, so a value names its
write. Other entries: "committed" (a group's committed offsets as observed: `{"group": g,
"offsets": {key: offset}}`), "share-ack" (a share-group record acknowledged ACCEPT: `{"group":
g, "key": key, "offset": o, "value": v}`) and "nemesis" (a fault started or healed).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

OpType = Literal["invoke", "ok", "fail", "info"]
Process = int | str


@dataclass(frozen=True)
class Op:
    index: int
    type: OpType
    process: Process
    f: str
    time: int
    value: Any

    def to_json(self) -> str:
        return json.dumps(
            {
                "index": self.index,
                "type": self.type,
                "process": self.process,
                "f": self.f,
                "time": self.time,
                "value": self.value,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, line: str) -> Op:
        data = json.loads(line)
        return cls(
            index=data["index"],
            type=data["type"],
            process=data["process"],
            f=data["f"],
            time=data["time"],
            value=data["value"],
        )


class History:
    """A thread-safe recorder: `invoke` returns the entry its completion pairs with."""

    def __init__(self) -> None:
        self._ops: list[Op] = []
        self._lock = threading.Lock()
        self._start = time.monotonic_ns()

    def _add(self, type_: OpType, process: Process, f: str, value: Any) -> Op:
        with self._lock:
            op = Op(len(self._ops), type_, process, f, time.monotonic_ns() - self._start, value)
            self._ops.append(op)
            return op

    def invoke(self, process: Process, f: str, value: Any) -> Op:
        return self._add("invoke", process, f, value)

    def complete(self, invoked: Op, type_: OpType, value: Any) -> Op:
        return self._add(type_, invoked.process, invoked.f, value)

    def record(self, process: Process, f: str, value: Any) -> Op:
        """An instantaneous observation (an `ok` without an invoke)."""
        return self._add("ok", process, f, value)

    @property
    def ops(self) -> list[Op]:
        with self._lock:
            return list(self._ops)

    def write(self, path: Path) -> None:
        write_ops(path, self.ops)


def write_ops(path: Path, ops: Iterable[Op]) -> None:
    with path.open("w") as out:
        for op in ops:
            out.write(op.to_json() + "\n")


def read_ops(path: Path) -> list[Op]:
    with path.open() as lines:
        return [Op.from_json(line) for line in lines if line.strip()]


def pairs(ops: Iterable[Op]) -> Iterator[tuple[Op, Op | None]]:
    """Each invoke with its completion (None if the run ended first); a process runs one
    operation at a time, so its next entry completes its invoke."""
    pending: dict[Process, Op] = {}
    for op in ops:
        if op.type == "invoke":
            pending[op.process] = op
        elif op.process in pending:
            yield pending.pop(op.process), op
    for invoked in pending.values():
        yield invoked, None
