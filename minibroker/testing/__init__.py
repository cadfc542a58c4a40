"""Kafka brokers and clusters in-process, for tests (docs/guides/testing.md, "Testing with pytest").

```python
from minibroker.testing import KafkaBroker

with KafkaBroker() as kafka:
    kafka.create_topic("orders", partitions=3)
    ...  # any Kafka client, bootstrap_servers=kafka.bootstrap_servers
```

Names are imported lazily so that the pytest plugin (loaded by every pytest run once
minibroker is installed) costs nothing until a fixture is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.protocol.api_keys import ApiKey
    from minibroker.protocol.errors import ErrorCode
    from minibroker.records.validate import InvalidRecords
    from minibroker.server.faults import CLOSE, Call, Hold, RecordedRequest
    from minibroker.telemetry.manager import PushedMetric
    from minibroker.testing.cluster import (
        AUTHORIZER_CONFIG,
        AsyncKafkaBroker,
        AsyncKafkaCluster,
        KafkaBroker,
        KafkaCluster,
        NodeError,
        StoredRecord,
    )
    from minibroker.testing.security import DEFAULT, secured_config

_EXPORTS = {
    "ApiKey": "minibroker.protocol.api_keys",
    "ErrorCode": "minibroker.protocol.errors",
    "InvalidRecords": "minibroker.records.validate",
    "CLOSE": "minibroker.server.faults",
    "Call": "minibroker.server.faults",
    "Hold": "minibroker.server.faults",
    "RecordedRequest": "minibroker.server.faults",
    "AUTHORIZER_CONFIG": "minibroker.testing.security",
    "DEFAULT": "minibroker.testing.security",
    "secured_config": "minibroker.testing.security",
    "AsyncKafkaBroker": "minibroker.testing.cluster",
    "AsyncKafkaCluster": "minibroker.testing.cluster",
    "KafkaBroker": "minibroker.testing.cluster",
    "KafkaCluster": "minibroker.testing.cluster",
    "NodeError": "minibroker.testing.cluster",
    "PushedMetric": "minibroker.telemetry.manager",
    "StoredRecord": "minibroker.testing.cluster",
}

__all__ = [
    "AUTHORIZER_CONFIG",
    "CLOSE",
    "DEFAULT",
    "ApiKey",
    "AsyncKafkaBroker",
    "AsyncKafkaCluster",
    "Call",
    "ErrorCode",
    "Hold",
    "InvalidRecords",
    "KafkaBroker",
    "KafkaCluster",
    "NodeError",
    "PushedMetric",
    "RecordedRequest",
    "StoredRecord",
    "secured_config",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
