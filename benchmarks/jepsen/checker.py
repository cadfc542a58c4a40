"""The checker: reads a whole history (benchmarks.jepsen.history) and reports anomalies.

- `lost-write`: an acknowledged send whose value is missing from its key's log though reads
  reached past its offset: where the final drain read the key (process `FINAL`, ok: every
  key read to its end after the faults are healed), every acknowledged value missing from it
  is lost (read earlier and gone since, or past its end); elsewhere, from every read;
- `duplicate`: one value at two or more offsets of a key (or in two keys);
- `inconsistent-offset`: two values read (or acknowledged) at one offset of a key;
- `out-of-order`: one poll returning a key's records in non-increasing offset order;
- `aborted-read`: a read of a value whose write definitely failed (an aborted transaction, a
  refused send): read_committed consumers must never see it;
- `phantom-read`: a read of a value no operation wrote;
- `committed-offset-backwards`: a group's committed offset of a key observed lower than an
  earlier observation by the same observer;
- `share-double-accept`: one share-group record acknowledged ACCEPT twice;
- `G0` / `G1c`: cycles in the Elle-style dependency graph of committed operations: write-write
  edges follow each key's offset order between consecutive committed writes, write-read edges
  run from a value's writer to every committed operation that read it. A cycle of write-write
  edges alone is G0, one with a write-read edge G1c.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from benchmarks.jepsen.elle import Graph, cycles
from benchmarks.jepsen.history import Op, pairs, write_ops

CLIENT_FUNCTIONS = ("send", "poll", "txn")
FINAL = "final"
ANOMALY_TYPES = (
    "lost-write",
    "duplicate",
    "inconsistent-offset",
    "out-of-order",
    "aborted-read",
    "phantom-read",
    "committed-offset-backwards",
    "share-double-accept",
    "G0",
    "G1c",
)
Anomaly = dict[str, Any]


@dataclass
class Write:
    op: int  # the invoke's index
    key: str
    value: str
    outcome: str  # ok, fail, info (info also when the run ended first)
    offset: int | None = None


@dataclass
class Read:
    op: int
    committed: bool  # the reading operation completed ok
    key: str
    records: list[tuple[int, str]]
    final: bool = False  # by the final drain


@dataclass
class Analysis:
    writes: dict[str, Write] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    committed_ops: set[int] = field(default_factory=set)
    transactions: Counter[str] = field(default_factory=Counter)  # outcome -> count


def _mops(value: Any) -> list[list[Any]]:
    return (
        [mop for mop in value if isinstance(mop, list) and mop] if isinstance(value, list) else []
    )


def analyse(ops: Iterable[Op]) -> Analysis:
    found = Analysis()
    for invoked, completed in pairs(op for op in ops if op.f in CLIENT_FUNCTIONS):
        outcome = completed.type if completed is not None else "info"
        if outcome == "ok":
            found.committed_ops.add(invoked.index)
        if invoked.f == "txn":
            found.transactions[outcome] += 1
        for mop in _mops(invoked.value):
            if mop[0] == "send":
                key, value = mop[1], mop[2]
                found.writes[value] = Write(invoked.index, key, value, outcome)
        if completed is None:
            continue
        for mop in _mops(completed.value):
            if mop[0] == "send" and isinstance(mop[2], list) and outcome == "ok":
                offset, value = mop[2]
                found.writes[value].offset = offset
            elif mop[0] == "poll" and len(mop) > 1:
                for key, records in mop[1].items():
                    pairs_read = [(int(offset), value) for offset, value in records]
                    found.reads.append(
                        Read(
                            invoked.index,
                            outcome == "ok",
                            key,
                            pairs_read,
                            final=invoked.process == FINAL and outcome == "ok",
                        )
                    )
    return found


def _log_view(found: Analysis) -> dict[str, dict[int, set[str]]]:
    """key -> offset -> every value read or acknowledged there."""
    view: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for read in found.reads:
        for offset, value in read.records:
            view[read.key][offset].add(value)
    for write in found.writes.values():
        if write.offset is not None:
            view[write.key][write.offset].add(write.value)
    return view


def _offset_anomalies(view: dict[str, dict[int, set[str]]]) -> list[Anomaly]:
    anomalies: list[Anomaly] = []
    placed: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for key, offsets in view.items():
        for offset, values in sorted(offsets.items()):
            if len(values) > 1:
                anomalies.append(
                    {
                        "type": "inconsistent-offset",
                        "key": key,
                        "offset": offset,
                        "values": sorted(values),
                    }
                )
            for value in values:
                placed[value].add((key, offset))
    for value, places in placed.items():
        if len(places) > 1:
            anomalies.append(
                {
                    "type": "duplicate",
                    "value": value,
                    "at": [[key, offset] for key, offset in sorted(places)],
                }
            )
    return anomalies


def _read_anomalies(found: Analysis) -> list[Anomaly]:
    anomalies: list[Anomaly] = []
    for read in found.reads:
        offsets = [offset for offset, _ in read.records]
        if any(later <= earlier for earlier, later in pairwise(offsets)):
            anomalies.append(
                {"type": "out-of-order", "op": read.op, "key": read.key, "offsets": offsets}
            )
        for offset, value in read.records:
            write = found.writes.get(value)
            if write is None:
                anomalies.append(
                    {
                        "type": "phantom-read",
                        "op": read.op,
                        "key": read.key,
                        "offset": offset,
                        "value": value,
                    }
                )
            elif write.outcome == "fail":
                anomalies.append(
                    {
                        "type": "aborted-read",
                        "op": read.op,
                        "writer": write.op,
                        "key": read.key,
                        "offset": offset,
                        "value": value,
                    }
                )
    return anomalies


def _lost_writes(found: Analysis) -> tuple[list[Anomaly], int]:
    """Lost acknowledged writes, and how many acknowledged writes no read reached."""
    drained = {read.key for read in found.reads if read.final}
    seen: dict[str, set[str]] = defaultdict(set)
    reached: dict[str, int] = defaultdict(lambda: -1)
    for read in found.reads:
        if read.final or read.key not in drained:
            seen[read.key].update(value for _offset, value in read.records)
        for offset, _value in read.records:
            reached[read.key] = max(reached[read.key], offset)
    for key in drained:  # read to its end: nothing acknowledged lies beyond
        reached[key] = sys.maxsize
    lost: list[Anomaly] = []
    unreached = 0
    for write in found.writes.values():
        if write.outcome != "ok" or write.offset is None or write.value in seen[write.key]:
            continue
        if reached[write.key] >= write.offset:
            lost.append(
                {
                    "type": "lost-write",
                    "op": write.op,
                    "key": write.key,
                    "offset": write.offset,
                    "value": write.value,
                }
            )
        else:
            unreached += 1
    return lost, unreached


def _committed_offsets_backwards(ops: Iterable[Op]) -> list[Anomaly]:
    anomalies: list[Anomaly] = []
    last: dict[tuple[Any, str, str], tuple[int, int]] = {}
    for op in ops:
        if op.f != "committed" or op.type != "ok":
            continue
        group = op.value["group"]
        for key, offset in op.value["offsets"].items():
            slot = (op.process, group, key)
            previous = last.get(slot)
            if previous is not None and offset < previous[1]:
                anomalies.append(
                    {
                        "type": "committed-offset-backwards",
                        "group": group,
                        "key": key,
                        "earlier": {"op": previous[0], "offset": previous[1]},
                        "later": {"op": op.index, "offset": offset},
                    }
                )
            last[slot] = (op.index, offset)
    return anomalies


def _share_double_accepts(ops: Iterable[Op]) -> list[Anomaly]:
    accepted: dict[tuple[str, str, int], int] = {}
    anomalies: list[Anomaly] = []
    for op in ops:
        if op.f != "share-ack" or op.type != "ok":
            continue
        record = (op.value["group"], op.value["key"], op.value["offset"])
        if record in accepted:
            anomalies.append(
                {
                    "type": "share-double-accept",
                    "group": record[0],
                    "key": record[1],
                    "offset": record[2],
                    "value": op.value.get("value"),
                    "ops": [accepted[record], op.index],
                }
            )
        else:
            accepted[record] = op.index
    return anomalies


def dependency_graph(found: Analysis, view: dict[str, dict[int, set[str]]]) -> Graph:
    graph = Graph()
    for key, offsets in view.items():
        writers = []
        for offset in sorted(offsets):
            for value in sorted(offsets[offset]):
                write = found.writes.get(value)
                if write is not None and write.op in found.committed_ops and write.key == key:
                    writers.append(write.op)
        for earlier, later in pairwise(writers):
            if earlier != later:
                graph.add(earlier, later, "ww")
    for read in found.reads:
        if not read.committed:
            continue
        for _offset, value in read.records:
            write = found.writes.get(value)
            if write is not None and write.op in found.committed_ops and write.op != read.op:
                graph.add(write.op, read.op, "wr")
    return graph


def _cycle_anomalies(graph: Graph) -> list[Anomaly]:
    anomalies: list[Anomaly] = []
    for cycle in cycles(graph):
        kinds = {kind for _source, kind, _target in cycle}
        anomalies.append(
            {
                "type": "G0" if kinds == {"ww"} else "G1c",
                "cycle": [[source, kind, target] for source, kind, target in cycle],
            }
        )
    return anomalies


@dataclass
class Result:
    anomalies: list[Anomaly]
    summary: dict[str, Any]

    @property
    def valid(self) -> bool:
        return not self.anomalies

    def counts(self) -> Counter[str]:
        return Counter(anomaly["type"] for anomaly in self.anomalies)


def check(ops: list[Op]) -> Result:
    found = analyse(ops)
    view = _log_view(found)
    lost, unreached = _lost_writes(found)
    anomalies = [
        *lost,
        *_offset_anomalies(view),
        *_read_anomalies(found),
        *_committed_offsets_backwards(ops),
        *_share_double_accepts(ops),
        *_cycle_anomalies(dependency_graph(found, view)),
    ]
    outcomes = Counter(write.outcome for write in found.writes.values())
    counts = Counter(anomaly["type"] for anomaly in anomalies)
    summary = {
        "valid": not anomalies,
        "operations": sum(1 for op in ops if op.type == "invoke"),
        "fault_events": sum(1 for op in ops if op.f == "nemesis" and op.type == "invoke"),
        "fault_kinds": dict(
            Counter(op.value["fault"] for op in ops if op.f == "nemesis" and op.type == "invoke")
        ),
        "offsets_lost_in_crashes": sum(
            op.value.get("lost_offsets", 0) for op in ops if op.f == "nemesis" and op.type == "ok"
        ),
        "crash_images": dict(
            Counter(
                op.value["image"]
                for op in ops
                if op.f == "nemesis" and op.type == "ok" and op.value.get("image")
            )
        ),
        "writes": {
            "acknowledged": outcomes["ok"],
            "failed": outcomes["fail"],
            "indeterminate": outcomes["info"],
            "acknowledged_unread": unreached,
        },
        "transactions": {
            "committed": found.transactions["ok"],
            "aborted": found.transactions["fail"],
            "indeterminate": found.transactions["info"],
        },
        "share_accepted": sum(1 for op in ops if op.f == "share-ack" and op.type == "ok"),
        "reads": len(found.reads),
        "committed_operations": len(found.committed_ops),
        "anomalies": {name: counts[name] for name in ANOMALY_TYPES},
    }
    return Result(anomalies, summary)


def summary_text(result: Result) -> str:
    summary = result.summary
    writes, txns = summary["writes"], summary["transactions"]
    lines = [
        f"operations: {summary['operations']}   fault events: {summary['fault_events']} ("
        + ", ".join(f"{kind} {count}" for kind, count in sorted(summary["fault_kinds"].items()))
        + f")   offsets lost by crashed nodes: {summary['offsets_lost_in_crashes']}"
        + "".join(f", {n} {kind} images" for kind, n in sorted(summary["crash_images"].items())),
        f"writes: {writes['acknowledged']} acknowledged, {writes['failed']} failed, "
        f"{writes['indeterminate']} indeterminate ({writes['acknowledged_unread']} "
        "acknowledged but never reached by a read)",
        f"transactions: {txns['committed']} committed, {txns['aborted']} aborted, "
        f"{txns['indeterminate']} indeterminate",
        f"reads: {summary['reads']}   committed operations: {summary['committed_operations']}"
        f"   share records accepted: {summary['share_accepted']}",
        "anomalies: "
        + (
            ", ".join(f"{name} {count}" for name, count in summary["anomalies"].items() if count)
            or "none"
        ),
        "valid" if result.valid else "INVALID",
    ]
    return "\n".join(lines)


def write_results(directory: Path, ops: list[Op], result: Result) -> None:
    """history.jsonl, anomalies.json (every anomaly) and summary.json under `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    write_ops(directory / "history.jsonl", ops)
    (directory / "anomalies.json").write_text(json.dumps(result.anomalies, indent=1) + "\n")
    (directory / "summary.json").write_text(json.dumps(result.summary, indent=1) + "\n")
