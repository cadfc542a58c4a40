"""`minibroker produce TOPIC`, as kafka-console-producer: one record per line of stdin
(optionally `KEY<sep>VALUE`), headers, a fixed partition, compression; kafka-python's
KafkaProducer sends them and the number acknowledged goes to stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

from minibroker.tools.common import (
    EXIT_KAFKA,
    EXIT_OK,
    EXIT_USAGE,
    ToolError,
    client_options,
    key_values,
    leaf_parser,
    missing_topic,
    non_negative,
    note,
)

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
METADATA_WAIT_MS = 10_000

EXAMPLES = """\
  echo hello | minibroker produce greetings
  printf 'user-1:signed up\\nuser-2:paid\\n' | minibroker produce events --key-separator :
  minibroker produce events -H source=cli -H trace=42 --partition 0 --compression zstd < in.txt"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    produce = leaf_parser(sub, "produce", "send lines from stdin to a topic", EXAMPLES)
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument(
        "--key-separator",
        metavar="SEP",
        help="split each line at the first SEP into key and value (default: no key)",
    )
    produce.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header on every record (repeatable)",
    )
    produce.add_argument(
        "--partition", type=non_negative, help="(default: the producer's partitioner)"
    )
    produce.add_argument("--compression", choices=COMPRESSIONS, default="none")
    produce.add_argument("--acks", choices=("0", "1", "all"), default="all", help="(default: all)")
    produce.set_defaults(run=run)


@dataclass
class Tally:
    """Acknowledgements and failures, counted by the producer's callbacks."""

    acked: int = 0
    failures: list[BaseException] = field(default_factory=list)

    def ack(self, _metadata: object) -> None:
        self.acked += 1

    def fail(self, exc: BaseException) -> None:
        self.failures.append(exc)


def records(
    lines: Iterable[bytes], separator: bytes | None
) -> Iterator[tuple[bytes | None, bytes]]:
    """(key, value) per line, its line ending removed."""
    for number, line in enumerate(lines, start=1):
        text = line.removesuffix(b"\n").removesuffix(b"\r")
        if separator is None:
            yield None, text
            continue
        key, found, value = text.partition(separator)
        if not found:
            raise ToolError(f"line {number} has no key separator {separator!r}", EXIT_USAGE)
        yield key, value


def run(args: argparse.Namespace) -> int:
    headers = [(key, value.encode()) for key, value in key_values(args.header, "--header")]
    separator = args.key_separator.encode() if args.key_separator else None
    producer = KafkaProducer(
        **client_options(args),
        acks=args.acks if args.acks == "all" else int(args.acks),
        compression_type=None if args.compression == "none" else args.compression,
        max_block_ms=METADATA_WAIT_MS,
    )
    tally = Tally()
    try:
        _check_partition(producer, args.topic, args.partition)
        for key, value in records(sys.stdin.buffer, separator):
            future = producer.send(
                args.topic, value=value, key=key, headers=headers, partition=args.partition
            )
            future.add_callback(tally.ack)
            future.add_errback(tally.fail)
        producer.flush()
    finally:
        producer.close()
    note(f"{tally.acked} record(s) acknowledged")
    if tally.failures:
        raise ToolError(f"{len(tally.failures)} record(s) failed: {tally.failures[0]}", EXIT_KAFKA)
    return EXIT_OK


def _check_partition(producer: KafkaProducer, topic: str, partition: int | None) -> None:
    """The topic exists (or the broker created it on the producer's request) and has the
    partition asked for."""
    try:
        partitions = producer.partitions_for(topic)
    except KafkaTimeoutError:
        raise missing_topic(topic) from None
    if partition is not None and partition not in partitions:
        raise ToolError(f"topic '{topic}' has no partition {partition}")
