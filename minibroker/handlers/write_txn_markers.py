"""WriteTxnMarkers (key 27), versions 0-2 (Kafka 4.3 serves 1-2; the emulated release gates).

Behaviour: as Kafka's `KafkaApis.handleWriteTxnMarkersRequest` in a partition leader. Each
marker's COMMIT (or ABORT) control batch is appended to every partition it names, with the
marker's producer id and epoch and coordinator epoch (`txn/markers.py`: the producer's
transaction on the partition ends, the last stable offset moves, an abort is indexed). Admin
tools send it directly to abort a hanging transaction (`Admin.abortTransaction`,
`kafka-transactions.sh abort`); Kafka's own transaction coordinator sends it to the partition
leaders (minibroker's coordinator writes its markers in process, through the same function).

Per-partition errors, as Kafka answers them: UNKNOWN_TOPIC_OR_PARTITION (no such partition),
NOT_LEADER_OR_FOLLOWER (an in-process cluster's partition led elsewhere), NOT_ENOUGH_REPLICAS
(the append is acks=all: the ISR is below min.insync.replicas), INVALID_PRODUCER_EPOCH (the
producer has written with a newer epoch), TRANSACTION_COORDINATOR_FENCED (a marker of a newer
coordinator epoch is in the log), KAFKA_STORAGE_ERROR. The marker is answered once the ISR has
it, or NOT_ENOUGH_REPLICAS / REQUEST_TIMED_OUT as an acks=all produce is. A marker written to
a `__consumer_offsets` partition completes the producer's transactional offset commits there
(a commit makes them the group's offsets). Results are grouped by producer id, as Kafka's
response map groups them.

Authorization: ALTER on the cluster (what KIP-664 asks of admin clients), else CLUSTER_ACTION
(what brokers have); without either every partition gets CLUSTER_AUTHORIZATION_FAILED.

Version notes: v0 was removed in Kafka 4.0; v1 is flexible; v2 (KIP-1228, Kafka 4.2) adds each
marker's TransactionVersion: from 2, the marker's epoch must be newer than the producer's last
epoch on the partition (transactions V2 bump the epoch at each transaction's end), before that
it may equal it. v0-1 markers count as transaction version 0.
"""

from __future__ import annotations

import asyncio
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.state import Partition
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.coordinator import OFFSETS_TOPIC
from minibroker.txn.markers import write_end_txn_marker

_Marker = struct_type(ApiKey.WriteTxnMarkers, "response", "WritableTxnMarkerResult")
_Topic = struct_type(
    ApiKey.WriteTxnMarkers, "response", "WritableTxnMarkerResult", "WritableTxnMarkerTopicResult"
)
_Partition = struct_type(
    ApiKey.WriteTxnMarkers,
    "response",
    "WritableTxnMarkerResult",
    "WritableTxnMarkerTopicResult",
    "WritableTxnMarkerPartitionResult",
)
APPEND_TIMEOUT_S = 30.0  # Kafka waits for the ISR up to its request.timeout.ms (30 s default)

TopicPartition = tuple[str, int]
# producer id -> (topic, partition) -> error, in the order the request names them
MarkerErrors = dict[int, dict[TopicPartition, ErrorCode]]


def _partitions(marker: Any) -> list[TopicPartition]:
    return [(topic.name, index) for topic in marker.topics for index in topic.partition_indexes]


def _authorized(ctx: RequestContext) -> bool:
    return ctx.authorize_cluster(AclOperation.ALTER) or ctx.authorize_cluster(
        AclOperation.CLUSTER_ACTION
    )


def _transaction_version(ctx: RequestContext, marker: Any) -> int:
    return int(marker.transaction_version) if ctx.api_version >= 2 else 0


def _write(
    ctx: RequestContext, marker: Any, topic: str, index: int
) -> tuple[ErrorCode, Partition | None]:
    """The marker's outcome on one partition, and the partition if its ISR is to be waited for."""
    cluster = ctx.broker.cluster
    partition = cluster.partition(topic, index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if (not_leader := ctx.leader_error(partition)) is not None:
        return not_leader, None
    if cluster.not_enough_replicas(partition) is not None:
        return ErrorCode.NOT_ENOUGH_REPLICAS, None
    if topic == OFFSETS_TOPIC:  # the pending offsets the marker ends, loaded first
        ctx.broker.groups.load_offsets_partition(index)
    error = write_end_txn_marker(
        ctx.broker,
        topic,
        index,
        marker.producer_id,
        marker.producer_epoch,
        marker.coordinator_epoch,
        marker.transaction_result,
        transaction_version=_transaction_version(ctx, marker),
    )
    if error != ErrorCode.NO_ERROR:
        return error, None
    if topic == OFFSETS_TOPIC:
        ctx.broker.groups.complete_txn_offsets(index, marker.producer_id, marker.transaction_result)
    return ErrorCode.NO_ERROR, partition if partition.replication is not None else None


async def _replicated(
    ctx: RequestContext, errors: MarkerErrors, written: dict[TopicPartition, Partition]
) -> None:
    """acks=all: each marker is answered once the ISR has it (Kafka's DelayedProduce)."""
    ends = {key: partition.log.log_end_offset for key, partition in written.items()}
    await asyncio.gather(
        *(
            partition.replication.wait_for_high_watermark(ends[key], APPEND_TIMEOUT_S)
            for key, partition in written.items()
            if partition.replication is not None
        )
    )
    cluster = ctx.broker.cluster
    outcomes = {
        key: cluster.acks_all_outcome(partition, ends[key], ctx.broker.node_id)
        for key, partition in written.items()
    }
    for partition_errors in errors.values():
        for key, error in partition_errors.items():
            if error == ErrorCode.NO_ERROR and key in outcomes:
                partition_errors[key] = outcomes[key]


def _response(ctx: RequestContext, errors: MarkerErrors) -> Any:
    markers = []
    for producer_id, partition_errors in errors.items():
        topics: dict[str, list[Any]] = {}
        for (topic, index), error in partition_errors.items():
            topics.setdefault(topic, []).append(_Partition(partition_index=index, error_code=error))
        markers.append(
            _Marker(
                producer_id=producer_id,
                topics=[_Topic(name=name, partitions=parts) for name, parts in topics.items()],
            )
        )
    return new_response(ApiKey.WriteTxnMarkers, ctx.api_version, markers=markers)


@handles(ApiKey.WriteTxnMarkers, 0, 2)
async def handle_write_txn_markers(ctx: RequestContext, request: Any) -> Any:
    errors: MarkerErrors = {}
    if not _authorized(ctx):
        for marker in request.markers:
            denied = errors.setdefault(marker.producer_id, {})
            denied.update(
                dict.fromkeys(_partitions(marker), ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            )
        return _response(ctx, errors)
    written: dict[TopicPartition, Partition] = {}
    for marker in request.markers:
        partition_errors = errors.setdefault(marker.producer_id, {})
        for topic, index in _partitions(marker):
            error, replicated = _write(ctx, marker, topic, index)
            partition_errors[(topic, index)] = error
            if replicated is not None:
                written[(topic, index)] = replicated
    if written:
        await _replicated(ctx, errors, written)
    return _response(ctx, errors)
