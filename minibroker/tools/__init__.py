"""The everyday CLI: `minibroker topic|produce|consume|group|cluster|acl`, in the spirit of
Kafka's kafka-topics / kafka-console-producer / kafka-console-consumer / kafka-consumer-groups
/ kafka-acls and Redpanda's rpk, against minibroker or any Kafka (`--bootstrap`).

This package's own module is standard library only: `minibroker.cli` registers the stubs
below (so `minibroker --help` lists the commands) and hands a tool's arguments to `run`, which
imports kafka-python and the command modules. `minibroker serve` never pays for either.
"""

from __future__ import annotations

import argparse

COMMANDS = {
    "topic": "list, create, describe and delete topics; alter their configs",
    "produce": "send lines from stdin to a topic",
    "consume": "print a topic's records",
    "group": "list, describe and delete consumer groups; reset their offsets",
    "cluster": "nodes, controller, cluster id, Kafka version and features",
    "acl": "list, add and remove ACL bindings",
}


def add_stubs(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """One placeholder per command: the real parsers are built by `run`."""
    for name, summary in COMMANDS.items():
        stub = sub.add_parser(name, help=summary, add_help=False)
        stub.add_argument("rest", nargs=argparse.REMAINDER)


def run(argv: list[str]) -> int:
    """Run one tool command (`argv` starts with its name); the exit code."""
    from minibroker.tools.main import main

    return main(argv)
