"""Wire helpers for the replication tests: produce to partition 0's leader, read a replica's
values, wait for a condition."""

from __future__ import annotations

import time
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.records.records import build_batch
from minibroker.testing import KafkaCluster
from tests.wire import WireClient


def produce(
    cluster: KafkaCluster, topic: str, values: list[bytes], acks: int = -1, timeout_ms: int = 5000
) -> Any:
    """One Produce v9 to partition 0's leader; its partition answer."""
    batch = build_batch([(None, value, (), int(time.time() * 1000)) for value in values])
    with WireClient(cluster.address(cluster.leader(topic, 0))) as client:
        response = client.call(
            ApiKey.Produce,
            9,
            acks=acks,
            timeout_ms=timeout_ms,
            topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        )
    return response.responses[0].partition_responses[0]


def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def values(cluster: KafkaCluster, node: int, topic: str) -> list[bytes | None]:
    """The values in partition 0 of `topic` on `node`'s replica."""
    return [record.value for record in cluster.replica_records(node, topic, 0)]
