"""Issue 40's targets, each checked against the figures of one `scripts/bench` run: what the
run measured, the target, and whether it was met. A target whose scenario did not run is
reported as not measured rather than left out.

`python -m benchmarks.targets results/benchmarks.json` prints them for a run already written.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.report import markdown_table

Results = dict[str, Any]


@dataclass(frozen=True)
class Target:
    name: str
    limit: float
    at_most: bool  # True: the figure must not exceed the limit; False: it must reach it
    figure: Callable[[Results], float | None]
    unit: str = ""

    def verdict(self, results: Results) -> tuple[float | None, str]:
        try:
            value = self.figure(results)
        except (KeyError, IndexError, TypeError):
            value = None
        if value is None:
            return None, "not measured"
        met = value <= self.limit if self.at_most else value >= self.limit
        return value, "met" if met else "missed"


def _median(results: Results, *path: str | int) -> float:
    node: Any = results
    for key in path:
        node = node[key]
    return float(node["median"])


def _p1_row(results: Results, label: str) -> Results:
    return next(row for row in results["P1"] if row["config"] == label)


def _p1_ratio(label: str) -> Callable[[Results], float]:
    return lambda results: float(_p1_row(results, label)["ratio"])


def _p1_cpu(label: str) -> Callable[[Results], float]:
    return lambda results: _median(_p1_row(results, label), "minibroker", "cpu_s_per_gb")


def _p99_at(rate: int) -> Callable[[Results], float | None]:
    def p99(results: Results) -> float | None:
        rows = [row for row in results["R1"]["rows"] if row["rate"] == rate]
        return float(rows[0]["p99_ms"]) if rows else None

    return p99


_SMALL_64K = "batch 64KiB, acks=1, none"
_LARGE_1M = "batch 1MiB, acks=1, none"

TARGETS = (
    Target(
        "R1 broker CPU per single-message Produce",
        12,
        True,
        lambda r: _median(r, "R1", "minibroker", "broker_cpu_us_per_request"),
        " µs",
    ),
    Target("R1 answer p99 at 10,000 paced requests/s", 5, True, _p99_at(10_000), " ms"),
    Target(
        "R1 highest paced rate with answer p99 ≤ 5 ms",
        30_000,
        False,
        lambda r: float(r["R1"]["highest_rate_p99_5ms"]),
        "/s",
    ),
    Target(
        "FE broker CPU per empty long-poll Fetch",
        12,
        True,
        lambda r: _median(r, "FE", "minibroker", "broker_cpu_us_per_fetch"),
        " µs",
    ),
    Target(
        "FM broker CPU per small Fetch (100 consumers)",
        15,
        True,
        lambda r: _median(r, "FM", "minibroker", "broker_cpu_us_per_fetch"),
        " µs",
    ),
    Target("P1 64 KiB batches, ratio to the mock", 0.7, False, _p1_ratio(_SMALL_64K), "x"),
    Target("P1 64 KiB batches, broker CPU-s/GB", 1.5, True, _p1_cpu(_SMALL_64K)),
    Target("P1 1 MiB batches, ratio to the mock", 0.9, False, _p1_ratio(_LARGE_1M), "x"),
    Target("P1 1 MiB batches, broker CPU-s/GB", 1.0, True, _p1_cpu(_LARGE_1M)),
    Target(
        "S1 `minibroker serve` answering, from spawn",
        200,
        True,
        lambda r: _median(r, "S1", "serve_ms"),
        " ms",
    ),
    Target(
        "S1 in-process start (memory)",
        2,
        True,
        lambda r: _median(r, "S1", "in_process_memory_ms"),
        " ms",
    ),
)


def _tls_ratio(figure: str) -> Callable[[Results], float]:
    return lambda results: float(results["TLS"][figure]["broker_cpu_us_ratio"])


# No target, reported beside them: broker CPU with TLS on over plaintext, in the same run.
TLS_RATIOS = (
    ("R1 with TLS, CPU ratio to plaintext", _tls_ratio("R1")),
    ("FE with TLS, CPU ratio to plaintext", _tls_ratio("FE")),
    ("FM with TLS, CPU ratio to plaintext", _tls_ratio("FM")),
)


def check(results: Results) -> list[dict[str, Any]]:
    """Each target's figure (None when not measured), limit and verdict, then the TLS ratios
    (verdict "reported")."""
    rows = []
    for target in TARGETS:
        value, verdict = target.verdict(results)
        rows.append(
            {
                "target": target.name,
                "limit": f"{'≤' if target.at_most else '≥'} {target.limit:,g}{target.unit}",
                "value": value,
                "unit": target.unit,
                "verdict": verdict,
            }
        )
    for name, figure in TLS_RATIOS:
        value = Target(name, 0, True, figure).verdict(results)[0]
        rows.append(
            {
                "target": name,
                "limit": "—",
                "value": value,
                "unit": "x",
                "verdict": "not measured" if value is None else "reported",
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    return markdown_table(
        ["issue 40 target", "this run", "target", "verdict"],
        [
            [
                row["target"],
                _figure_text(row["value"], row["unit"]),
                row["limit"],
                row["verdict"],
            ]
            for row in rows
        ],
    )


def _figure_text(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}{unit}" if value >= 1000 else f"{value:,.2f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path, help="a benchmarks.json that scripts/bench wrote")
    args = parser.parse_args()
    print(table(check(json.loads(args.results.read_text()))))


if __name__ == "__main__":
    main()
