"""`minibroker consume TOPIC`, as kafka-console-consumer: records from the end, the beginning,
an offset or a timestamp, alone or in a consumer group (committing what it printed), as
values, key-value lines or JSON lines with their metadata; kafka-python's KafkaConsumer
fetches them."""

from __future__ import annotations

import argparse
import base64
import json
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

from kafka import KafkaConsumer, TopicPartition

from minibroker.tools.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ToolError,
    client_options,
    leaf_parser,
    missing_topic,
    non_negative,
    note,
    timestamp_ms,
)

FORMATS = ("value", "key-value", "json")
POLL_MS = 500

EXAMPLES = """\
  minibroker consume greetings --from-beginning -n 10
  minibroker consume events --group audit --format key-value
  minibroker consume events --timestamp 2024-05-01T12:00:00Z --timeout-ms 2000 --format json
  minibroker consume events --partition 0 --offset 42 -n 1"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    consume = leaf_parser(sub, "consume", "print a topic's records", EXAMPLES)
    consume.add_argument("topic", metavar="TOPIC")
    start = consume.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="(default: only new records)")
    start.add_argument("--offset", type=non_negative, metavar="N", help="start at offset N")
    start.add_argument(
        "--timestamp",
        metavar="MS|ISO",
        help="start at the first record at or after this time (ISO without a zone: UTC)",
    )
    consume.add_argument(
        "--partition",
        type=non_negative,
        action="append",
        metavar="N",
        help="only partition N (repeatable)",
    )
    consume.add_argument(
        "--group", metavar="G", help="consume as a member of group G and commit what is printed"
    )
    consume.add_argument(
        "-n", "--count", type=non_negative, metavar="COUNT", help="stop after COUNT"
    )
    consume.add_argument(
        "--timeout-ms", type=non_negative, metavar="MS", help="stop after MS without a record"
    )
    consume.add_argument("--format", choices=FORMATS, default="value")
    consume.add_argument(
        "--key-separator", default="\t", metavar="SEP", help="for key-value (default: tab)"
    )
    consume.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.group and (args.offset is not None or args.timestamp or args.partition):
        raise ToolError("--group takes no --offset, --timestamp or --partition", EXIT_USAGE)
    consumer = KafkaConsumer(
        **client_options(args),
        group_id=args.group,
        enable_auto_commit=False,
        allow_auto_create_topics=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
    )
    interrupted = threading.Event()
    signal.signal(signal.SIGINT, lambda _signum, _frame: interrupted.set())
    try:
        _position(consumer, args)
        printed = _print_records(consumer, args, sys.stdout.buffer, interrupted)
    finally:
        consumer.close()
    note(f"{printed} record(s) consumed")
    return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_OK


def _position(consumer: KafkaConsumer, args: argparse.Namespace) -> None:
    """Subscribe (with --group) or assign the partitions and seek to where to start."""
    partitions = consumer.partitions_for_topic(args.topic)
    if not partitions:
        raise missing_topic(args.topic)
    if args.group:
        consumer.subscribe([args.topic])
        return
    unknown = set(args.partition or ()) - partitions
    if unknown:
        raise ToolError(f"topic '{args.topic}' has no partition {min(unknown)}")
    assigned = [TopicPartition(args.topic, index) for index in args.partition or partitions]
    consumer.assign(assigned)
    if args.from_beginning:
        consumer.seek_to_beginning()
    elif args.offset is not None:
        for tp in assigned:
            consumer.seek(tp, args.offset)
    elif args.timestamp:
        _seek_to_time(consumer, assigned, timestamp_ms(args.timestamp))
    else:
        consumer.seek_to_end()


def _seek_to_time(consumer: KafkaConsumer, assigned: list[TopicPartition], ms: int) -> None:
    found = consumer.offsets_for_times(dict.fromkeys(assigned, ms))
    for tp in assigned:
        if found.get(tp) is None:  # nothing at or after that time yet
            consumer.seek_to_end(tp)
        else:
            consumer.seek(tp, found[tp].offset)


def _print_records(
    consumer: KafkaConsumer, args: argparse.Namespace, out: BinaryIO, interrupted: threading.Event
) -> int:
    """Poll and print until --count records, --timeout-ms without a record (counted once
    partitions are assigned: a group's join is not idleness), or Ctrl-C (seen between polls,
    so what was printed is counted and, in a group, committed)."""
    printed = 0
    idle_since = time.monotonic()
    while not interrupted.is_set() and (args.count is None or printed < args.count):
        wanted = None if args.count is None else args.count - printed
        batches = consumer.poll(timeout_ms=POLL_MS, max_records=wanted)
        records = [record for batch in batches.values() for record in batch]
        for record in records:
            out.write(_render(record, args))
        out.flush()
        printed += len(records)
        if records and args.group:
            consumer.commit()
        if records or not consumer.assignment():
            idle_since = time.monotonic()
        elif args.timeout_ms is not None and _elapsed_ms(idle_since) >= args.timeout_ms:
            break
    return printed


def _elapsed_ms(since: float) -> float:
    return (time.monotonic() - since) * 1000


def _render(record: Any, args: argparse.Namespace) -> bytes:
    if args.format == "json":
        return json.dumps(_as_json(record)).encode() + b"\n"
    value = bytes(record.value or b"")
    if args.format == "key-value":
        separator: bytes = args.key_separator.encode()
        return bytes(record.key or b"") + separator + value + b"\n"
    return value + b"\n"


def _as_json(record: Any) -> dict[str, Any]:
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": _text(record.key),
        "value": _text(record.value),
        "headers": [{"key": key, "value": _text(value)} for key, value in record.headers],
    }


def _text(data: bytes | None) -> str | None:
    """UTF-8 text as it is; other bytes as `base64:<encoded>`, so every line stays JSON."""
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()
