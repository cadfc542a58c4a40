"""Executors on confluent-kafka (librdkafka): fetch a range and produce rows in batches.

Used when confluent-kafka is installed (option `pythonClient`: `auto`, the default, or
`confluent-kafka`); kafka-python stays the fallback (`pythonClient=kafka-python`).
Fetching takes `consume(num_messages=...)` batches and builds each Arrow column from one
list; producing hands rows to librdkafka's queue and only failed deliveries call back.

`kafka.*` options are librdkafka properties under their Kafka names. A property librdkafka
does not have (Java-only ones such as `ssl.truststore.location`) is logged and dropped, as
Kafka's Java clients do with unknown properties.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from minibroker.spark.offsets import OffsetRange, report_data_loss
from minibroker.spark.options import idempotent_by_default

log = logging.getLogger(__name__)

CONSUME_BATCH = 10_000
ROWS_PER_BATCH = 8192
_PARTITION_EOF = -191
_AUTO_OFFSET_RESET = -140
_OFFSET_OUT_OF_RANGE = 1
_NO_SUCH_PROPERTY = re.compile(r'No such configuration property: "([^"]+)"')
# Properties librdkafka knows but refuses (Java trust stores, JAAS); unknown ones are dropped below.
_JAVA_ONLY = ("ssl.truststore.", "sasl.jaas.config")
_UNASSIGNED_PARTITION = -1
# A row for the sink: topic, value, key, partition, headers, timestamp (ms).
Row = tuple[str, bytes | None, bytes | None, int | None, Any, int | None]
_WARNINGS = 4  # syslog levels: librdkafka's notices (telemetry, ...) flood executor logs


def available() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


def chosen(python_client: str) -> bool:
    """Whether executors use confluent-kafka for the `pythonClient` option's value."""
    if python_client == "kafka-python":
        return False
    if python_client == "confluent-kafka" and not available():
        raise ImportError("pythonClient=confluent-kafka needs the confluent-kafka package")
    return available()


def _build(factory: Callable[[dict[str, Any]], Any], settings: dict[str, Any]) -> Any:
    """Create the client, dropping the properties librdkafka refuses as unknown."""
    from confluent_kafka import KafkaException

    for name in [n for n in settings if n.startswith(_JAVA_ONLY)]:
        log.warning("Kafka property %r has no librdkafka equivalent: ignored", name)
        del settings[name]
    while True:
        try:
            return factory(settings)
        except KafkaException as exc:
            unknown = _NO_SUCH_PROPERTY.search(str(exc))
            if unknown is None or unknown.group(1) not in settings:
                raise
            log.warning("Kafka property %r has no librdkafka equivalent: ignored", unknown[1])
            del settings[unknown.group(1)]


def consumer(properties: Mapping[str, str], group_id: str) -> Any:
    """An assign-only consumer: it never joins its group nor commits offsets."""
    from confluent_kafka import Consumer

    settings: dict[str, Any] = {
        "max.partition.fetch.bytes": 8 * 1024 * 1024,
        "queued.max.messages.kbytes": 64 * 1024,
        "log_level": _WARNINGS,
        **properties,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
    }
    return _build(Consumer, settings)


def producer(properties: Mapping[str, str], on_failure: Callable[[Any, Any], None]) -> Any:
    """Kafka's producer defaults (acks=all, idempotence); `kafka.*` options override them."""
    from confluent_kafka import Producer

    settings: dict[str, Any] = {
        "acks": "all",
        "enable.idempotence": idempotent_by_default(properties),
        "linger.ms": 5,
        "batch.size": 1024 * 1024,
        "queue.buffering.max.messages": 1_000_000,
        "log_level": _WARNINGS,
        **properties,
        "delivery.report.only.error": True,
        "on_delivery": on_failure,
    }
    return _build(Producer, settings)


