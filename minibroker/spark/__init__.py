"""PySpark data source for Kafka topics: `minibroker.spark.register(spark)`, then
`spark.read.format("minikafka")` / `df.write.format("minikafka")` (and their streaming
forms) with the schema and options of Spark's own Kafka connector.

Needs the `minibroker[spark]` extra (pyspark, pyarrow, pandas, confluent-kafka).
"""

from __future__ import annotations

from typing import Any

FORMAT = "minikafka"


def register(spark: Any) -> str:
    """Register the data source with a SparkSession; returns its format name."""
    from minibroker.spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
    return FORMAT
