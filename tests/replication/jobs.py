"""Job builders and record checks shared by the real-client replication tests (the job protocol
is in tests/clients/README.md)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from minibroker.testing import KafkaCluster, StoredRecord

# Java 4.3 (tests/clients Java harness), librdkafka through confluent-kafka, kafka-python 3.
CLIENTS = ["java-4.3", "confluent-kafka", "kafka-python-3"]
JOB_TIMEOUT_MS = 60_000
# Short enough for the matrix of clients, long enough for a follower to be seen lagging.
LAG_TIME_MAX_MS = 1000
CLUSTER_CONFIG = {"replica.lag.time.max.ms": LAG_TIME_MAX_MS}


def topic_name(scenario: str, client: str) -> str:
    return f"{scenario}-{client.replace('.', '_')}"


def numbered(prefix: str, count: int, start: int = 0) -> list[bytes]:
    return [f"{prefix}-{n}".encode() for n in range(start, start + count)]


def produce_job(bootstrap: str, topic: str, values: list[bytes], **fields: Any) -> dict[str, Any]:
    """Every value to partition 0, acks=all unless `fields` say otherwise."""
    records: list[dict[str, Any]] = [
        {"key": None, "value": base64.b64encode(v).decode(), "headers": [], "partition": 0}
        for v in values
    ]
    job = {"acks": "all", "timeout_ms": JOB_TIMEOUT_MS, **fields}
    return {"op": "produce", "bootstrap": bootstrap, "topic": topic, "records": records, **job}


def consume_job(bootstrap: str, topic: str, count: int, **fields: Any) -> dict[str, Any]:
    return {
        "op": "consume",
        "bootstrap": bootstrap,
        "topic": topic,
        "partitions": [0],
        "count": count,
        "from": "earliest",
        "group": None,
        "timeout_ms": JOB_TIMEOUT_MS,
        **fields,
    }


def consumed_values(result: dict[str, Any]) -> list[bytes]:
    return [base64.b64decode(r["value"]) for r in result["records"]]


def replica_values(cluster: KafkaCluster, node: int, topic: str) -> list[bytes | None]:
    return [record.value for record in cluster.replica_records(node, topic, 0)]


def offsets_and_values(records: list[StoredRecord]) -> list[tuple[int, bytes | None]]:
    return [(record.offset, record.value) for record in records]


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    """Poll `condition`; TimeoutError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.05)
