"""Rows/s through the `minikafka` data source: a Spark batch write, then a batch read;
side by side with Spark's JVM Kafka connector when its jars are given.

    .venv/bin/python benchmarks/spark_rows.py [--rows 200000] [--partitions 2]
        [--value-bytes 100] [--bootstrap HOST:PORT] [--jvm-jars DIR]
        [--python-client auto|confluent-kafka|kafka-python]

Without --bootstrap a minibroker runs in this process (in memory). --jvm-jars names a
directory holding spark-sql-kafka-0-10_2.13 and its dependencies (kafka-clients,
spark-token-provider-kafka-0-10, commons-pool2), e.g. from
`mvn dependency:copy-dependencies` or Spark's `--packages` Ivy cache: they are not on PyPI.
Without it `minikafka` is measured alone. Both connectors write and read the same number of
rows of the same size through the same broker and Spark session. A small warm-up write and
read come first, so the figures leave out Spark's and its Python workers' start-up.
`measure()` returns the figures for a benchmark runner.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic


def local_spark(jvm_jars: Path | None = None) -> Any:
    from pyspark.sql import SparkSession

    import minibroker.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    if jvm_jars is not None:
        jars = sorted(str(jar) for jar in jvm_jars.glob("*.jar"))
        if not jars:
            raise SystemExit(f"--jvm-jars: no .jar files in {jvm_jars}")
        builder = builder.config("spark.jars", ",".join(jars))
    spark = (
        builder.master("local[2]")
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


def _options(connector: str, bootstrap: str, python_client: str) -> dict[str, str]:
    options = {"kafka.bootstrap.servers": bootstrap}
    if connector == "minikafka":
        options["pythonClient"] = python_client
    return options


def _write(
    spark: Any, connector: str, options: dict[str, str], topic: str, shape: tuple[int, int, int]
) -> float:
    rows, partitions, size = shape
    frame = spark.range(rows, numPartitions=partitions).selectExpr(
        "CAST(id AS STRING) AS key",
        f"repeat('x', {size}) AS value",
        f"CAST(id % {partitions} AS INT) AS partition",
    )
    began = time.perf_counter()
    frame.write.format(connector).options(**options).option("topic", topic).mode("append").save()
    return time.perf_counter() - began


def _read(spark: Any, connector: str, options: dict[str, str], topic: str) -> float:
    frame = spark.read.format(connector).options(**options).option("subscribe", topic).load()
    began = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def measure(
    spark: Any,
    bootstrap: str,
    rows: int,
    partitions: int = 2,
    value_bytes: int = 100,
    connector: str = "minikafka",
    python_client: str = "auto",
) -> dict[str, float]:
    """Write `rows` records to a new topic through `connector` (`minikafka` or Spark's JVM
    `kafka`) and read them back; rows/s of each."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    warm, topic = f"warm-{uuid.uuid4().hex[:8]}", f"rows-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(warm, partitions, 1), NewTopic(topic, partitions, 1)])
    admin.close()
    options = _options(connector, bootstrap, python_client)
    _write(spark, connector, options, warm, (1000, partitions, value_bytes))
    _read(spark, connector, options, warm)
    write_s = _write(spark, connector, options, topic, (rows, partitions, value_bytes))
    read_s = _read(spark, connector, options, topic)
    return {
        "rows": rows,
        "write_seconds": write_s,
        "write_rows_per_s": rows / write_s,
        "read_seconds": read_s,
        "read_rows_per_s": rows / read_s,
    }


def compare(
    spark: Any, bootstrap: str, args: argparse.Namespace
) -> list[tuple[str, dict[str, float]]]:
    connectors = ["minikafka"] + (["kafka"] if args.jvm_jars else [])
    return [
        (
            name,
            measure(
                spark,
                bootstrap,
                args.rows,
                args.partitions,
                args.value_bytes,
                name,
                args.python_client,
            ),
        )
        for name in connectors
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--bootstrap", help="an existing broker; default: one in this process")
    parser.add_argument("--jvm-jars", type=Path, help="Spark's Kafka connector jars, to compare")
    parser.add_argument(
        "--python-client", default="auto", choices=["auto", "confluent-kafka", "kafka-python"]
    )
    args = parser.parse_args()
    spark = local_spark(args.jvm_jars)
    if args.bootstrap:
        results = compare(spark, args.bootstrap, args)
    else:
        from minibroker.testing.threaded import ThreadedBroker

        with ThreadedBroker() as broker:
            results = compare(spark, broker.bootstrap_servers, args)
    spark.stop()
    for name, figures in results:
        label = f"{name} ({args.python_client})" if name == "minikafka" else f"{name} (JVM)"
        print(
            f"{label} {figures['rows']:,} rows of {args.value_bytes} B over {args.partitions} "
            f"partitions: write {figures['write_rows_per_s']:,.0f} rows/s "
            f"({figures['write_seconds']:.1f} s), read {figures['read_rows_per_s']:,.0f} rows/s "
            f"({figures['read_seconds']:.1f} s)"
        )
    if len(results) == 2:
        (_, mini), (_, jvm) = results
        print(
            f"minikafka / JVM: write {mini['write_rows_per_s'] / jvm['write_rows_per_s']:.2f}x, "
            f"read {mini['read_rows_per_s'] / jvm['read_rows_per_s']:.2f}x"
        )


if __name__ == "__main__":
    main()
