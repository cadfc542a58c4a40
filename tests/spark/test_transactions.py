"""kafka.isolation.level=read_committed: aborted transactions are skipped and reading stops
at the last stable offset; the transactions come from confluent-kafka's producer."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.spark


@pytest.fixture
def transactional(bootstrap: str) -> Iterator[Producer]:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"spark-{uuid.uuid4().hex[:8]}"}
    )
    producer.init_transactions(30)
    yield producer
    producer.flush(10)


def transaction(producer: Producer, topic: str, values: list[str], commit: bool) -> None:
    producer.begin_transaction()
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    producer.flush(10)  # written before the abort, which would otherwise purge them unsent
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)


def values(spark: Any, bootstrap: str, topic: str, isolation: str, client: str) -> list[str]:
    frame = (
        spark.read.format("minikafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("kafka.isolation.level", isolation)
        .option("pythonClient", client)
        .load()
    )
    return [bytes(row.value).decode() for row in frame.orderBy("offset").collect()]


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_read_committed_skips_aborted_and_stops_at_the_stable_offset(
    spark: Any, bootstrap: str, new_topic: Any, transactional: Producer, client: str
) -> None:
    topic = new_topic(1)
    committed = [f"c{i}" for i in range(10)]
    aborted = [f"a{i}" for i in range(5)]
    transaction(transactional, topic, committed[:5], commit=True)
    transaction(transactional, topic, aborted, commit=False)
    transaction(transactional, topic, committed[5:], commit=True)
    transactional.begin_transaction()
    transactional.produce(topic, value=b"open", partition=0)
    transactional.flush(10)

    assert values(spark, bootstrap, topic, "read_committed", client) == committed
    everything = committed[:5] + aborted + committed[5:] + ["open"]
    assert values(spark, bootstrap, topic, "read_uncommitted", client) == everything

    transactional.commit_transaction(30)
    assert values(spark, bootstrap, topic, "read_committed", client) == [*committed, "open"]
