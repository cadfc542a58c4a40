"""The streaming sink's `exactlyOnce=true`: one transaction per task and micro-batch, and a
re-run batch (its commit missing from the checkpoint) adds nothing for read_committed
readers, where the at-least-once sink writes the batch twice."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from kafka import KafkaProducer

from tests.spark.test_batch import read

pytestmark = pytest.mark.spark


def copy(
    spark: Any, bootstrap: str, source: str, sink: str, checkpoint: Path, **sink_options: str
) -> None:
    writer = (
        spark.readStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select("key", "value")
        .writeStream.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(checkpoint))
    )
    for name, value in sink_options.items():
        writer = writer.option(name, value)
    query = writer.trigger(availableNow=True).start()
    query.awaitTermination(180)
    assert query.exception() is None


def forget_last_commit(checkpoint: Path) -> None:
    """As if the driver died after the tasks wrote batch 0 but before recording it."""
    for name in ("0", ".0.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)


def values(spark: Any, bootstrap: str, topic: str, isolation: str) -> list[str]:
    frame = read(spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": isolation})
    return sorted(bytes(row.value).decode() for row in frame.collect())


def test_a_rerun_batch_is_written_once(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer, tmp_path: Path
) -> None:
    source, once, twice = new_topic(2), new_topic(2), new_topic(2)
    sent = [f"m{n}" for n in range(20)]
    for n, value in enumerate(sent):
        producer.send(source, key=f"k{n}".encode(), value=value.encode())
    producer.flush()
    prefix = f"eos-{uuid.uuid4().hex[:8]}"

    for _ in range(2):
        copy(
            spark,
            bootstrap,
            source,
            once,
            tmp_path / "once",
            exactlyOnce="true",
            transactionalIdPrefix=prefix,
        )
        copy(spark, bootstrap, source, twice, tmp_path / "twice")
        forget_last_commit(tmp_path / "once")
        forget_last_commit(tmp_path / "twice")

    assert values(spark, bootstrap, once, "read_committed") == sorted(sent)
    assert values(spark, bootstrap, twice, "read_committed") == sorted(sent * 2)


def test_exactly_once_needs_a_prefix_and_a_stream(spark: Any, bootstrap: str) -> None:
    frame = spark.createDataFrame([("a",)], "value STRING")
    with pytest.raises(Exception, match="transactionalIdPrefix"):
        frame.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", "x"
        ).option("exactlyOnce", "true").mode("append").save()
    with pytest.raises(Exception, match="for streaming writes"):
        frame.write.format("minikafka").option("kafka.bootstrap.servers", bootstrap).option(
            "topic", "x"
        ).option("exactlyOnce", "true").option("transactionalIdPrefix", "p").mode("append").save()


def test_an_earlier_attempt_is_fenced_and_its_records_aborted(
    spark: Any, bootstrap: str, new_topic: Any, producer: KafkaProducer, tmp_path: Path
) -> None:
    """An attempt of task 0 that died inside its transaction (here: a producer with the
    task's transactional id, left open) is fenced by the next attempt, its records aborted."""
    source, sink = new_topic(1), new_topic(1)
    for n in range(5):
        producer.send(source, key=b"k", value=f"m{n}".encode())
    producer.flush()
    prefix = f"eos-{uuid.uuid4().hex[:8]}"
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{prefix}-0"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(sink, value=b"from the dead attempt")
    zombie.flush(10)

    copy(
        spark,
        bootstrap,
        source,
        sink,
        tmp_path / "cp",
        exactlyOnce="true",
        transactionalIdPrefix=prefix,
    )

    written = [f"m{n}" for n in range(5)]
    assert values(spark, bootstrap, sink, "read_committed") == written
    assert values(spark, bootstrap, sink, "read_uncommitted") == sorted(
        [*written, "from the dead attempt"]
    )
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
