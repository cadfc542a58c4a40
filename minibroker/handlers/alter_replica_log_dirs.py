"""AlterReplicaLogDirs (key 34), versions 0-2 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: moves this node's copy of each named partition into the named log directory
(cluster/log_dirs.py), as Kafka's ReplicaManager does, but at once rather than through a
future replica that catches up: the log is flushed, its directory copied into the target
(`<topic>-<partition>.<id>-future`, synced, renamed into place) and the old one removed;
reads and writes then use the moved log, and the producer state is reloaded from it. Each
partition is answered: a path that is not one of the partition's log directories
LOG_DIR_NOT_FOUND; a partition this node holds no copy of (an unknown topic or partition
included, or an internal-topic partition never written) REPLICA_NOT_AVAILABLE; an offline log
KAFKA_STORAGE_ERROR; already there: nothing to do. Several log directories come from
`log.dirs` (comma-separated), as in Kafka.

Authorization: ALTER on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED.

Version notes: v1 is v0 (served by Kafka 4 from v1); v2 is the first flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.log_dirs import move_log
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.AlterReplicaLogDirs, "response", "AlterReplicaLogDirTopicResult")
_Partition = struct_type(
    ApiKey.AlterReplicaLogDirs,
    "response",
    "AlterReplicaLogDirTopicResult",
    "AlterReplicaLogDirPartitionResult",
)


def _moved(ctx: RequestContext, path: str, topic: str, index: int) -> ErrorCode:
    cluster = ctx.broker.cluster
    partition = cluster.partition(topic, index)
    if partition is None:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    before = partition.log
    try:
        error = move_log(cluster, ctx.broker.node_id, partition, path)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    if partition.log is not before:
        ctx.broker.producers.reload(partition)
    return error


@handles(ApiKey.AlterReplicaLogDirs, 0, 2)
async def handle_alter_replica_log_dirs(ctx: RequestContext, request: Any) -> Any:
    allowed = ctx.authorize_cluster(AclOperation.ALTER)
    results: dict[str, list[Any]] = {}
    for wanted_dir in request.dirs:
        for topic in wanted_dir.topics:
            for index in topic.partitions:
                error = (
                    _moved(ctx, wanted_dir.path, topic.name, index)
                    if allowed
                    else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                )
                results.setdefault(topic.name, []).append(
                    _Partition(partition_index=index, error_code=error)
                )
    return new_response(
        ApiKey.AlterReplicaLogDirs,
        ctx.api_version,
        throttle_time_ms=0,
        results=[_Topic(topic_name=name, partitions=parts) for name, parts in results.items()],
    )
