"""DescribeLogDirs (key 35), versions 0-5 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: every log directory of `log.dirs` (absolute paths), each listing the requested
single-replica partitions (null: every partition) it holds with their size on disk and
offset lag 0; partitions that don't exist are left out, as Kafka does. In a cluster, a node
holding replicas of replicated partitions also answers its own replica directories,
`<log dir>/nodes/<id>`, with each replica's size and offset lag (the high watermark minus its
log end offset, 0 at least, as Kafka). Moves (AlterReplicaLogDirs) are done at once, so
there are no future replicas. A memory-backed broker reports a single
pseudo directory named "memory:" whose space is unknown (-1). It needs DESCRIBE on the
cluster, else the answer lists no log dir with CLUSTER_AUTHORIZATION_FAILED (v3+; before v3
only the empty list tells, as in Kafka).

Version notes: v1 is v0 (served by Kafka 4 from v1); v3 adds the top-level error code; v4
adds the directory's total and usable bytes; v5 adds `IsCordoned` (KIP-1066): minibroker
never cordons a log dir.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.log_dirs import hosted_log_of, node_log_dirs
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.log.dirs import LogDirs
from minibroker.log.manager import LogManager
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


def _topics(entries: Iterator[tuple[Partition, int, int]]) -> list[Any]:
    """(partition, size, offset lag) entries grouped by topic."""
    by_topic: dict[str, list[Any]] = {}
    for partition, size, lag in entries:
        by_topic.setdefault(partition.topic, []).append(
            _Partition(
                partition_index=partition.index,
                partition_size=size,
                offset_lag=lag,
                is_future_key=False,
            )
        )
    return [_Topic(name=name, partitions=entries) for name, entries in by_topic.items()]


def _held_in(
    dirs: LogDirs, manager: LogManager, node_id: int, partitions: list[Partition]
) -> Iterator[tuple[Partition, int, int]]:
    """(partition, size, offset lag) of the node's copies of `partitions` kept in `manager`."""
    for partition in partitions:
        hosted = hosted_log_of(dirs, node_id, partition)
        if hosted is None or dirs.manager_of(partition.topic, partition.index) is not manager:
            continue
        lag = max(partition.high_watermark - hosted.log_end_offset, 0)
        yield partition, hosted.size_bytes, lag if partition.replication is not None else 0


def _log_dir(path: Path | None, memory_name: str, topics: list[Any]) -> Any:
    if path is None:
        log_dir, total, usable = memory_name, UNKNOWN_SPACE, UNKNOWN_SPACE
    else:
        usage = shutil.disk_usage(path)
        log_dir, total, usable = str(path.resolve()), usage.total, usage.free
    return _Result(
        error_code=ErrorCode.NO_ERROR,
        log_dir=log_dir,
        topics=topics,
        total_bytes=total,
        usable_bytes=usable,
        is_cordoned=False,
    )


@handles(ApiKey.DescribeLogDirs, 0, 5)
async def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return new_response(
            ApiKey.DescribeLogDirs,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            results=[],
        )
    cluster, node_id = ctx.broker.cluster, ctx.broker.node_id
    partitions = list(_requested(ctx, request))
    results = []
    for dirs in node_log_dirs(cluster, node_id):
        memory_name = MEMORY_LOG_DIR if dirs is cluster.logs else f"{MEMORY_LOG_DIR}nodes/{node_id}"
        for manager in dirs.managers:
            held = _topics(_held_in(dirs, manager, node_id, partitions))
            results.append(_log_dir(manager.data_dir, memory_name, held))
    return new_response(
        ApiKey.DescribeLogDirs,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        results=results,
    )
