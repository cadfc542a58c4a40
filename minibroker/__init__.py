"""minibroker: a Kafka-wire-compatible broker; `minibroker.KafkaBroker` & co. for tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from minibroker.testing.cluster import (
        AsyncKafkaBroker,
        AsyncKafkaCluster,
        KafkaBroker,
        KafkaCluster,
    )

__all__ = ["AsyncKafkaBroker", "AsyncKafkaCluster", "KafkaBroker", "KafkaCluster"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from minibroker.testing import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
