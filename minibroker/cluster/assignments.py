"""Replica assignments, manual ones checked as Kafka's controller does and others placed as
its striped placer does (cluster/replication.py)."""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence

from minibroker.cluster.replication import iter_assignment
from minibroker.cluster.state import TopicError
from minibroker.protocol.errors import ErrorCode

# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: one admin request may not make more
# metadata records than this; a larger one fails whole with POLICY_VIOLATION.
MAX_RECORDS_PER_USER_OP = 10_000
TOO_LARGE_OPERATION = "Unable to perform excessively large batch operation."


def assignment_error(message: str) -> TopicError:
    return TopicError(ErrorCode.INVALID_REPLICATION_ASSIGNMENT, message)


def check_manual_replicas(
    broker_ids: Sequence[int], registered: Collection[int], replication_factor: int | None
) -> None:
    """Kafka's `validateManualPartitionAssignment`: a non-empty list of registered brokers
    (the cluster's nodes), none twice, as many as the topic's other partitions have."""
    if not broker_ids:
        raise assignment_error("The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id not in registered:
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


def placed_replicas(
    usable: Collection[int], num_partitions: int, replication_factor: int
) -> list[list[int]]:
    """Replicas for new partitions over the usable (live, unfenced) nodes, from a random
    first node as Kafka's StripedReplicaPlacer; INVALID_REPLICATION_FACTOR when there are
    too few nodes (Kafka's message)."""
    if replication_factor > len(usable):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(usable)} broker(s) are registered.",
        )
    start = random.randrange(len(usable))
    return list(iter_assignment(sorted(usable), num_partitions, replication_factor, start))
