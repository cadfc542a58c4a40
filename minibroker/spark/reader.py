"""Executor side: fetch one offset range of one partition and hand it over as Arrow batches.

A range ends at an offset, not after a number of records: compaction and transaction
markers (and, with read_committed, aborted records) leave gaps, so reading stops when the
consumer's position reaches the range's end. A start below the log start offset is data
loss: an error with failOnDataLoss=true, otherwise reading skips to the log start.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import OffsetOutOfRangeError

from minibroker.spark import client, rdkafka
from minibroker.spark.offsets import OffsetRange, report_data_loss
from minibroker.spark.options import SourceOptions

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
SOURCE_FIELDS = [
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
]
SOURCE_DDL = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
    "timestamp TIMESTAMP, timestampType INT"
)
HEADERS_DDL = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
ROWS_PER_BATCH = 8192


def source_ddl(include_headers: bool) -> str:
    return f"{SOURCE_DDL}, {HEADERS_DDL}" if include_headers else SOURCE_DDL


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = SOURCE_FIELDS + ([("headers", HEADERS_TYPE)] if include_headers else [])
    return pa.schema(fields)


class _Columns:
    """Records of one range gathered column by column."""

    def __init__(self, span: OffsetRange, include_headers: bool) -> None:
        self.span = span
        self.schema = arrow_schema(include_headers)
        self.include_headers = include_headers
        self.clear()

    def clear(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.headers: list[list[dict[str, Any]] | None] = []

    def add(self, record: Any) -> None:
        self.keys.append(record.key)
        self.values.append(record.value)
        self.offsets.append(record.offset)
        self.timestamps.append(record.timestamp * 1000)
        self.timestamp_types.append(record.timestamp_type)
        if self.include_headers:
            self.headers.append(
                [{"key": k, "value": v} for k, v in record.headers] if record.headers else None
            )

    def __len__(self) -> int:
        return len(self.offsets)

    def batch(self) -> pa.RecordBatch:
        count = len(self.offsets)
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(self.span.topic, pa.string()), count),
            pa.repeat(pa.scalar(self.span.partition, pa.int32()), count),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array(self.headers, HEADERS_TYPE))
        self.clear()
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def read_range(
    options: SourceOptions, span: OffsetRange, group_id: str
) -> Iterator[pa.RecordBatch]:
    """With confluent-kafka when chosen (see `rdkafka`), kafka-python otherwise."""
    if rdkafka.chosen(options.python_client):
        fast = rdkafka.consumer(options.client, group_id)
        try:
            yield from rdkafka.fetch(
                fast,
                span,
                arrow_schema(options.include_headers),
                options.include_headers,
                options.fail_on_data_loss,
                options.poll_timeout_ms,
            )
        finally:
            fast.close()
        return
    consumer = client.consumer(options.client)
    try:
        yield from _fetch(consumer, options, span)
    finally:
        consumer.close()


def _fetch(consumer: Any, options: SourceOptions, span: OffsetRange) -> Iterator[pa.RecordBatch]:
    tp = KafkaTopicPartition(span.topic, span.partition)
    consumer.assign([tp])
    consumer.seek(tp, span.start)
    columns = _Columns(span, options.include_headers)
    position = span.start
    deadline = time.monotonic() + options.poll_timeout_ms / 1000
    while position < span.end:
        try:
            fetched = consumer.poll(timeout_ms=500).get(tp, [])
        except OffsetOutOfRangeError:
            position = _skip_lost(consumer, tp, position, span, options.fail_on_data_loss)
            continue
        for record in fetched:
            if record.offset >= span.end:
                break
            columns.add(record)
        if len(columns) >= ROWS_PER_BATCH:
            yield columns.batch()
        moved = consumer.position(tp)
        if moved > position:
            position, deadline = moved, time.monotonic() + options.poll_timeout_ms / 1000
        elif time.monotonic() > deadline:
            raise TimeoutError(
                f"Cannot fetch offset {position} of {span.topic}-{span.partition} within "
                f"kafkaConsumer.pollTimeoutMs={options.poll_timeout_ms}"
            )
    if len(columns):
        yield columns.batch()


def _skip_lost(
    consumer: Any, tp: Any, position: int, span: OffsetRange, fail_on_data_loss: bool
) -> int:
    """The position fell out of the log: skip to its start (or to the range's end)."""
    earliest = consumer.beginning_offsets([tp])[tp]
    latest = consumer.end_offsets([tp])[tp]
    report_data_loss(
        fail_on_data_loss,
        f"Cannot fetch offset {position} of {span.topic}-{span.partition}: the partition "
        f"holds offsets {earliest} to {latest}",
    )
    skipped = min(max(earliest, position), span.end) if position < earliest else span.end
    consumer.seek(tp, skipped)
    return skipped
