"""Topic config values Kafka refuses, refused the same way through CreateTopics."""

from __future__ import annotations

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.wire import WireClient


def _create(address: str, name: str, policy: str) -> tuple[int, str | None]:
    with WireClient(address) as client:
        response = client.call(
            ApiKey.CreateTopics,
            7,
            topics=[
                {
                    "name": name,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "cleanup.policy", "value": policy}],
                }
            ],
            timeout_ms=5000,
        )
    topic = response.topics[0]
    return topic.error_code, topic.error_message


def test_cleanup_policy_takes_compact_and_delete_only() -> None:
    with KafkaBroker(storage="memory") as broker:
        address = broker.bootstrap_servers
        assert _create(address, "both", "compact,delete") == (ErrorCode.NO_ERROR, None)
        assert _create(address, "never", "never") == (
            ErrorCode.INVALID_CONFIG,
            "Invalid value never for configuration cleanup.policy: String must be one of: "
            "compact, delete",
        )
        assert "never" not in broker.topics()
