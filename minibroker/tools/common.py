"""What the everyday CLI's commands share: exit codes, the `--bootstrap` and SASL login
options, a reachability check that fails fast with one line naming the address, kafka-python
client options, topic checks, KEY=VALUE and timestamp parsing, and plain aligned tables on
stdout."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import for_code

EXIT_OK = 0
EXIT_KAFKA = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "MINIBROKER_BOOTSTRAP"
USER_ENV = "MINIBROKER_USER"
PASSWORD_ENV = "MINIBROKER_PASSWORD"
SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN")
CLIENT_ID = "minibroker-cli"
CONNECT_TIMEOUT_S = 5.0
BOOTSTRAP_TIMEOUT_MS = 10_000
UNKNOWN_TOPIC_OR_PARTITION = 3

EXIT_CODES = """\
exit codes: 0 ok, 1 Kafka error (unknown topic, rejected request...), 2 usage,
            3 cannot connect to the bootstrap address, 130 interrupted (Ctrl-C)
environment: MINIBROKER_BOOTSTRAP is the default for --bootstrap, MINIBROKER_USER and
             MINIBROKER_PASSWORD for --user and --password"""


class ToolError(Exception):
    """A failure the CLI reports as one line (`minibroker: <message>`) and an exit code."""

    def __init__(self, message: str, code: int = EXIT_KAFKA) -> None:
        super().__init__(message)
        self.code = code


def bootstrap_parent() -> argparse.ArgumentParser:
    """A parent parser holding `--bootstrap`, for every leaf command."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--bootstrap",
        "-b",
        default=os.environ.get(BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT[,...]",
        help=f"broker(s) to connect to (default: ${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP})",
    )
    parent.add_argument(
        "--user",
        default=os.environ.get(USER_ENV),
        help=f"log in with SASL as this user, over SASL_PLAINTEXT (default: ${USER_ENV})",
    )
    parent.add_argument(
        "--password",
        default=os.environ.get(PASSWORD_ENV),
        help=f"the SASL password (default: ${PASSWORD_ENV})",
    )
    parent.add_argument(
        "--mechanism",
        choices=SASL_MECHANISMS,
        default=SASL_MECHANISMS[0],
        help="the SASL mechanism (default: %(default)s)",
    )
    return parent


def leaf_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    examples: str,
) -> argparse.ArgumentParser:
    """A command's parser: `--bootstrap`, a description, and examples plus exit codes below."""
    return sub.add_parser(
        name,
        help=summary,
        description=summary,
        parents=[bootstrap_parent()],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"examples:\n{examples}\n\n{EXIT_CODES}",
    )


def addresses(bootstrap: str) -> list[tuple[str, int]]:
    """`host:port,host:port` as pairs; a missing port means 9092, as for Kafka's clients."""
    pairs = []
    for item in bootstrap.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host:
            host, port = port, "9092"
        if not port.isdigit():
            raise ToolError(f"bad bootstrap address {item.strip()!r}", EXIT_USAGE)
        pairs.append((host.strip("[]"), int(port)))
    return pairs


def check_reachable(bootstrap: str) -> None:
    """Raise ToolError(EXIT_CONNECT) unless some bootstrap address accepts a TCP connection
    (kafka-python itself would retry for its whole bootstrap timeout)."""
    failures = []
    for host, port in addresses(bootstrap):
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            failures.append(f"{_address(host, port)} ({exc.strerror or exc})")
        else:
            return
    raise ToolError(f"cannot connect to {', '.join(failures)}", EXIT_CONNECT)


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """kafka-python options every client of the CLI uses (with a SASL login when `--user` is
    given), once some bootstrap address has accepted a connection."""
    check_reachable(args.bootstrap)
    options: dict[str, Any] = {
        "bootstrap_servers": [_address(host, port) for host, port in addresses(args.bootstrap)],
        "client_id": CLIENT_ID,
        "bootstrap_timeout_ms": BOOTSTRAP_TIMEOUT_MS,
    }
    if args.user:
        options.update(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=args.mechanism,
            sasl_plain_username=args.user,
            sasl_plain_password=args.password or "",
        )
    return options


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@contextmanager
def admin_client(args: argparse.Namespace) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(**client_options(args))
    try:
        yield admin
    finally:
        admin.close()


def broker_error(code: int, message: str | None = None) -> str:
    """Kafka's name for an error code and the broker's message (or the code's description):
    `INVALID_PARTITIONS: Number of partitions was set to an invalid non-positive value.`"""
    error = for_code(code)
    return f"{error.message}: {message or error.description}"


def non_negative(text: str) -> int:
    """An argparse type: an integer, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def missing_topic(topic: str) -> ToolError:
    return ToolError(f"topic '{topic}' does not exist")


def describe_existing_topics(admin: KafkaAdminClient, topics: list[str]) -> list[dict[str, Any]]:
    """Metadata of `topics` (never creating them); ToolError for the first unknown one."""
    described: list[dict[str, Any]] = admin.describe_topics(topics)
    for topic in described:
        if topic["error_code"] == UNKNOWN_TOPIC_OR_PARTITION:
            raise missing_topic(topic["name"])
    return described


def key_values(items: Sequence[str], what: str) -> list[tuple[str, str]]:
    """`KEY=VALUE` strings as pairs, in order; ToolError(EXIT_USAGE) for one without `=`."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ToolError(f"{what} must be KEY=VALUE, got {item!r}", EXIT_USAGE)
        pairs.append((key, value))
    return pairs


def timestamp_ms(text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date-time (UTC unless it names a zone)."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(
            f"bad timestamp {text!r}: milliseconds or ISO 8601 (2024-05-01T12:00:00Z)",
            EXIT_USAGE,
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Left-aligned columns on stdout, as Kafka's tools print them."""
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    for row in cells:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


def note(message: str) -> None:
    """Progress and diagnostics: stderr, so stdout carries only data."""
    print(message, file=sys.stderr, flush=True)
