"""The `minikafka` data source in a batch job (docs/guides/pyspark.md): read a topic, write an
upper-cased copy to another. tests/docs/test_spark_examples.py runs it against minibroker."""


def kafka_format(spark, use_minikafka: bool) -> str:
    """The format name: Spark's own connector in production, minikafka in tests."""
    if not use_minikafka:
        return "kafka"  # Spark's connector: --packages ...:spark-sql-kafka-0-10_2.13:<version>
    import minibroker.spark

    return minibroker.spark.register(spark)  # "minikafka"


def copy_upper(spark, bootstrap: str = "127.0.0.1:9092") -> None:
    fmt = kafka_format(spark, use_minikafka=True)
    orders = (
        spark.read.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", "orders")
        .load()
    )
    (
        orders.selectExpr("key", "upper(CAST(value AS STRING)) AS value")
        .write.format(fmt)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", "out")
        .mode("append")  # always append: both connectors accept it
        .save()
    )
