"""The everyday CLI's entry: builds the parsers of every command group, runs the chosen
command, and turns failures into one line on stderr and a documented exit code."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from kafka.errors import (
    BrokerResponseError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)

from minibroker.tools import acl, cluster, consume, group, produce, topic
from minibroker.tools.common import (
    EXIT_CONNECT,
    EXIT_INTERRUPTED,
    EXIT_KAFKA,
    EXIT_OK,
    ToolError,
    broker_error,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="minibroker")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (topic, produce, consume, group, cluster, acl):
        module.add_parser(sub)
    return parser


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _kafka_failure(exc: KafkaError) -> ToolError:
    if isinstance(exc, KafkaConnectionError) or (
        isinstance(exc, KafkaTimeoutError) and "bootstrap" in str(exc)
    ):
        return ToolError(_one_line(exc), EXIT_CONNECT)
    if isinstance(exc, BrokerResponseError):  # its text holds the whole request and response
        return ToolError(broker_error(exc.errno), EXIT_KAFKA)
    return ToolError(_one_line(exc), EXIT_KAFKA)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    # kafka-python logs retries and closed connections; the CLI reports failures itself.
    logging.basicConfig(level=logging.CRITICAL)
    try:
        code: int = args.run(args)
    except ToolError as exc:
        return _report(exc)
    except KafkaError as exc:
        return _report(_kafka_failure(exc))
    except BrokenPipeError:  # e.g. `minibroker consume t | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


def _report(error: ToolError) -> int:
    print(f"minibroker: {error}", file=sys.stderr)
    return error.code
