"""`fetchOffset.numRetries` / `fetchOffset.retryIntervalMs`: the driver's offset lookups are
tried again, on a new client, while the broker is away (no Spark needed)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from minibroker.spark.offsets import OffsetReader
from minibroker.spark.options import parse_source_options
from minibroker.testing.threaded import ThreadedBroker


def reader(bootstrap: str, retries: int, interval_ms: int) -> OffsetReader:
    options = parse_source_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "kafka.bootstrap.timeout.ms": "1000",
            "kafka.reconnect.backoff.max.ms": "200",
            "assign": '{"r":[0]}',
            "fetchOffset.numRetries": str(retries),
            "fetchOffset.retryIntervalMs": str(interval_ms),
        },
        streaming=False,
    )
    return OffsetReader(options)


def test_offset_lookups_retry_until_the_broker_is_back(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics([NewTopic("r", 1, 1)])
        admin.close()
        broker.stop()

        once = reader(broker.bootstrap_servers, retries=1, interval_ms=10)
        with pytest.raises(Exception, match="Unable to bootstrap"):
            once.latest([("r", 0)])
        once.close()

        restart = threading.Timer(1.5, broker.start)
        restart.start()
        began = time.monotonic()
        patient = reader(broker.bootstrap_servers, retries=10, interval_ms=1000)
        try:
            assert patient.latest([("r", 0)]) == {("r", 0): 0}
        finally:
            patient.close()
            restart.join()
        assert time.monotonic() - began >= 1.5
