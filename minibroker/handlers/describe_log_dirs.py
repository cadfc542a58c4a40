"""DescribeLogDirs (key 35), versions 1-5.

Behaviour: one log dir, the broker's data directory (absolute path), listing each
requested partition (null: every partition) with its size on disk; partitions that don't
exist are left out, as Kafka does. This node leads every partition, so the offset lag is
0, and there are no future (moving) replicas. A memory-backed broker reports a single
pseudo directory named "memory:" whose space is unknown (-1). It needs DESCRIBE on the
cluster, else the answer lists no log dir with CLUSTER_AUTHORIZATION_FAILED (v3+; before v3
only the empty list tells, as in Kafka).

Version notes: v3 adds the top-level error code; v4 adds the directory's total and usable
bytes; v5 adds `IsCordoned` (KIP-1066): minibroker's single log dir is never cordoned.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.DescribeLogDirs, "response", "DescribeLogDirsResult")
_Topic = struct_type(
    ApiKey.DescribeLogDirs, "response", "DescribeLogDirsResult", "DescribeLogDirsTopic"
)
_Partition = struct_type(
    ApiKey.DescribeLogDirs,
    "response",
    "DescribeLogDirsResult",
    "DescribeLogDirsTopic",
    "DescribeLogDirsPartition",
)
MEMORY_LOG_DIR = "memory:"
UNKNOWN_SPACE = -1


def _requested(ctx: RequestContext, request: Any) -> Iterator[Partition]:
    cluster = ctx.broker.cluster
    if request.topics is None:
        yield from cluster.partitions()
        return
    for topic in request.topics:
        for index in topic.partitions:
            partition = cluster.partition(topic.topic, index)
            if partition is not None:
                yield partition


def _topics(partitions: Iterator[Partition]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for partition in partitions:
        by_topic.setdefault(partition.topic, []).append(
            _Partition(
                partition_index=partition.index,
                partition_size=partition.log.size_bytes,
                offset_lag=0,
                is_future_key=False,
            )
        )
    return [_Topic(name=name, partitions=entries) for name, entries in by_topic.items()]


@handles(ApiKey.DescribeLogDirs, 1, 5)
async def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return new_response(
            ApiKey.DescribeLogDirs,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            results=[],
        )
    data_dir = ctx.broker.data_dir
    if data_dir is None:
        log_dir, total, usable = MEMORY_LOG_DIR, UNKNOWN_SPACE, UNKNOWN_SPACE
    else:
        usage = shutil.disk_usage(data_dir)
        log_dir, total, usable = str(data_dir.resolve()), usage.total, usage.free
    result = _Result(
        error_code=ErrorCode.NO_ERROR,
        log_dir=log_dir,
        topics=_topics(_requested(ctx, request)),
        total_bytes=total,
        usable_bytes=usable,
        is_cordoned=False,
    )
    return new_response(
        ApiKey.DescribeLogDirs,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        results=[result],
    )
