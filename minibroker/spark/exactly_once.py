"""The streaming sink's `exactlyOnce=true` (which Spark's own Kafka sink does not offer).

Each task of a micro-batch writes its rows in one Kafka transaction, with the transactional
id `<transactionalIdPrefix>-<task partition>`:

- A retried task attempt calls `init_transactions` with the same id, which fences the
  earlier attempt and aborts its open transaction: `read_committed` consumers never see the
  records of a failed attempt.
- The transaction also commits, as a consumer-group offset, the micro-batch id (+1) under
  the group `<transactionalIdPrefix>-<task partition>` (offset of partition 0 of the
  marker topic: the `topic` option, else the first row's topic). When Spark runs a batch
  again (a failure after some tasks committed, a restart before the checkpoint recorded
  the batch), a task that finds its batch id committed produces nothing: its rows are
  already in Kafka, atomically with that marker.

Guarantee: every row of a committed micro-batch is visible exactly once to `read_committed`
consumers, provided a re-run task gets the same rows as the first run (true for a Kafka
source replaying the same offsets without non-deterministic operators before the sink) and
the prefix is the same at every restart and unique to the query. `read_uncommitted`
consumers also see aborted records (at-least-once). Needs confluent-kafka.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from typing import Any

from minibroker.spark import rdkafka
from minibroker.spark.options import SinkOptions

log = logging.getLogger(__name__)

BATCH_ID_PROPERTY = "streaming.sql.batchId"  # Spark's MicroBatchExecution.BATCH_ID_KEY
TIMEOUT_S = 60


def task_and_batch() -> tuple[int, int]:
    """The task's partition and its micro-batch id, from Spark's task context."""
    from pyspark import TaskContext

    context = TaskContext.get()
    batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    if context is None or batch is None:
        raise RuntimeError("exactlyOnce needs a streaming query's task (no micro-batch id)")
    return context.partitionId(), int(batch)


def produce(options: SinkOptions, rows: Iterator[rdkafka.Row]) -> int:
    """Write a task's rows in one transaction; 0 when an earlier run committed them."""
    if not rdkafka.chosen(options.python_client):
        raise RuntimeError("exactlyOnce needs confluent-kafka (pythonClient auto or confluent)")
    task, batch = task_and_batch()
    first = next(rows, None)
    if first is None:
        return 0
    name = f"{options.transactional_id_prefix}-{task}"
    marker = options.topic or first[0]
    consumer = rdkafka.consumer({**options.client, "isolation.level": "read_committed"}, name)
    try:
        if _committed(consumer, marker) > batch:
            log.info("Batch %d of task %d was committed by an earlier run: skipped", batch, task)
            return 0
        return _transaction(options, name, consumer, marker, batch, itertools.chain([first], rows))
    finally:
        consumer.close()


def _committed(consumer: Any, marker: str) -> int:
    from confluent_kafka import TopicPartition

    found = consumer.committed([TopicPartition(marker, 0)], timeout=TIMEOUT_S)[0]
    return int(found.offset) if found.offset >= 0 else 0


def _transaction(
    options: SinkOptions,
    name: str,
    consumer: Any,
    marker: str,
    batch: int,
    rows: Iterator[rdkafka.Row],
) -> int:
    from confluent_kafka import TopicPartition

    failures: list[Any] = []
    settings = {**options.client, "transactional.id": name}
    producer = rdkafka.producer(settings, lambda error, _: failures.append(error))
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    count = rdkafka.produce_rows(producer, rows)
    producer.flush()
    if failures:
        producer.abort_transaction(TIMEOUT_S)
        raise RuntimeError(f"Writing to Kafka failed: {failures[0]}")
    producer.send_offsets_to_transaction(
        [TopicPartition(marker, 0, batch + 1)], consumer.consumer_group_metadata(), TIMEOUT_S
    )
    producer.commit_transaction(TIMEOUT_S)
    return count
