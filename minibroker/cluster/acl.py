"""Authorized operations as Kafka reports them when a client asks (Metadata, DescribeCluster,
DescribeGroups). minibroker has no authorizer, so every operation Kafka supports on a
resource type is authorized (`AclEntry.supportedOperations`); when the client does not ask,
the field stays null, which the codec writes as INT32_MIN, Kafka's "not requested"."""

from __future__ import annotations

from enum import IntEnum


class AclOperation(IntEnum):
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


TOPIC_OPERATIONS = frozenset(
    {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }
)
GROUP_OPERATIONS = frozenset({AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE})
CLUSTER_OPERATIONS = frozenset(
    {
        AclOperation.CREATE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
    }
)


def authorized_operations(requested: bool, supported: frozenset[AclOperation]) -> set[int] | None:
    """The operations to report: all supported ones when asked for, else None (INT32_MIN)."""
    return {int(operation) for operation in supported} if requested else None
