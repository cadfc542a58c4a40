"""Browsing a topic's records: one partition or all, from an offset, a timestamp, the
beginning or the end; a bounded substring search; the live tail's "records after these
offsets".

Records are read from the partition logs up to the high watermark, as a read_uncommitted
consumer would see them: transaction markers are left out, records of aborted transactions
are shown (flagged transactional). A single partition's offset must lie within
[log start, high watermark] (OFFSET_OUT_OF_RANGE otherwise); with every partition the offset
applies to each, clamped to its range (and at most MAX_BROWSE_DECODED records are read in
all). A search scans at most SEARCH_SCAN_LIMIT records in all and says how many it scanned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from minibroker.cluster.state import Partition, Topic
from minibroker.console.errors import BAD_REQUEST, NOT_FOUND, ConsoleError
from minibroker.console.views import Json, existing_topic, partition_end, partition_start
from minibroker.handlers.list_offsets import offset_for
from minibroker.log.walk import stored_batches
from minibroker.records.records import CorruptRecordsError, Record, iter_records
from minibroker.registry.decode import Decoded, decode_framed, running_registry
from minibroker.registry.service import SchemaRegistry
from minibroker.server.broker import Broker

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
SEARCH_SCAN_LIMIT = 10_000
TEXT_PREVIEW_BYTES = 8192
HEX_PREVIEW_BYTES = 1024
READ_CHUNK_BYTES = 64 << 10  # a page shows few records: read little at a time
# Browsing every partition of a wide topic decodes at most this many records in all.
MAX_BROWSE_DECODED = 5_000
POSITIONS = ("beginning", "offset", "timestamp", "end")


@dataclass(frozen=True)
class BrowseRequest:
    partition: int | None  # None: every partition
    position: str
    offset: int = 0
    timestamp_ms: int = 0
    limit: int = DEFAULT_LIMIT
    query: str = ""
    after: dict[int, int] | None = None  # the live tail: partition -> next offset


def _int(params: Mapping[str, str], name: str, default: int) -> int:
    text = params.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ConsoleError(BAD_REQUEST, f"{name} must be an integer, not {text!r}") from None


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date-time (UTC unless it says otherwise)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        if int(text) < 0:
            raise ConsoleError(BAD_REQUEST, f"timestamp must not be negative, not {text}")
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConsoleError(
            BAD_REQUEST,
            f"timestamp must be milliseconds or an ISO 8601 date-time, not {text!r}",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _positions(text: str) -> dict[int, int]:
    """`0:15,1:20` -> {0: 15, 1: 20}."""
    positions: dict[int, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        partition, _, offset = item.partition(":")
        try:
            positions[int(partition)] = int(offset)
        except ValueError:
            raise ConsoleError(
                BAD_REQUEST, f"after takes partition:offset pairs, not {item!r}"
            ) from None
    return positions


def parse_browse(params: Mapping[str, str]) -> BrowseRequest:
    partition_text = params.get("partition", "all").strip() or "all"
    partition = None if partition_text == "all" else _int(params, "partition", 0)
    position = params.get("from", "").strip() or ("offset" if "offset" in params else "beginning")
    if position not in POSITIONS:
        raise ConsoleError(
            BAD_REQUEST, f"from must be one of {', '.join(POSITIONS)}, not {position!r}"
        )
    limit = _int(params, "limit", DEFAULT_LIMIT)
    if not 1 <= limit <= MAX_LIMIT:
        raise ConsoleError(BAD_REQUEST, f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    timestamp = 0
    if position == "timestamp":
        if not params.get("timestamp", "").strip():
            raise ConsoleError(BAD_REQUEST, "from=timestamp needs a timestamp")
        timestamp = parse_timestamp(params["timestamp"])
    after = _positions(params["after"]) if "after" in params else None
    return BrowseRequest(
        partition=partition,
        position=position,
        offset=_int(params, "offset", 0),
        timestamp_ms=timestamp,
        limit=limit,
        query=params.get("q", ""),
        after=after,
    )


# ---- reading ----------------------------------------------------------------------------------


def _selected(topic: Topic, wanted: int | None) -> list[Partition]:
    if wanted is None:
        return list(topic.partitions)
    if not 0 <= wanted < len(topic.partitions):
        raise ConsoleError(
            NOT_FOUND,
            f"UNKNOWN_TOPIC_OR_PARTITION: topic {topic.name} has no partition {wanted} "
            f"(it has {len(topic.partitions)})",
        )
    return [topic.partitions[wanted]]


def _start(partition: Partition, request: BrowseRequest, single: bool) -> int:
    first, end = partition_start(partition), partition_end(partition)
    if request.after is not None:
        return min(max(request.after.get(partition.index, end), first), end)
    if request.position == "beginning":
        return first
    if request.position == "end":
        return max(first, end - request.limit)
    if request.position == "timestamp":
        found, _ = offset_for(partition, request.timestamp_ms, read_committed=False)
        return end if found < 0 else found
    if single and not first <= request.offset <= end:
        raise ConsoleError(
            BAD_REQUEST,
            f"OFFSET_OUT_OF_RANGE: offset {request.offset} is outside partition "
            f"{partition.topic}-{partition.index}'s range [{first}, {end}]",
        )
    if request.offset < 0:
        raise ConsoleError(BAD_REQUEST, f"OFFSET_OUT_OF_RANGE: offset {request.offset} < 0")
    return min(max(request.offset, first), end)


def stored_records(partition: Partition, start: int) -> Iterator[tuple[Record, bool]]:
    """(record, transactional) from `start` up to the high watermark, markers left out."""
    end = partition_end(partition)
    first = max(start, partition_start(partition))
    for header, batch in stored_batches(partition.log, first, end, READ_CHUNK_BYTES):
        if header.is_control:
            continue
        try:
            records = list(iter_records(batch))
        except CorruptRecordsError:
            continue
        for record in records:
            if start <= record.offset < end:
                yield record, header.is_transactional


def _text(data: bytes | None, registry: SchemaRegistry | None = None) -> Json | None:
    if data is None:
        return None
    decoded = None if registry is None else decode_framed(registry, data)
    if decoded is not None:
        return _decoded_text(data, decoded)
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    pretty = None
    if text is not None and len(data) <= TEXT_PREVIEW_BYTES and text.strip()[:1] in ("{", "["):
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = None
    return {
        "size": len(data),
        "utf8": None if text is None else text[:TEXT_PREVIEW_BYTES],
        "json": pretty,
        "hex": data[:HEX_PREVIEW_BYTES].hex(" "),
        "truncated": len(data) > TEXT_PREVIEW_BYTES,
    }


def _decoded_text(data: bytes, decoded: Decoded) -> Json:
    """A value in Confluent's wire format, shown decoded with its registered schema."""
    compact = json.dumps(decoded.value, ensure_ascii=False, default=str)
    return {
        "size": len(data),
        "utf8": compact[:TEXT_PREVIEW_BYTES],
        "json": json.dumps(decoded.value, indent=2, ensure_ascii=False, default=str),
        "hex": data[:HEX_PREVIEW_BYTES].hex(" "),
        "truncated": len(compact) > TEXT_PREVIEW_BYTES,
        "schema": {
            "id": decoded.schema_id,
            "type": decoded.schema_type,
            "subject": decoded.subject,
        },
    }