def record_batch(
    messages: list[Any], span: OffsetRange, schema: pa.Schema, include_headers: bool
) -> pa.RecordBatch:
    """Column by column: one Python list per column, then one Arrow array from each."""
    count = len(messages)
    stamps = [message.timestamp() for message in messages]
    millis = pa.array([stamp[1] for stamp in stamps], pa.int64())
    columns = [
        pa.array([message.key() for message in messages], pa.binary()),
        pa.array([message.value() for message in messages], pa.binary()),
        pa.repeat(pa.scalar(span.topic, pa.string()), count),
        pa.repeat(pa.scalar(span.partition, pa.int32()), count),
        pa.array([message.offset() for message in messages], pa.int64()),
        pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        # librdkafka: 0 none, 1 CreateTime, 2 LogAppendTime; Kafka's ids are one less.
        pa.array([stamp[0] - 1 for stamp in stamps], pa.int32()),
    ]
    if include_headers:
        headers = [message.headers() or None for message in messages]
        columns.append(pa.array(headers, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def fetch(
    consumer: Any,
    span: OffsetRange,
    schema: pa.Schema,
    include_headers: bool,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
) -> Iterator[pa.RecordBatch]:
    """Records of `[span.start, span.end)`; stops when the position reaches the end (the
    end-of-partition event carries the position past trailing markers or aborted records)."""
    from confluent_kafka import KafkaException, TopicPartition

    consumer.assign([TopicPartition(span.topic, span.partition, span.start)])
    position = span.start
    deadline = time.monotonic() + poll_timeout_ms / 1000
    pending: list[Any] = []
    while position < span.end:
        moved = position
        for message in consumer.consume(num_messages=CONSUME_BATCH, timeout=0.5):
            error = message.error()
            if error is None:
                if message.offset() < span.end:
                    pending.append(message)
                moved = message.offset() + 1
            elif error.code() == _PARTITION_EOF:
                moved = max(moved, message.offset())
            elif error.code() in (_AUTO_OFFSET_RESET, _OFFSET_OUT_OF_RANGE):
                moved = _skip_lost(consumer, span, moved, fail_on_data_loss)
                break
            else:
                raise KafkaException(error)
        if len(pending) >= ROWS_PER_BATCH:
            yield record_batch(pending, span, schema, include_headers)
            pending = []
        if moved > position:
            position, deadline = moved, time.monotonic() + poll_timeout_ms / 1000
        elif time.monotonic() > deadline:
            raise TimeoutError(
                f"Cannot fetch offset {position} of {span.topic}-{span.partition} within "
                f"kafkaConsumer.pollTimeoutMs={poll_timeout_ms}"
            )
    if pending:
        yield record_batch(pending, span, schema, include_headers)


def _skip_lost(consumer: Any, span: OffsetRange, position: int, fail_on_data_loss: bool) -> int:
    """The position fell out of the log: skip to its start (or to the range's end)."""
    from confluent_kafka import TopicPartition

    tp = TopicPartition(span.topic, span.partition)
    earliest, latest = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
    report_data_loss(
        fail_on_data_loss,
        f"Cannot fetch offset {position} of {span.topic}-{span.partition}: the partition "
        f"holds offsets {earliest} to {latest}",
    )
    skipped = min(max(earliest, position), span.end) if position < earliest else span.end
    consumer.assign([TopicPartition(span.topic, span.partition, skipped)])
    return skipped


def produce_rows(producer: Any, rows: Iterator[Row]) -> int:
    """Queue every row (topic, value, key, partition, headers, timestamp ms); waits for room
    when librdkafka's queue is full. Returns the number of rows."""
    produce = producer.produce
    count = 0
    for topic, value, key, partition, headers, timestamp in rows:
        while True:
            try:
                produce(
                    topic,
                    value=value,
                    key=key,
                    partition=_UNASSIGNED_PARTITION if partition is None else partition,
                    headers=[(h["key"], h["value"]) for h in headers] if headers else None,
                    timestamp=timestamp or 0,
                )
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
        if count % 10_000 == 0:
            producer.poll(0)
    return count
