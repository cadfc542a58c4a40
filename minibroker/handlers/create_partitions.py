"""CreatePartitions (key 37), versions 0-3.

Behaviour: raises a topic's partition count, as Kafka's ReplicationControlManager does: a
topic named twice gets one INVALID_REQUEST entry, an unknown topic
UNKNOWN_TOPIC_OR_PARTITION, a count equal to or below the current one INVALID_PARTITIONS.
Manual assignments must give one replica list per new partition, each naming registered
nodes, none twice, with the topic's replication factor (INVALID_REPLICATION_ASSIGNMENT
otherwise); without them a replicated topic's new partitions are placed over the live nodes
(INVALID_REPLICATION_FACTOR when too few are live). `validate_only` runs every check
and adds nothing. More than 10000 new partitions in one request fail it whole with
POLICY_VIOLATION, as Kafka's controller does. The new partitions' logs are created at
once; the timeout is not used.

Authorization, as Kafka's ControllerApis: each topic named once needs ALTER, else
TOPIC_AUTHORIZATION_FAILED (no message, listed before the other answers) whether it exists or
not.

Version notes: v2 is the first flexible version; v3 adds nothing for a broker.

With a `controller_mutation_rate` quota (minibroker/auth/quotas.py), the partitions added count
against the client's token bucket: from v3 a topic is refused THROTTLING_QUOTA_EXCEEDED once
it is exhausted (strict, as Kafka), before v3 only the throttle time is answered.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.auth.quota_stats import MutationQuota
from minibroker.auth.throttle import (
    THROTTLING_QUOTA_EXCEEDED_MESSAGE,
    mutation_quota,
    mutation_throttle,
)
from minibroker.cluster.assignments import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_OPERATION,
    assignment_error,
    check_manual_replicas,
    placed_replicas,
)
from minibroker.cluster.state import Topic, TopicError
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.CreatePartitions, "response", "CreatePartitionsTopicResult")
STRICT_QUOTA_VERSION = 3  # THROTTLING_QUOTA_EXCEEDED per topic from v3; older: throttle only


def _check_count(topic: Topic, count: int) -> None:
    current = len(topic.partitions)
    if count == current:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if count < current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {topic.name} currently has {current} partition(s); {count} would not "
            "be an increase.",
        )


def _check_assignments(
    assignments: list[Any], additional: int, registered: set[int], replication_factor: int
) -> None:
    if len(assignments) != additional:
        raise assignment_error(
            f"Attempted to add {additional} additional partition(s), but only "
            f"{len(assignments)} assignment(s) were specified."
        )
    for assignment in assignments:
        check_manual_replicas(assignment.broker_ids, registered, replication_factor)


def _result(name: str, error: ErrorCode, message: str | None) -> Any:
    return _Result(name=name, error_code=error, error_message=message)


def _check(ctx: RequestContext, wanted: Any, quota: MutationQuota | None) -> list[list[int]] | None:
    """The new partitions' replicas of a replicated topic (None for others); TopicError when
    Kafka would refuse to grow the topic this way."""
    topic = ctx.broker.cluster.topics.get(wanted.name)
    if topic is None:
        raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
    _check_count(topic, wanted.count)
    additional = int(wanted.count) - len(topic.partitions)
    replication_factor = topic.replication_factor
    replicas = None
    if wanted.assignments is not None:
        registered = set(ctx.broker.nodes.brokers)
        _check_assignments(wanted.assignments, additional, registered, replication_factor)
        replicas = [list(assignment.broker_ids) for assignment in wanted.assignments]
    elif replication_factor > 1:
        replicas = placed_replicas(ctx.broker.nodes.reachable(), additional, replication_factor)
    if quota is not None and not quota.record(additional):
        raise TopicError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLING_QUOTA_EXCEEDED_MESSAGE)
    return replicas


def _checked(
    ctx: RequestContext, topics: list[Any], quota: MutationQuota | None
) -> tuple[list[tuple[Any, list[list[int]] | None]], list[Any]]:
    """(topics to grow with their new replicas, results of the refused ones)."""
    accepted, refused = [], []
    for wanted in topics:
        try:
            replicas = _check(ctx, wanted, quota)
        except TopicError as exc:
            refused.append(_result(wanted.name, exc.error_code, exc.message or None))
        else:
            accepted.append((wanted, replicas))
    return accepted, refused


@handles(ApiKey.CreatePartitions, 0, 3)
async def handle_create_partitions(ctx: RequestContext, request: Any) -> Any:
    counts = Counter(topic.name for topic in request.topics)
    unique = [topic for topic in request.topics if counts[topic.name] == 1]
    allowed = ctx.authorized_names(
        AclOperation.ALTER, ResourceType.TOPIC, (topic.name for topic in unique)
    )
    denied = [
        _result(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        for topic in unique
        if topic.name not in allowed
    ]
    quota = mutation_quota(ctx, STRICT_QUOTA_VERSION)
    accepted, refused = _checked(ctx, [topic for topic in unique if topic.name in allowed], quota)
    results = denied + refused
    cluster = ctx.broker.cluster
    added = sum(
        wanted.count - len(cluster.topics[wanted.name].partitions) for wanted, _ in accepted
    )
    if added > MAX_RECORDS_PER_USER_OP:
        results = [
            _result(topic.name, ErrorCode.POLICY_VIOLATION, TOO_LARGE_OPERATION)
            for topic in request.topics
        ]
    else:
        for wanted, replicas in accepted:
            if not request.validate_only:
                cluster.add_partitions(wanted.name, wanted.count, replicas)
            results.append(_result(wanted.name, ErrorCode.NO_ERROR, None))
        for name in dict.fromkeys(name for name, count in counts.items() if count > 1):
            results.append(_result(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    throttle = mutation_throttle(ctx, quota)
    return new_response(
        ApiKey.CreatePartitions, ctx.api_version, throttle_time_ms=throttle, results=results
    )
