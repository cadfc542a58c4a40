"""Streaming through `minikafka`: the example pipeline with availableNow and a checkpoint,
and failOnDataLoss after DeleteRecords."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from examples.spark_pipeline import start

pytestmark = pytest.mark.spark


def send_orders(producer: KafkaProducer, topic: str, numbers: range) -> list[str]:
    """Orders o<n> (every third one unpaid); returns the ids of the paid ones."""
    paid = []
    for n in numbers:
        status = "open" if n % 3 == 0 else "paid"
        order = {"id": f"o{n}", "status": status, "item": f"item{n}"}
        producer.send(topic, key=f"k{n}".encode(), value=json.dumps(order).encode())
        if status == "paid":
            paid.append(f"o{n}")
    producer.flush()
    return paid


def run_to_end(queries: list[Any]) -> None:
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[str, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close()
    return {str(tp.partition): offset for tp, offset in ends.items()}


def last_checkpointed_offsets(checkpoint: Path) -> Any:
    """The source offsets of the last batch in Spark's offset log (its last line)."""
    last = max(
        (checkpoint / "offsets").iterdir(), key=lambda f: int(f.name) if f.name.isdigit() else -1
    )
    return json.loads(last.read_text().splitlines()[-1])


def test_example_pipeline_reruns_from_its_checkpoint(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer, tmp_path: Path
) -> None:
    orders, paid_topic = new_topic(2), new_topic(1)
    table, checkpoints = str(tmp_path / "table"), tmp_path / "checkpoints"

    def run() -> None:
        queries = start(
            spark,
            "minikafka",
            bootstrap,
            table,
            str(checkpoints),
            orders,
            paid_topic,
            available_now=True,
            max_offsets_per_trigger=20,
        )
        run_to_end(queries)

    paid = send_orders(producer, orders, range(30))
    run()
    paid += send_orders(producer, orders, range(30, 45))
    run()

    written = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", paid_topic)
        .load()
    )
    topic_ids = Counter(json.loads(row.value)["id"] for row in written.collect())
    assert topic_ids == Counter(paid)
    table_ids = Counter(row.id for row in spark.read.parquet(table).collect())
    assert table_ids == Counter(paid)
    items = {row.id: row.item for row in spark.read.parquet(table).collect()}
    assert items["o44"] == "ITEM44"
    for sink in ("topic", "table"):
        checkpointed = last_checkpointed_offsets(checkpoints / sink)
        assert checkpointed == {orders: end_offsets(bootstrap, orders, 2)}


def test_fail_on_data_loss_after_delete_records(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer, tmp_path: Path
) -> None:
    topic = new_topic(1)
    table, checkpoint = str(tmp_path / "table"), str(tmp_path / "checkpoint")

    def run(fail_on_data_loss: str) -> Any:
        query = (
            spark.readStream.format("minikafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", fail_on_data_loss)
            .load()
            .selectExpr("CAST(value AS STRING) AS value", "offset")
            .writeStream.format("parquet")
            .option("path", table)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        return query

    def send(numbers: range) -> None:
        for n in numbers:
            producer.send(topic, value=f"m{n}".encode(), partition=0)
        producer.flush()

    send(range(10))
    run_to_end([run("true")])
    send(range(10, 20))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_records({TopicPartition(topic, 0): 15})
    admin.close()

    failing = run("true")
    with pytest.raises(Exception, match="Some data may have been lost"):
        failing.awaitTermination()
    assert sorted(row.offset for row in spark.read.parquet(table).collect()) == list(range(10))

    run_to_end([run("false")])
    offsets = sorted(row.offset for row in spark.read.parquet(table).collect())
    assert offsets == [*range(10), *range(15, 20)]
