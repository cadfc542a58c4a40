"""Both executor clients (`pythonClient=confluent-kafka`, the default when installed, and the
kafka-python fallback): the same writes and reads give the same records, including the
sink's `timestamp` column, headers, `kafka.*` producer options and lost offsets."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition

from minibroker.protocol.api_keys import ApiKey
from minibroker.records.batch import ATTR_COMPRESSION_MASK, ATTRIBUTES_OFFSET
from minibroker.server.faults import Faults
from minibroker.testing.threaded import ThreadedBroker
from tests.spark.test_batch import read

pytestmark = pytest.mark.spark

CLIENTS = ["confluent-kafka", "kafka-python"]
STAMP = datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
STAMP_MS = 1_704_164_645_678
GZIP = 1


def write(frame: Any, bootstrap: str, topic: str, client: str, **options: str) -> None:
    writer = (
        frame.write.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("pythonClient", client)
    )
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.mode("append").save()


@pytest.mark.parametrize("client", CLIENTS)
def test_write_and_read_back(spark: Any, bootstrap: str, new_topic: Any, client: str) -> None:
    topic = new_topic(2)
    rows = [
        ("k0", "v0", 0, [("h", b"x"), ("e", b"")], STAMP),
        (None, "v1", 1, None, None),
        ("k2", None, 1, [], STAMP),
    ]
    schema = (
        "key STRING, value STRING, partition INT, "
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>, timestamp TIMESTAMP"
    )
    before_ms = int(datetime.now(UTC).timestamp()) * 1000
    write(spark.createDataFrame(rows, schema), bootstrap, topic, client)

    loaded = read(spark, bootstrap, subscribe=topic, includeHeaders="true", pythonClient=client)
    back = loaded.selectExpr("*", "unix_millis(timestamp) AS ms")
    got = {
        (bytes(r.key) if r.key is not None else None): r
        for r in back.orderBy("partition", "offset").collect()
    }
    assert set(got) == {b"k0", None, b"k2"}
    assert bytes(got[b"k0"].value) == b"v0" and got[b"k0"].partition == 0
    assert [(h.key, bytes(h.value)) for h in got[b"k0"].headers] == [("h", b"x"), ("e", b"")]
    assert got[b"k0"].ms == STAMP_MS and got[b"k0"].timestampType == 0
    assert got[b"k2"].value is None and got[b"k2"].headers is None
    assert got[b"k2"].ms == STAMP_MS
    assert got[None].ms >= before_ms
    assert [r.offset for r in back.where("partition = 1").orderBy("offset").collect()] == [0, 1]


@pytest.mark.parametrize("client", CLIENTS)
def test_kafka_producer_options_are_passed_through(
    spark: Any, bootstrap: str, new_topic: Any, client: str, recorded: Faults
) -> None:
    topic = new_topic(1)
    frame = spark.createDataFrame([(f"v{i}",) for i in range(20)], "value STRING")
    write(frame, bootstrap, topic, client, **{"kafka.compression.type": "gzip", "kafka.acks": "1"})
    produced = recorded.requests(ApiKey.Produce, topic=topic)
    assert produced and {request.body.acks for request in produced} == {1}
    batches = [
        data.records
        for request in produced
        for topic_data in request.body.topic_data
        for data in topic_data.partition_data
    ]
    assert {batch[ATTRIBUTES_OFFSET + 1] & ATTR_COMPRESSION_MASK for batch in batches} == {GZIP}
    values = sorted(
        bytes(r.value).decode() for r in read(spark, bootstrap, subscribe=topic).collect()
    )
    assert values == sorted(f"v{i}" for i in range(20))
    with pytest.raises(Exception, match="bogus"):
        write(frame, bootstrap, topic, client, **{"kafka.compression.type": "bogus"})


@pytest.mark.parametrize("client", CLIENTS)
def test_offsets_gone_before_the_task_fetches(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer, client: str
) -> None:
    """The range starts at 0 but DeleteRecords moved the log start to 6: an executor error
    with failOnDataLoss=true, the records from 6 on otherwise."""
    topic = new_topic(1)
    for n in range(10):
        producer.send(topic, value=f"m{n}".encode(), partition=0)
    producer.flush()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_records({TopicPartition(topic, 0): 6})
    admin.close()

    def offsets(fail_on_data_loss: str) -> list[int]:
        frame = read(
            spark,
            bootstrap,
            assign=f'{{"{topic}":[0]}}',
            startingOffsets=f'{{"{topic}":{{"0":0}}}}',
            failOnDataLoss=fail_on_data_loss,
            pythonClient=client,
        )
        return sorted(row.offset for row in frame.collect())

    with pytest.raises(Exception, match="Some data may have been lost"):
        offsets("true")
    assert offsets("false") == [6, 7, 8, 9]


@pytest.mark.parametrize("client", CLIENTS)
def test_poll_timeout_fails_a_task_that_gets_no_records(
    spark: Any,
    bootstrap: str,
    new_topic: Any,
    producer: KafkaProducer,
    spark_broker: ThreadedBroker,
    client: str,
) -> None:
    """`kafkaConsumer.pollTimeoutMs`: a task whose fetches get no answer fails after it."""
    topic = new_topic(1)
    for n in range(3):
        producer.send(topic, value=f"m{n}".encode(), partition=0)
    producer.flush()
    assert spark_broker.broker is not None
    hold = spark_broker.broker.faults.hold(ApiKey.Fetch, topic=topic)
    try:
        frame = read(
            spark,
            bootstrap,
            subscribe=topic,
            pythonClient=client,
            **{"kafkaConsumer.pollTimeoutMs": "1500"},
        )
        with pytest.raises(Exception, match=r"kafkaConsumer\.pollTimeoutMs=1500"):
            frame.collect()
    finally:
        hold.release()
    assert read(spark, bootstrap, subscribe=topic, pythonClient=client).count() == 3
