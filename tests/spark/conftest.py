"""One local Spark (`local[2]`) and one broker for every Spark test: a session takes
10-25 s to start on a 2-core machine, so the tests share it and use topics of their own."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from minibroker.server.faults import Faults
from minibroker.testing.threaded import ThreadedBroker
from tests.quick import require_external


@pytest.fixture(scope="session")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path_factory.mktemp("spark-broker")) as broker:
        yield broker


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_external("Spark (a JVM)")
    from pyspark.sql import SparkSession

    import minibroker.spark

    # Python workers must run this interpreter (the venv with pyarrow and minibroker).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("minibroker-spark-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    minibroker.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def bootstrap(spark_broker: ThreadedBroker) -> str:
    return spark_broker.bootstrap_servers


@pytest.fixture
def recorded(spark_broker: ThreadedBroker) -> Iterator[Faults]:
    """The shared broker's request recording, on for this test only."""
    assert spark_broker.broker is not None
    faults = spark_broker.broker.faults
    faults.clear_requests()
    faults.set_recording(True, 100_000)
    yield faults
    faults.set_recording(False, faults.max_recorded_requests)
    faults.clear_requests()


@pytest.fixture
def new_topic(bootstrap: str) -> Iterator[Any]:
    """`new_topic(partitions)` creates a topic with a unique name and returns the name."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def create(partitions: int = 1) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        admin.create_topics([NewTopic(name, partitions, 1)])
        return name

    yield create
    admin.close()


@pytest.fixture
def producer(bootstrap: str) -> Iterator[KafkaProducer]:
    sender = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=1)
    yield sender
    sender.close()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
