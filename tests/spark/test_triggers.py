"""Streaming admission control as Spark's Kafka source: `minOffsetsPerTrigger` with
`maxTriggerDelay`, `maxOffsetsPerTrigger` under `Trigger.ProcessingTime` and
`Trigger.AvailableNow`, and what progress reports show (numInputRows, latest offsets)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.spark.test_batch import read

pytestmark = pytest.mark.spark


def send(producer: KafkaProducer, topic: str, numbers: range) -> None:
    for n in numbers:
        producer.send(topic, value=f"m{n}".encode(), partition=0)
    producer.flush()


def stream(spark: Any, bootstrap: str, topic: str, trigger: dict[str, Any], **options: str) -> Any:
    reader = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for name, value in options.items():
        reader = reader.option(name, value)
    return (
        reader.load()
        .selectExpr("CAST(value AS STRING) AS value", "offset")
        .writeStream.format("memory")
        .queryName(f"q_{uuid.uuid4().hex[:10]}")
        .trigger(**trigger)
        .start()
    )


def rows(spark: Any, query: Any) -> int:
    return int(spark.table(query.name).count())


def wait_for(condition: Callable[[], bool], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.5)


def input_rows(query: Any) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_min_offsets_per_trigger_waits_for_enough_offsets(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer
) -> None:
    topic = new_topic(1)
    send(producer, topic, range(3))
    query = stream(
        spark,
        bootstrap,
        topic,
        {"processingTime": "500 milliseconds"},
        minOffsetsPerTrigger="5",
        maxTriggerDelay="1h",
    )
    try:
        time.sleep(6)
        assert rows(spark, query) == 0
        send(producer, topic, range(3, 5))
        wait_for(lambda: rows(spark, query) == 5)
        assert input_rows(query) == [5]
    finally:
        query.stop()


def test_max_trigger_delay_runs_a_batch_below_the_minimum(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer
) -> None:
    topic = new_topic(1)
    send(producer, topic, range(3))
    started = time.monotonic()
    query = stream(
        spark,
        bootstrap,
        topic,
        {"processingTime": "500 milliseconds"},
        minOffsetsPerTrigger="1000",
        maxTriggerDelay="4s",
    )
    try:
        wait_for(lambda: rows(spark, query) == 3)
        assert time.monotonic() - started >= 4
    finally:
        query.stop()


def test_max_offsets_per_trigger_with_processing_time_and_progress(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer
) -> None:
    topic = new_topic(1)
    send(producer, topic, range(10))
    query = stream(
        spark,
        bootstrap,
        topic,
        {"processingTime": "200 milliseconds"},
        maxOffsetsPerTrigger="4",
    )
    try:
        wait_for(lambda: rows(spark, query) == 10)
        wait_for(lambda: sum(input_rows(query)) == 10)
        assert input_rows(query) == [4, 4, 2]
        source = next(p for p in query.recentProgress if p["numInputRows"] == 2)["sources"][0]
        assert json.loads(source["endOffset"]) == {topic: {"0": 10}}
        assert json.loads(source["latestOffset"]) == {topic: {"0": 10}}
    finally:
        query.stop()


def test_available_now_reads_everything_in_capped_batches_without_waiting(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer
) -> None:
    topic = new_topic(1)
    send(producer, topic, range(5))
    query = stream(
        spark,
        bootstrap,
        topic,
        {"availableNow": True},
        minOffsetsPerTrigger="1000",
        maxTriggerDelay="1h",
        maxOffsetsPerTrigger="2",
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert rows(spark, query) == 5
    assert input_rows(query) == [2, 2, 1]


def test_group_id_options_are_accepted(spark: Any, bootstrap: str, new_topic: Any) -> None:
    """Executor consumers take `kafka.group.id`, else `<groupIdPrefix>-<uuid>-executor`;
    they only assign partitions, so the group never has members or offsets."""
    topic = new_topic(1)
    spark.createDataFrame([("a",)], "value STRING").write.format("minikafka").option(
        "kafka.bootstrap.servers", bootstrap
    ).option("topic", topic).mode("append").save()
    by_prefix = read(spark, bootstrap, subscribe=topic, groupIdPrefix="my-app")
    assert [bytes(r.value) for r in by_prefix.collect()] == [b"a"]
    by_group = read(spark, bootstrap, subscribe=topic, **{"kafka.group.id": "shared-group"})
    assert [bytes(r.value) for r in by_group.collect()] == [b"a"]
