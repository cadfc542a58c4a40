"""Executor side of the sink: produce the rows of Arrow batches, as Spark's `KafkaWriter`.

Columns: `value` (string or binary, required), `key` (string or binary), `topic` (string;
the `topic` option wins over it), `partition` (int; null lets the producer's partitioner
decide), `headers` (array<struct<key string, value binary>>) and `timestamp` (timestamp:
the record's CreateTime; null or absent lets the producer stamp it); other columns are
ignored. Each task produces with Kafka's producer defaults (acks=all, idempotence) unless
`kafka.*` options say otherwise, flushes, and fails if any record failed: delivery is
at-least-once, as with Spark's own sink.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from minibroker.spark import client, exactly_once, rdkafka
from minibroker.spark.options import SinkOptions
from minibroker.spark.rdkafka import Row

_BYTES_TYPES = ("string", "binary")
_TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")


class KafkaSinkSchemaError(ValueError):
    """The query's columns do not fit the Kafka sink."""


@dataclass(frozen=True)
class SinkColumns:
    """Which of the sink's columns the query has (type names as Spark's `simpleString`)."""

    key: bool
    topic: bool
    partition: bool
    headers: bool
    timestamp: bool = False


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
    if types.get("timestamp", "timestamp") not in _TIMESTAMP_TYPES:
        raise KafkaSinkSchemaError("timestamp attribute type must be a timestamp")
    return SinkColumns(
        timestamp="timestamp" in types,
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


def _milliseconds(batch: pa.RecordBatch, present: bool) -> list[int | None]:
    if not present:
        return [None] * batch.num_rows
    micros = batch.column("timestamp").cast(pa.timestamp("us")).cast(pa.int64())
    return pc.divide(micros, 1000).to_pylist()  # type: ignore[no-any-return]


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
    rows = (row for batch in batches for row in _rows(options, columns, batch))
    if options.exactly_once:
        return exactly_once.produce(options, rows)
    if rdkafka.chosen(options.python_client):
        return _produce_rdkafka(options, rows)
    return _produce_kafka_python(options, rows)


def _produce_rdkafka(options: SinkOptions, rows: Iterator[Row]) -> int:
    failures: list[Any] = []
    producer = rdkafka.producer(options.client, lambda error, _: failures.append(error))
    count = rdkafka.produce_rows(producer, _until_failure(rows, failures))
    producer.flush()
    if failures:
        raise RuntimeError(f"Writing to Kafka failed: {failures[0]}")
    return count


def _produce_kafka_python(options: SinkOptions, rows: Iterator[Row]) -> int:
    producer = client.producer(options.client)
    failures: list[BaseException] = []
    count = 0
    try:
        for topic, value, key, partition, headers, timestamp in _until_failure(rows, failures):
            future = producer.send(
                topic,
                value=client.NULL_VALUE if value is None else value,
                key=key,
                partition=partition,
                headers=_headers(headers),
                timestamp_ms=timestamp,
            )
            future.add_errback(failures.append)
            count += 1
        producer.flush()
    finally:
        producer.close()
    if failures:
        raise RuntimeError(f"Writing to Kafka failed: {failures[0]!r}") from failures[0]
    return count


def _until_failure(rows: Iterator[Row], failures: list[Any]) -> Iterator[Row]:
    for row in rows:
        if failures:
            return
        yield row


def _rows(options: SinkOptions, columns: SinkColumns, batch: pa.RecordBatch) -> Iterator[Row]:
    """(topic, value, key, partition, headers, timestamp ms) of each row of a batch."""
    values = _column(batch, "value", True)
    keys = _column(batch, "key", columns.key)
    partitions = _column(batch, "partition", columns.partition)
    headers = _column(batch, "headers", columns.headers)
    stamps = _milliseconds(batch, columns.timestamp)
    if options.topic is not None or not columns.topic:
        topics: list[Any] = [options.topic] * batch.num_rows
    else:
        topics = [None if t is None else t.decode() for t in _column(batch, "topic", True)]
    for topic, value, key, partition, header, stamp in zip(
        topics, values, keys, partitions, headers, stamps, strict=True
    ):
        if topic is None:
            raise ValueError(
                "null topic present in the data. Use the topic option for setting a topic."
            )
        yield topic, value, key, partition, header, stamp
