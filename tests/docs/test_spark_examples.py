"""The PySpark guide's batch example (examples/docs/spark_minikafka.py) on the Spark session of
tests/spark (same xdist worker, so one JVM serves both), against a broker of its own."""

from __future__ import annotations

from typing import Any

import pytest

from examples.docs.spark_minikafka import copy_upper, kafka_format
from minibroker.testing import KafkaBroker
from tests.spark.conftest import spark

__all__ = ["spark"]  # the session fixture of tests/spark

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def test_copy_upper(spark: Any) -> None:
    assert kafka_format(spark, use_minikafka=False) == "kafka"
    with KafkaBroker(storage="memory") as kafka:
        kafka.create_topic("orders")
        kafka.create_topic("out")
        kafka.produce("orders", b"tea", key=b"1")
        kafka.produce("orders", b"cake", key=b"2")
        copy_upper(spark, kafka.bootstrap_servers)
        assert sorted(kafka.values("out")) == [b"CAKE", b"TEA"]
        assert sorted(r.key for r in kafka.records("out")) == [b"1", b"2"]
