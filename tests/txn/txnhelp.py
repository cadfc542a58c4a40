"""Shared pieces of the transaction coordinator tests: broker settings, topics, records."""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Callable
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from tests.wire import WireClient

# Few internal partitions keep topic creation cheap; a short abort interval lets the timeout
# test see the broker abort within seconds.
TXN_SETTINGS = {
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
    "group.min.session.timeout.ms": "100",
}
_numbers = itertools.count()


def unique(prefix: str, client: str = "") -> str:
    return f"{prefix}-{client.replace('.', '_')}-{next(_numbers)}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def text(value: str | None) -> str | None:
    return None if value is None else base64.b64decode(value).decode()


def records(prefix: str, count: int, partition: int | None = 0) -> list[dict[str, Any]]:
    return [
        {"key": b64(f"k{i}"), "value": b64(f"{prefix}-{i}"), "headers": [], "partition": partition}
        for i in range(count)
    ]


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.CreateTopics,
            5,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [],
                }
            ],
            timeout_ms=5000,
            validate_only=False,
        )
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 30.0) -> Any:
    """Poll `condition` until it returns something truthy, failing after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def describe_txn(bootstrap: str, transactional_id: str) -> Any:
    with WireClient(bootstrap) as client:
        response = client.call(ApiKey.DescribeTransactions, 0, transactional_ids=[transactional_id])
    return response.transaction_states[0]
