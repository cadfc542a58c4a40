"""A streaming pipeline that runs on Spark's Kafka connector in production and on
minibroker's `minikafka` data source in tests: the only difference is the format name.

It reads the topic `orders` (JSON values), keeps the paid orders, writes them upper-cased to
the topic `paid-orders` and appends them to a Parquet table. Each sink has its own
checkpoint under `checkpoint_dir`, so a rerun continues where the last one stopped.

    spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:$SPARK_VERSION \\
        examples/spark_pipeline.py kafka:9092 /data/paid-orders /data/checkpoints
    python examples/spark_pipeline.py --minikafka 127.0.0.1:9092 /tmp/paid /tmp/checkpoints
"""

from __future__ import annotations

import argparse
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def kafka_format(spark: SparkSession, use_minikafka: bool) -> str:
    """The production/test switch: Spark's JVM connector, or minibroker's Python one."""
    if not use_minikafka:
        return "kafka"
    import minibroker.spark

    return minibroker.spark.register(spark)  # "minikafka"


def paid_orders(
    spark: SparkSession, fmt: str, bootstrap: str, source_topic: str, max_offsets: int
) -> DataFrame:
    orders = (
        spark.readStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source_topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets))
        .load()
    )
    order = F.from_json(F.col("value").cast("string"), "id STRING, status STRING, item STRING")
    return (
        orders.select(F.col("key"), order.alias("order"), "partition", "offset")
        .where(F.col("order.status") == "paid")
        .select(
            "key",
            F.col("order.id").alias("id"),
            F.upper(F.col("order.item")).alias("item"),
            "partition",
            "offset",
        )
    )


def start(
    spark: SparkSession,
    fmt: str,
    bootstrap: str,
    table_path: str,
    checkpoint_dir: str,
    source_topic: str = "orders",
    sink_topic: str = "paid-orders",
    available_now: bool = False,
    max_offsets_per_trigger: int = 10_000,
) -> list[Any]:
    """Start both sinks; with `available_now` they stop once everything present is read."""
    paid = paid_orders(spark, fmt, bootstrap, source_topic, max_offsets_per_trigger)
    trigger: dict[str, Any] = {"availableNow": True} if available_now else {"processingTime": "5s"}
    to_topic = (
        paid.select("key", F.to_json(F.struct("id", "item")).alias("value"))
        .writeStream.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink_topic)
        .option("checkpointLocation", f"{checkpoint_dir}/topic")
        .trigger(**trigger)
        .start()
    )
    to_table = (
        paid.writeStream.format("parquet")
        .option("path", table_path)
        .option("checkpointLocation", f"{checkpoint_dir}/table")
        .trigger(**trigger)
        .start()
    )
    return [to_topic, to_table]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("bootstrap")
    parser.add_argument("table_path")
    parser.add_argument("checkpoint_dir")
    parser.add_argument("--minikafka", action="store_true", help="use minibroker's data source")
    parser.add_argument("--available-now", action="store_true", help="read what is there, stop")
    args = parser.parse_args()
    spark = SparkSession.builder.appName("paid-orders").getOrCreate()
    fmt = kafka_format(spark, args.minikafka)
    for query in start(
        spark,
        fmt,
        args.bootstrap,
        args.table_path,
        args.checkpoint_dir,
        available_now=args.available_now,
    ):
        query.awaitTermination()


if __name__ == "__main__":
    main()
