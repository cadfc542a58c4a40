"""`scripts/compat` / `python -m tests.compat`: run the matrix, print it as Markdown, write JSON.

`--kafka-version 3.9` runs it against minibroker emulating that Kafka release
(`minibroker.emulate.kafka.version`); several (`--kafka-version 2.8,3.9,4.3`) run it once per
release, each against its own broker, and print a table per release and one with every
release side by side. Scenarios needing what a release did not serve (KIP-848 before 4.0,
share groups before 4.1) are n/a there.

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

from minibroker.protocol.releases import RELEASES, find_release
from tests.clients.runner import CLIENTS, install_all
from tests.compat.matrix import Cell, Matrix, markdown, markdown_by_release, run_matrix, summary
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
        "--json",
        type=Path,
        default=Path("results/compat-matrix.json"),
        help="where to write the JSON (default results/compat-matrix.json)",
    )
    parse.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the minibroker this command starts (repeatable)",
    )
    parse.add_argument(
        "--kafka-version",
        help=f"comma-separated Kafka releases for minibroker to emulate: {', '.join(RELEASES)}",
    )
    return parse


def kafka_versions(text: str | None) -> list[str]:
    chosen = [name.strip() for name in (text or "").split(",") if name.strip()]
    unknown = [name for name in chosen if find_release(name) is None]
    if unknown:
        raise SystemExit(
            f"unknown Kafka release: {', '.join(unknown)}; known: {', '.join(RELEASES)}"
        )
    return chosen


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
    releases = kafka_versions(args.kafka_version)
    if releases and args.bootstrap:
        raise SystemExit(
            "--kafka-version sets up the minibroker this command starts: no --bootstrap"
        )
    install_all(clients)
    if releases:
        return _per_release(args, clients, scenarios, releases)
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
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(matrix.to_json(), indent=2) + "\n")
    print(f"JSON: {args.json}", file=sys.stderr)
    return 1 if any(cell.regression for cell in matrix.cells) else 0


def _per_release(
    args: argparse.Namespace, clients: list[str], scenarios: list[str], releases: list[str]
) -> int:
    matrices: dict[str, Matrix] = {}
    for release in releases:
        overrides = (*args.override, f"minibroker.emulate.kafka.version={release}")
        with OwnBroker(overrides) as broker:
            ctx = Context(
                broker.bootstrap, own_broker=True, broker_overrides=overrides, kafka_version=release
            )
            target = f"minibroker emulating Kafka {release} (started by scripts/compat)"
            matrices[release] = run_matrix(ctx, target, clients, scenarios, args.parallel, progress)
    for release, matrix in matrices.items():
        print(f"## Kafka {release} (emulated)\n")
        print(markdown(matrix))
        print()
        print(summary(matrix))
        print()
    if len(matrices) > 1:
        print("## Every release\n")
        print(markdown_by_release(matrices))
    document = {release: matrix.to_json() for release, matrix in matrices.items()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"kafka_versions": document}, indent=2) + "\n")
    print(f"JSON: {args.json}", file=sys.stderr)
    regressions = (cell.regression for matrix in matrices.values() for cell in matrix.cells)
    return 1 if any(regressions) else 0
