"""Appending a record outside the wire protocol (the testing API, the web console).

One record is built into a batch, validated as a Produce would be (`InvalidRecords` with
Kafka's error code and message otherwise: MESSAGE_TOO_LARGE, INVALID_RECORD for a keyless
record on a compacted topic, ...) and appended to the partition's leader log; waiting
fetches are woken. An unknown partition is a TopicError (UNKNOWN_TOPIC_OR_PARTITION).
"""

from __future__ import annotations

import time

from minibroker.cluster.state import Cluster, Partition, TopicError
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import Header, build_batch
from minibroker.records.validate import validate_produce_records


def existing_partition(cluster: Cluster, topic: str, index: int) -> Partition:
    partition = cluster.partition(topic, index)
    if partition is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{index}")
    return partition


def append_record(
    cluster: Cluster,
    topic: str,
    index: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[Header],
    timestamp_ms: int | None = None,
) -> int:
    """Append one record (timestamp: now unless given); returns its offset."""
    partition = existing_partition(cluster, topic, index)
    now_ms = time.time_ns() // 1_000_000
    batch = build_batch([(key, value, headers, now_ms if timestamp_ms is None else timestamp_ms)])
    validated = validate_produce_records(
        batch, cluster.validation_config(cluster.topics[topic]), now_ms
    )
    offset = -1
    for ready in validated:
        offset = partition.log.append(ready.data, partition.leader_epoch, now_ms)
    partition.notify_appended()
    return offset
