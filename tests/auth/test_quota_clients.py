"""Client quotas with real producers: a `producer_byte_rate` of 1 MiB/s on a client id slows
a producer of 6 MiB to about that rate, and the client reports the broker's throttle time
(tests/clients/README.md, `throttle_time_ms_max`).

The pace is read from the records' LogAppendTime (the broker's clock when it appended each
one), so a client's start-up time does not count. Kafka never measures a rate over less than
quota.window.num - 1 windows (10 s with its defaults, enough for 10 MiB to pass unthrottled),
so the module broker keeps two windows of one second.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok

pytestmark = pytest.mark.clients

QUOTA_CLIENTS = ["java-4.3", "confluent-kafka", "kafka-python-3", "kafkajs"]
QUOTA_BYTES_PER_S = 1 << 20
RECORD_BYTES = 100 << 10
RECORDS = 60
CLIENT_ID_SETTING = {
    "java-4.3": "client.id",
    "confluent-kafka": "client.id",
    "kafka-python-3": "client_id",
    "kafkajs": "clientId",
}


@pytest.fixture(scope="module")
def quota_broker() -> Iterator[KafkaBroker]:
    config = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
    with KafkaBroker(config=config) as broker:
        yield broker


def produce_under_quota(broker: KafkaBroker, client: str) -> dict[str, Any]:
    """The client's own client id gets the quota and its own LogAppendTime topic; kafkajs
    puts a send's records in one batch (over max.message.bytes here), so every client sends
    one record at a time (produce_paced without pause)."""
    client_id = f"quota-{client.replace('.', '_')}"
    broker.create_topic(client_id, config={"message.timestamp.type": "LogAppendTime"})
    broker.set_quota(client_id=client_id, producer_byte_rate=QUOTA_BYTES_PER_S)
    value = base64.b64encode(b"q" * RECORD_BYTES).decode()
    job = {
        "op": "produce_paced",
        "bootstrap": broker.bootstrap_servers,
        "topic": client_id,
        "records": [{"key": None, "value": value, "partition": 0}] * RECORDS,
        "interval_ms": 0,
        "config": {CLIENT_ID_SETTING[client]: client_id},
        "timeout_ms": 60_000,
    }
    return run_ok(client, job)


@pytest.fixture(scope="module")
def quota_runs(quota_broker: KafkaBroker) -> Iterator[dict[str, Future[dict[str, Any]]]]:
    with ThreadPoolExecutor(max_workers=len(QUOTA_CLIENTS)) as pool:
        yield {
            client: pool.submit(produce_under_quota, quota_broker, client)
            for client in QUOTA_CLIENTS
        }


@pytest.mark.parametrize("client", QUOTA_CLIENTS)
def test_producer_is_throttled_to_its_quota(
    client: str, quota_runs: dict[str, Future[dict[str, Any]]]
) -> None:
    produced = quota_runs[client].result()
    assert [r["offset"] for r in produced["results"]] == list(range(RECORDS))
    appended = [r["timestamp"] for r in produced["results"]]
    span_s = (max(appended) - min(appended)) / 1000
    at_quota_s = RECORDS * RECORD_BYTES / QUOTA_BYTES_PER_S
    # A lower bound (the broker held the producer back), not a speed measurement: the first
    # window's worth may pass at once.
    assert span_s >= at_quota_s / 2, (span_s, at_quota_s)
    assert produced["throttle_time_ms_max"] > 0
