"""Run scenarios x clients (a few cells at once) and render the result as Markdown and JSON."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from tests.clients.runner import installed
from tests.compat.expected import expectation
from tests.compat.scenarios import SCENARIOS, CellFailed, Context, NotApplicable, one_line
from tests.compat.tools import SetupFailed

PASS, FAIL, NA = "pass", "fail", "n/a"


@dataclass
class Cell:
    client: str
    scenario: str
    status: str  # pass | fail | n/a
    reason: str  # one line; empty when passed
    expected: str  # what expected.py says: pass | fail | n/a
    expected_reason: str
    seconds: float
    detail: str = ""  # the client's traceback and stderr, for the JSON file

    @property
    def regression(self) -> bool:
        """Failed where expected.py expects a pass."""
        return self.status == FAIL and self.expected == PASS

    @property
    def unexpected_pass(self) -> bool:
        """Passed where expected.py lists a failure: the list needs updating."""
        return self.status == PASS and self.expected == FAIL


def run_cell(ctx: Context, client: str, scenario: str) -> Cell:
    expected, expected_reason = expectation(client, scenario, ctx.kafka_version)
    if expected == NA:
        return Cell(client, scenario, NA, expected_reason, NA, expected_reason, 0.0)
    started = time.monotonic()
    status, reason, detail = PASS, "", ""
    try:
        SCENARIOS[scenario][1](ctx, client)
    except NotApplicable as exc:
        status, reason = NA, str(exc)
    except CellFailed as exc:
        status, reason, detail = FAIL, exc.reason, exc.detail
    except SetupFailed as exc:
        status, reason, detail = FAIL, f"set-up: {one_line(str(exc))}", str(exc)
    except Exception as exc:  # a bug in the scenario is a failed cell, not a dead matrix
        status, reason = FAIL, f"{type(exc).__name__}: {one_line(str(exc))}"
        detail = traceback.format_exc()
    seconds = round(time.monotonic() - started, 1)
    return Cell(client, scenario, status, reason, expected, expected_reason, seconds, detail)


@dataclass
class Matrix:
    target: str
    date: str
    clients: dict[str, str]  # name -> version
    scenarios: list[str]
    cells: list[Cell]
    seconds: float

    def cell(self, client: str, scenario: str) -> Cell:
        return next(c for c in self.cells if c.client == client and c.scenario == scenario)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "date": self.date,
            "seconds": self.seconds,
            "clients": self.clients,
            "scenarios": {name: SCENARIOS[name][0] for name in self.scenarios},
            "cells": [asdict(cell) for cell in self.cells],
        }


def run_matrix(
    ctx: Context,
    target: str,
    clients: Sequence[str],
    scenarios: Sequence[str],
    parallel: int = 3,
    progress: Callable[[Cell], None] | None = None,
) -> Matrix:
    started = time.monotonic()
    versions = {name: installed(name).version for name in clients}

    def one(pair: tuple[str, str]) -> Cell:
        cell = run_cell(ctx, *pair)
        if progress is not None:
            progress(cell)
        return cell

    # Scenario-major order, so that the cells running at once belong to different clients.
    pairs = [(client, scenario) for scenario in scenarios for client in clients]
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        cells = list(pool.map(one, pairs))
    return Matrix(
        target=target,
        date=time.strftime("%Y-%m-%d"),
        clients=versions,
        scenarios=list(scenarios),
        cells=cells,
        seconds=round(time.monotonic() - started, 1),
    )


def cell_text(cell: Cell) -> str:
    if cell.status == PASS:
        text = "pass (listed as failing)" if cell.unexpected_pass else "pass"
    elif cell.status == NA:
        text = f"n/a: {cell.reason}"
    elif cell.expected == FAIL:
        text = f"fail (known): {cell.reason}"
    else:
        text = f"**FAIL**: {cell.reason}"
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(matrix: Matrix) -> str:
    names = list(matrix.clients)
    lines = [
        "| scenario | " + " | ".join(f"{n} ({matrix.clients[n]})" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for scenario in matrix.scenarios:
        row = [cell_text(matrix.cell(client, scenario)) for client in names]
        lines.append(f"| {SCENARIOS[scenario][0]} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary(matrix: Matrix) -> str:
    counts = {status: 0 for status in (PASS, FAIL, NA)}
    for cell in matrix.cells:
        counts[cell.status] += 1
    regressions = sum(cell.regression for cell in matrix.cells)
    unexpected = sum(cell.unexpected_pass for cell in matrix.cells)
    return (
        f"{counts[PASS]} pass, {counts[FAIL]} fail ({regressions} not listed in "
        f"tests/compat/expected.py), {counts[NA]} n/a; {unexpected} listed failures passed; "
        f"{matrix.seconds:.0f} s against {matrix.target} on {matrix.date}"
    )


def short_status(cell: Cell) -> str:
    if cell.status == FAIL:
        return "fail (known)" if cell.expected == FAIL else "**FAIL**"
    return cell.status


def markdown_by_release(matrices: dict[str, Matrix]) -> str:
    """One row per scenario, one column per client, each cell the client's outcome against
    every emulated release ("2.8 pass · 3.9 n/a")."""
    first = next(iter(matrices.values()))
    names = list(first.clients)
    lines = [
        "| scenario | " + " | ".join(f"{n} ({first.clients[n]})" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for scenario in first.scenarios:
        row = [
            " · ".join(
                f"{release} {short_status(matrix.cell(client, scenario))}"
                for release, matrix in matrices.items()
            )
            for client in names
        ]
        lines.append(f"| {SCENARIOS[scenario][0]} | " + " | ".join(row) + " |")
    return "\n".join(lines)
