"""Executor side of the sink: produce the rows of Arrow batches, as Spark's `KafkaWriter`.

Columns: `value` (string or binary, required), `key` (string or binary), `topic` (string;
the `topic` option wins over it), `partition` (int; null lets the producer's partitioner
decide) and `headers` (array<struct<key string, value binary>>); other columns are
ignored. Each task produces with acks=all and idempotence, flushes, and fails if any
record failed: delivery is at-least-once, as with Spark's own sink.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from minibroker.spark import client
from minibroker.spark.options import SinkOptions

_BYTES_TYPES = ("string", "binary")


class KafkaSinkSchemaError(ValueError):
    """The query's columns do not fit the Kafka sink."""


@dataclass(frozen=True)
class SinkColumns:
    """Which of the sink's columns the query has (type names as Spark's `simpleString`)."""

    key: bool
    topic: bool
    partition: bool
    headers: bool


def check_columns(types: dict[str, str], topic_option: str | None) -> SinkColumns:
    """`types`: column name → Spark simple type name, e.g. {"value": "binary"}."""
    if "value" not in types:
        raise KafkaSinkSchemaError("Required attribute 'value' not found")
    if types["value"] not in _BYTES_TYPES:
        raise KafkaSinkSchemaError("value attribute type must be a string or binary")
    if types.get("key", "binary") not in _BYTES_TYPES:
        raise KafkaSinkSchemaError("key attribute type must be a string or binary")
    if topic_option is None and "topic" not in types:
        raise KafkaSinkSchemaError(
            "topic option required when no 'topic' attribute is present. Use the topic option "
            "for setting a topic."
        )
    if types.get("topic", "string") != "string":
        raise KafkaSinkSchemaError("Topic type must be a string")
    if types.get("partition", "int") != "int":
        raise KafkaSinkSchemaError("partition attribute type must be an int")
    if types.get("headers", "array<struct<key:string,value:binary>>") != (
        "array<struct<key:string,value:binary>>"
    ):
        raise KafkaSinkSchemaError(
            "headers attribute type must be an array<struct<key:string,value:binary>>"
        )
    return SinkColumns(
        key="key" in types,
        topic="topic" in types,
        partition="partition" in types,
        headers="headers" in types,
    )


def _column(batch: pa.RecordBatch, name: str, present: bool) -> list[Any]:
    if not present:
        return [None] * batch.num_rows
    column = batch.column(name)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    return column.to_pylist()  # type: ignore[no-any-return]


def _headers(raw: list[dict[str, Any]] | None) -> list[tuple[str, bytes]] | None:
    if not raw:
        return None
    headers = []
    for header in raw:
        if header["value"] is None:
            raise ValueError(f"Header {header['key']!r} has a null value: kafka-python refuses it")
        headers.append((header["key"], header["value"]))
    return headers


def produce_batches(
    options: SinkOptions, columns: SinkColumns, batches: Iterable[pa.RecordBatch]
) -> int:
    """Produce every row, wait for every acknowledgement; returns the number of records."""
    producer = client.producer(options.client)
    failures: list[BaseException] = []
    count = 0
    try:
        for batch in batches:
            for record in _records(options, columns, batch):
                topic, value, key, partition, headers = record
                future = producer.send(
                    topic, value=value, key=key, partition=partition, headers=headers
                )
                future.add_errback(failures.append)
                count += 1
            if failures:
                break
        producer.flush()
    finally:
        producer.close()
    if failures:
        raise RuntimeError(f"Writing to Kafka failed: {failures[0]!r}") from failures[0]
    return count


def _records(
    options: SinkOptions, columns: SinkColumns, batch: pa.RecordBatch
) -> Iterator[tuple[str, Any, bytes | None, int | None, list[tuple[str, bytes]] | None]]:
    values = _column(batch, "value", True)
    keys = _column(batch, "key", columns.key)
    topics = _column(batch, "topic", columns.topic and options.topic is None)
    partitions = _column(batch, "partition", columns.partition)
    headers = _column(batch, "headers", columns.headers)
    for value, key, topic, partition, header in zip(
        values, keys, topics, partitions, headers, strict=True
    ):
        name = options.topic or (topic.decode() if topic is not None else None)
        if name is None:
            raise ValueError(
                "null topic present in the data. Use the topic option for setting a topic."
            )
        yield name, client.NULL_VALUE if value is None else value, key, partition, _headers(header)
