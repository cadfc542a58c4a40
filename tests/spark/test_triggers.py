"""Streaming admission control as Spark's Kafka source: `minOffsetsPerTrigger` with
`maxTriggerDelay`, `maxOffsetsPerTrigger` under `Trigger.ProcessingTime`,
`Trigger.AvailableNow` and `Trigger.Once`, what progress reports show (numInputRows, latest
offsets), and the executor consumers' group ids."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaProducer

from minibroker.protocol.api_keys import ApiKey
from minibroker.server.faults import Faults
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
        # The lag of a batch: its endOffset against the latestOffset seen when it was planned.
        first = next(p for p in query.recentProgress if p["numInputRows"] == 4)["sources"][0]
        assert json.loads(first["endOffset"]) == {topic: {"0": 4}}
        assert json.loads(first["latestOffset"]) == {topic: {"0": 10}}
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


def test_trigger_once_reads_everything_in_one_batch(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer
) -> None:
    """Spark gives a Trigger.Once query no read limit: one batch, whatever the options."""
    topic = new_topic(1)
    send(producer, topic, range(5))
    query = stream(
        spark,
        bootstrap,
        topic,
        {"once": True},
        minOffsetsPerTrigger="1000",
        maxTriggerDelay="1h",
        maxOffsetsPerTrigger="2",
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert input_rows(query) == [5]


GROUP_APIS = (
    ApiKey.JoinGroup,
    ApiKey.SyncGroup,
    ApiKey.Heartbeat,
    ApiKey.OffsetFetch,
    ApiKey.OffsetCommit,
    ApiKey.ConsumerGroupHeartbeat,
)


def group_lookups(recorded: Faults) -> set[str]:
    """The group ids whose coordinator a client looked up (librdkafka does for its
    `group.id` even when it only assigns partitions)."""
    keys: set[str] = set()
    for request in recorded.requests(ApiKey.FindCoordinator):
        if request.body.key_type == 0:
            keys.update(request.body.coordinator_keys or [request.body.key])
    return keys


def test_executor_consumers_take_their_group_id_as_spark_does(
    spark: Any, bootstrap: str, new_topic: Any, recorded: Faults
) -> None:
    """`kafka.group.id` if given (groupIdPrefix ignored), else `<groupIdPrefix>-<uuid>-executor`
    with the prefix `spark-kafka-relation` in batch; the consumers only assign partitions, so
    no group gets a member or an offset."""
    topic = new_topic(1)
    spark.createDataFrame([("a",)], "value STRING").write.format("minikafka").option(
        "kafka.bootstrap.servers", bootstrap
    ).option("topic", topic).mode("append").save()
    uuid_pattern = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

    def group_of(**options: str) -> str:
        recorded.clear_requests()
        frame = read(spark, bootstrap, subscribe=topic, pythonClient="confluent-kafka", **options)
        assert [bytes(r.value) for r in frame.collect()] == [b"a"]
        assert not [r.api_name for r in recorded.requests() if r.api_key in GROUP_APIS]
        (group,) = group_lookups(recorded)
        return group

    assert re.fullmatch(f"spark-kafka-relation-{uuid_pattern}-executor", group_of())
    assert re.fullmatch(f"my-app-{uuid_pattern}-executor", group_of(groupIdPrefix="my-app"))
    chosen = group_of(groupIdPrefix="my-app", **{"kafka.group.id": "shared-group"})
    assert chosen == "shared-group"
