"""Rows/s through the `minikafka` data source: a Spark batch write, then a batch read.

    .venv/bin/python benchmarks/spark_rows.py [--rows 200000] [--partitions 2]
        [--value-bytes 100] [--bootstrap HOST:PORT]

Without --bootstrap a minibroker runs in this process (in memory). A small warm-up write
and read come first, so the figures leave out Spark's and its Python workers' start-up.
`measure()` returns the figures for a benchmark runner.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic


def local_spark() -> Any:
    from pyspark.sql import SparkSession

    import minibroker.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("minikafka-rows")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    minibroker.spark.register(spark)
    return spark


def _write(spark: Any, bootstrap: str, topic: str, rows: int, partitions: int, size: int) -> float:
    frame = spark.range(rows, numPartitions=partitions).selectExpr(
        "CAST(id AS STRING) AS key",
        f"repeat('x', {size}) AS value",
        f"CAST(id % {partitions} AS INT) AS partition",
    )
    began = time.perf_counter()
    frame.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", topic
    ).mode("append").save()
    return time.perf_counter() - began


def _read(spark: Any, bootstrap: str, topic: str) -> float:
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    began = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def measure(
    spark: Any, bootstrap: str, rows: int, partitions: int = 2, value_bytes: int = 100
) -> dict[str, float]:
    """Write `rows` records to a new topic and read them back; rows/s of each."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    warm, topic = f"warm-{uuid.uuid4().hex[:8]}", f"rows-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(warm, partitions, 1), NewTopic(topic, partitions, 1)])
    admin.close()
    _write(spark, bootstrap, warm, 1000, partitions, value_bytes)
    _read(spark, bootstrap, warm)
    write_s = _write(spark, bootstrap, topic, rows, partitions, value_bytes)
    read_s = _read(spark, bootstrap, topic)
    return {
        "rows": rows,
        "write_seconds": write_s,
        "write_rows_per_s": rows / write_s,
        "read_seconds": read_s,
        "read_rows_per_s": rows / read_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--bootstrap", help="an existing broker; default: one in this process")
    args = parser.parse_args()
    spark = local_spark()
    if args.bootstrap:
        figures = measure(spark, args.bootstrap, args.rows, args.partitions, args.value_bytes)
    else:
        from minibroker.testing.threaded import ThreadedBroker

        with ThreadedBroker() as broker:
            figures = measure(
                spark, broker.bootstrap_servers, args.rows, args.partitions, args.value_bytes
            )
    spark.stop()
    print(
        f"minikafka {figures['rows']:,} rows of {args.value_bytes} B over {args.partitions} "
        f"partitions: write {figures['write_rows_per_s']:,.0f} rows/s "
        f"({figures['write_seconds']:.1f} s), read {figures['read_rows_per_s']:,.0f} rows/s "
        f"({figures['read_seconds']:.1f} s)"
    )


if __name__ == "__main__":
    main()
