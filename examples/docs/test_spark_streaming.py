"""A Spark Structured Streaming pipeline tested with the `kafka_broker` fixture and a local
SparkSession (docs/guides/pyspark.md): paid orders are copied to another topic."""

import json
import os
import sys

import pytest
from pyspark.sql import SparkSession

import minibroker.spark


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers need this venv
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    minibroker.spark.register(session)  # the format "minikafka"
    yield session
    session.stop()


def copy_paid_orders(spark, bootstrap, checkpoint):
    """The pipeline under test: read `orders`, keep the paid ones, write them to `paid`."""
    query = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "orders")
        .option("startingOffsets", "earliest")
        .load()
        .where("get_json_object(CAST(value AS STRING), '$.status') = 'paid'")
        .select("key", "value")
        .writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "paid")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)  # read what is there, then stop
        .start()
    )
    query.awaitTermination()


def test_paid_orders_are_copied(spark, kafka_broker, tmp_path):
    kafka_broker.create_topic("orders", partitions=2)
    kafka_broker.create_topic("paid")
    for n, status in enumerate(["paid", "open", "paid"]):
        order = json.dumps({"id": n, "status": status}).encode()
        kafka_broker.produce("orders", order, key=str(n).encode())

    copy_paid_orders(spark, kafka_broker.bootstrap_servers, str(tmp_path / "checkpoint"))

    paid = sorted(json.loads(value)["id"] for value in kafka_broker.values("paid"))
    assert paid == [0, 2]
