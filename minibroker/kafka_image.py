"""The start-up log lines of a Kafka broker, for tools that wait for them.

Testcontainers' Kafka modules start the image through the Kafka images' own start scripts
(`/etc/kafka/docker/run`, `/etc/confluent/docker/run`) and then wait for a line of Kafka's
log: "Transitioning from RECOVERY to RUNNING" (Java's `KafkaContainer`, Go), "Kafka Server
started" (Python's KRaft mode) or "[KafkaServer id=N] started" (ZooKeeper mode: Python, .NET,
Java's older `KafkaContainer`). The image's copies of those scripts run `minibroker serve
--kafka-ready-log`, which prints, once the broker answers, the lines a Kafka broker configured
the same way prints at that point, in Kafka's log4j layout.

The mode follows the Kafka images' own variables: ZooKeeper mode when `KAFKA_ZOOKEEPER_CONNECT`
is set and `KAFKA_PROCESS_ROLES` is not, KRaft otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime


def is_zookeeper_mode(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("KAFKA_ZOOKEEPER_CONNECT")) and not environ.get("KAFKA_PROCESS_ROLES")


def kafka_ready_lines(node_id: int, environ: Mapping[str, str], now: datetime) -> list[str]:
    """What Kafka logs when broker `node_id` starts serving clients."""
    stamp = now.strftime("%Y-%m-%d %H:%M:%S,") + f"{now.microsecond // 1000:03d}"
    if is_zookeeper_mode(environ):
        messages = [f"[KafkaServer id={node_id}] started (kafka.server.KafkaServer)"]
    else:
        messages = [
            f"[BrokerLifecycleManager id={node_id}] The broker has been unfenced. "
            "Transitioning from RECOVERY to RUNNING. (kafka.server.BrokerLifecycleManager)",
            f"[KafkaRaftServer nodeId={node_id}] Kafka Server started "
            "(kafka.server.KafkaRaftServer)",
        ]
    return [f"[{stamp}] INFO {message}" for message in messages]
