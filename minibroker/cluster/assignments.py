"""Manual replica assignments on a cluster of one node, checked as Kafka's controller does."""

from __future__ import annotations

from collections.abc import Sequence

from minibroker.cluster.state import TopicError
from minibroker.protocol.errors import ErrorCode

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: one admin request may not make more
# metadata records than this; a larger one fails whole with POLICY_VIOLATION.
MAX_RECORDS_PER_USER_OP = 10_000
TOO_LARGE_OPERATION = "Unable to perform excessively large batch operation."


def assignment_error(message: str) -> TopicError:
    return TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, message)


def check_manual_replicas(
    broker_ids: Sequence[int], node_id: int, replication_factor: int | None
) -> None:
    """Kafka's `validateManualPartitionAssignment`: a non-empty list of registered brokers
    (only this node is), none twice, as many as the topic's other partitions have."""
    if not broker_ids:
        raise assignment_error("The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id != node_id:
            raise assignment_error(
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered."
            )
        if broker_id == previous:
            raise assignment_error(
                f"The manual partition assignment includes the broker {broker_id} more than once."
            )
        previous = broker_id
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise assignment_error(
            f"The manual partition assignment includes a partition with {len(broker_ids)} "
            "replica(s), but this is not consistent with previous partitions, which have "
            f"{replication_factor} replica(s)."
        )
