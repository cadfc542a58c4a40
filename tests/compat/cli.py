"""`scripts/compat` / `python -m tests.compat`: run the matrix, print it as Markdown, write JSON.

With no `--bootstrap` it starts minibroker itself (`python -m minibroker serve` on a free
127.0.0.1 port); the restart and crash scenarios need that and are n/a against a given address,
as is replication, which starts a 3-node in-process cluster of its own to stop a leader in.
It starts it with target.MATRIX_SETTINGS (an authorizer that allows what no ACL names, short
quota windows) for the acls and quota-throttle scenarios; a given broker needs the same.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from tests.clients.runner import CLIENTS, install_all
from tests.compat.matrix import Cell, markdown, run_matrix, summary
from tests.compat.scenarios import SCENARIOS, Context
from tests.compat.target import OwnBroker


def names(text: str | None, known: Sequence[str], what: str) -> list[str]:
    if not text:
        return list(known)
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(
        prog="scripts/compat",
        description="Real Kafka clients x scenarios against a broker: a Markdown table and JSON.",
    )
    parse.add_argument("--bootstrap", help="host:port of the broker (default: start minibroker)")
    parse.add_argument("--clients", help=f"comma-separated subset of: {', '.join(CLIENTS)}")
    parse.add_argument("--scenarios", help=f"comma-separated subset of: {', '.join(SCENARIOS)}")
    parse.add_argument("--parallel", type=int, default=3, help="cells run at once (default 3)")
    parse.add_argument(
        "--json", type=Path, default=Path("compat-matrix.json"), help="where to write the JSON"
    )
    parse.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the minibroker this command starts (repeatable)",
    )
    return parse


def progress(cell: Cell) -> None:
    note = f": {cell.reason}" if cell.reason else ""
    print(
        f"[{cell.seconds:5.1f} s] {cell.client} {cell.scenario}: {cell.status}{note}",
        file=sys.stderr,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    clients = names(args.clients, CLIENTS, "clients")
    scenarios = names(args.scenarios, list(SCENARIOS), "scenarios")
    install_all(clients)
    with ExitStack() as stack:
        if args.bootstrap:
            ctx = Context(args.bootstrap, own_broker=False)
            target = args.bootstrap
        else:
            broker = stack.enter_context(OwnBroker(args.override))
            ctx = Context(broker.bootstrap, own_broker=True, broker_overrides=tuple(args.override))
            target = "minibroker (started by scripts/compat)"
        matrix = run_matrix(ctx, target, clients, scenarios, args.parallel, progress)
    print(markdown(matrix))
    print()
    print(summary(matrix))
    args.json.write_text(json.dumps(matrix.to_json(), indent=2) + "\n")
    print(f"JSON: {args.json}", file=sys.stderr)
    return 1 if any(cell.regression for cell in matrix.cells) else 0
