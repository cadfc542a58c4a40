"""The benchmark's outputs: a Markdown table on stdout, a JSON file and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def spread_text(spread: dict[str, float], digits: int = 0) -> str:
    return f"{spread['median']:.{digits}f} ({spread['min']:.{digits}f}-{spread['max']:.{digits}f})"


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


def write_chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    produce = results.get("P1", [])
    latency = results.get("L1", [])
    figure, (left, right, rates, fetches) = plt.subplots(1, 4, figsize=(24, 4.8))
    labels = [row["config"] for row in produce]
    positions = range(len(labels))
    for offset, broker in ((-0.2, "minibroker"), (0.2, "mock")):
        values = [row[broker]["mb_per_s"]["median"] for row in produce]
        left.bar([p + offset for p in positions], values, width=0.4, label=broker)
    left.set_xticks(list(positions), labels, rotation=30, ha="right", fontsize=8)
    left.set_ylabel("MB/s (median)")
    left.set_title("P1 produce, 300k x 1 KiB, one partition")
    left.legend()
    names = [f"{row['broker']} {row['rate']}/s" for row in latency]
    for offset, key in ((-0.2, "p50"), (0.2, "p99")):
        values = [row["end_to_end"][key] for row in latency]
        right.bar([i + offset for i in range(len(names))], values, width=0.4, label=key)
    right.set_xticks(list(range(len(names))), names, rotation=30, ha="right", fontsize=8)
    right.set_yscale("log")
    right.set_ylabel("end-to-end latency, ms")
    right.set_title("L1 latency, linger 0, acks=1")
    right.legend()
    paced = results.get("R1", {}).get("rows", [])
    for key in ("p50_ms", "p99_ms"):
        rates.plot([row["rate"] for row in paced], [row[key] for row in paced], "o-", label=key)
    rates.axhline(5.0, color="grey", linestyle=":", label="5 ms")
    rates.set_yscale("log")
    rates.set_xlabel("single-message Produce requests/s (paced)")
    rates.set_ylabel("answer latency, ms")
    rates.set_title("R1 minibroker, one connection, acks=1")
    rates.legend()
    _fetch_cpu_panel(fetches, results)
    figure.suptitle(
        f"minibroker vs librdkafka mock cluster — {results['date']}, {results['machine']}"
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)


def _fetch_cpu_panel(axes: Any, results: dict[str, Any]) -> None:
    """FE and FM: broker CPU-µs per Fetch, minibroker beside the mock."""
    scenarios = [name for name in ("FE", "FM") if name in results]
    for offset, broker in ((-0.2, "minibroker"), (0.2, "mock")):
        values = [results[name][broker]["broker_cpu_us_per_fetch"]["median"] for name in scenarios]
        axes.bar([i + offset for i in range(len(scenarios))], values, width=0.4, label=broker)
    labels = {"FE": "FE empty long poll", "FM": "FM 1 message per Fetch"}
    axes.set_xticks(list(range(len(scenarios))), [labels[name] for name in scenarios])
    axes.set_ylabel("broker CPU-µs per Fetch (median)")
    axes.set_title("100 consumers, one Fetch in flight each")
    axes.legend()