def _iso_time(timestamp_ms: int) -> str:
    """The record's timestamp as an ISO 8601 UTC time ("" outside what datetime can show)."""
    try:
        moment = datetime.fromtimestamp(timestamp_ms / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return ""
    return moment.isoformat(timespec="milliseconds")


def record_json(
    partition: int, record: Record, transactional: bool, registry: SchemaRegistry | None = None
) -> Json:
    """The record as the console shows it; keys and values in Confluent's wire format decoded
    through `registry` (the broker's Schema Registry, when it runs)."""
    return {
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "time": _iso_time(record.timestamp),
        "key": _text(record.key, registry),
        "value": _text(record.value, registry),
        "headers": [{"key": name, "value": _text(value)} for name, value in record.headers],
        "transactional": transactional,
    }


def _matches(record: Record, needle: bytes) -> bool:
    return needle in (record.key or b"") or needle in (record.value or b"")


def _order(item: tuple[int, Record, bool]) -> tuple[int, int, int]:
    partition, record, _ = item
    return record.timestamp, partition, record.offset


def browse(broker: Broker, topic_name: str, request: BrowseRequest) -> Json:
    topic = existing_topic(broker, topic_name)
    partitions = _selected(topic, request.partition)
    single = request.partition is not None
    starts = {p.index: _start(p, request, single) for p in partitions}
    if request.query:
        return _search(topic_name, partitions, starts, request, running_registry(broker))
    found: list[tuple[int, Record, bool]] = []
    for partition in partitions:
        if len(found) >= MAX_BROWSE_DECODED:
            break
        for count, (record, txn) in enumerate(stored_records(partition, starts[partition.index])):
            if count >= request.limit:
                break
            found.append((partition.index, record, txn))
    found.sort(key=_order)
    kept = found[-request.limit :] if request.position == "end" else found[: request.limit]
    next_offsets = dict(starts)
    for index, record, _ in kept:
        next_offsets[index] = max(next_offsets[index], record.offset + 1)
    if request.position == "end" and request.after is None:
        next_offsets = {p.index: partition_end(p) for p in partitions}
    return {
        "topic": topic_name,
        "records": [
            record_json(p, record, txn, running_registry(broker)) for p, record, txn in kept
        ],
        "next_offsets": next_offsets,
        "end_offsets": {p.index: partition_end(p) for p in partitions},
    }


def _search(
    topic_name: str,
    partitions: list[Partition],
    starts: dict[int, int],
    request: BrowseRequest,
    registry: SchemaRegistry | None,
) -> Json:
    needle = request.query.encode()
    budget = max(1, SEARCH_SCAN_LIMIT // len(partitions))
    scanned, limited = 0, False
    matches: list[tuple[int, Record, bool]] = []
    next_offsets = dict(starts)
    for partition in partitions:
        seen = 0
        for record, txn in stored_records(partition, starts[partition.index]):
            if seen >= budget:
                limited = True
                break
            seen += 1
            next_offsets[partition.index] = record.offset + 1
            if _matches(record, needle):
                matches.append((partition.index, record, txn))
        scanned += seen
    matches.sort(key=_order)
    return {
        "topic": topic_name,
        "records": [record_json(p, r, txn, registry) for p, r, txn in matches[: request.limit]],
        "next_offsets": next_offsets,
        "end_offsets": {p.index: partition_end(p) for p in partitions},
        "search": {
            "query": request.query,
            "scanned": scanned,
            "scan_limit": SEARCH_SCAN_LIMIT,
            "limited": limited,
            "matches": len(matches),
        },
    }


def describe_request(request: BrowseRequest) -> dict[str, Any]:
    """The request as the page's form shows it again."""
    return {
        "partition": "all" if request.partition is None else str(request.partition),
        "from": request.position,
        "offset": request.offset,
        "timestamp": request.timestamp_ms,
        "limit": request.limit,
        "q": request.query,
    }
