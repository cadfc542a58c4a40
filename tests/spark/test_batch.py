"""Batch reads and writes through `minikafka` with a local Spark against minibroker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kafka import KafkaProducer

pytestmark = pytest.mark.spark

BASE_MS = 1_700_000_000_000
PER_PARTITION = 10


def read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("minikafka").option("kafka.bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def positions(frame: Any) -> list[tuple[int, int]]:
    return sorted(
        (row.partition, row.offset) for row in frame.select("partition", "offset").collect()
    )


def expected(ranges: dict[int, range]) -> list[tuple[int, int]]:
    return sorted((partition, offset) for partition, span in ranges.items() for offset in span)


@pytest.fixture
def timed_topic(new_topic: Any, producer: KafkaProducer) -> str:
    """3 partitions x 10 records; record i of every partition has timestamp BASE_MS + i s."""
    topic = new_topic(3)
    for partition in range(3):
        for i in range(PER_PARTITION):
            producer.send(
                topic,
                value=f"p{partition}-{i}".encode(),
                partition=partition,
                timestamp_ms=BASE_MS + i * 1000,
            )
    producer.flush()
    return str(topic)


def test_schema_is_the_kafka_sources(spark: Any, bootstrap: str) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    kafka_schema = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("timestampType", IntegerType()),
        ]
    )
    headers = StructField(
        "headers",
        ArrayType(
            StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        ),
    )
    assert read(spark, bootstrap, subscribe="any").schema == kafka_schema
    with_headers = read(spark, bootstrap, subscribe="any", includeHeaders="true").schema
    assert with_headers == StructType([*kafka_schema.fields, headers])


def test_starting_and_ending_offsets_per_partition(
    spark: Any, bootstrap: str, timed_topic: str
) -> None:
    everything = read(spark, bootstrap, subscribe=timed_topic)
    assert positions(everything) == expected({p: range(10) for p in range(3)})
    frame = read(
        spark,
        bootstrap,
        assign=json.dumps({timed_topic: [0, 1, 2]}),
        startingOffsets=json.dumps({timed_topic: {"0": 2, "1": -2, "2": 5}}),
        endingOffsets=json.dumps({timed_topic: {"0": 7, "1": 3, "2": -1}}),
    )
    assert positions(frame) == expected({0: range(2, 7), 1: range(3), 2: range(5, 10)})
    values = {(r.partition, r.offset): r.value for r in frame.collect()}
    assert values[(2, 9)] == b"p2-9"


def test_timestamps_win_over_offsets(spark: Any, bootstrap: str, timed_topic: str) -> None:
    frame = read(
        spark,
        bootstrap,
        subscribePattern=timed_topic.replace("t-", "t-.?"),
        startingOffsets="earliest",
        startingTimestamp=str(BASE_MS + 3000),
        **{"kafka.isolation.level": "read_committed"},
        endingTimestamp=str(BASE_MS + 8000),
    )
    assert positions(frame) == expected({p: range(3, 8) for p in range(3)})
    assert {row.timestampType for row in frame.collect()} == {0}


def test_offsets_by_timestamp_per_partition(spark: Any, bootstrap: str, timed_topic: str) -> None:
    never = BASE_MS + 99_000
    frame = read(
        spark,
        bootstrap,
        subscribe=timed_topic,
        startingOffsetsByTimestamp=json.dumps(
            {timed_topic: {"0": BASE_MS, "1": BASE_MS + 9000, "2": never}}
        ),
        startingOffsetsByTimestampStrategy="latest",
        endingOffsetsByTimestamp=json.dumps(
            {timed_topic: {"0": BASE_MS + 2000, "1": never, "2": never}}
        ),
    )
    assert positions(frame) == expected({0: range(2), 1: range(9, 10)})
    no_match = read(
        spark,
        bootstrap,
        subscribe=timed_topic,
        startingOffsetsByTimestamp=json.dumps({timed_topic: {"0": never, "1": 0, "2": 0}}),
    )
    with pytest.raises(Exception, match="No offset matched"):
        no_match.collect()


def test_min_partitions_and_max_records_split_ranges(
    spark: Any, bootstrap: str, timed_topic: str
) -> None:
    frame = read(spark, bootstrap, subscribe=timed_topic, minPartitions="6")
    assert frame.rdd.getNumPartitions() == 6
    assert positions(frame) == expected({p: range(10) for p in range(3)})
    capped = read(spark, bootstrap, subscribe=timed_topic, maxRecordsPerPartition="4")
    assert capped.rdd.getNumPartitions() == 9
    assert positions(capped) == expected({p: range(10) for p in range(3)})


def test_write_then_read_back(spark: Any, bootstrap: str, new_topic: Any) -> None:
    topic = new_topic(3)
    rows = [
        ("k0", "v0", 0, [("h1", b"a")]),
        (None, "v1", 1, None),
        (None, "v2", 2, [("h1", b"b"), ("h2", b"")]),
        ("k3", None, 0, []),
        (None, None, 1, None),
        ("k5", "v5", None, None),
    ]
    schema = (
        "key STRING, value STRING, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    )
    (
        spark.createDataFrame(rows, schema)
        .write.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    by_column = spark.createDataFrame(
        [(topic, b"\x00\xff", 2)], "topic STRING, value BINARY, partition INT"
    )
    by_column.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).mode(
        "append"
    ).save()

    back = [
        record(r) for r in read(spark, bootstrap, subscribe=topic, includeHeaders="true").collect()
    ]
    keyed = [r for r in back if r[0] == b"k5"]
    assert [(value, headers) for _, value, _, headers in keyed] == [(b"v5", None)]
    want = [(raw(k), raw(v), p, h or None) for k, v, p, h in rows[:5]] + [
        (None, b"\x00\xff", 2, None)
    ]
    assert sorted((r for r in back if r[0] != b"k5"), key=repr) == sorted(want, key=repr)

    option_wins = new_topic(1)
    spark.createDataFrame([("elsewhere", "v6")], "topic STRING, value STRING").write.format(
        "minikafka"
    ).option("kafka.bootstrap.servers", bootstrap).option("topic", option_wins).mode(
        "append"
    ).save()
    assert [bytes(r.value) for r in read(spark, bootstrap, subscribe=option_wins).collect()] == [
        b"v6"
    ]


def raw(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


Record = tuple[bytes | None, bytes | None, int, list[tuple[str, bytes]] | None]


def record(row: Any) -> Record:
    """A row read back as comparable values (Spark returns binary columns as bytearray)."""

    def data(value: bytearray | None) -> bytes | None:
        return None if value is None else bytes(value)

    headers = [(h.key, bytes(h.value)) for h in row.headers] if row.headers is not None else None
    return (data(row.key), data(row.value), row.partition, headers)


def test_bad_queries_fail_as_the_connector_does(spark: Any, bootstrap: str, new_topic: Any) -> None:
    with pytest.raises(Exception, match="can't be latest for batch"):
        read(spark, bootstrap, subscribe="x", startingOffsets="latest").collect()
    with pytest.raises(Exception, match="Exactly one of the options"):
        read(spark, bootstrap, subscribe="x", assign='{"x":[0]}').collect()
    frame = spark.createDataFrame([("a",)], "payload STRING")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        frame.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", "x"
        ).mode("append").save()
    with pytest.raises(Exception, match="Save mode Overwrite not allowed"):
        frame.selectExpr("payload AS value").write.format("minikafka").option(
            "kafka.bootstrap.servers", bootstrap
        ).option("topic", "x").mode("overwrite").save()
