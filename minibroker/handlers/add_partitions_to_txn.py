"""AddPartitionsToTxn (key 24), versions 0-3.

Behaviour (Kafka's `handleAddPartitionsToTxnRequest`): if any partition is unknown, those get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, and nothing is added.
Otherwise the transaction coordinator adds them to the producer's transaction (starting it:
Empty/Complete* -> Ongoing) and every partition gets its answer: INVALID_PRODUCER_ID_MAPPING
for an unknown transactional id or producer id, PRODUCER_FENCED for another epoch,
CONCURRENT_TRANSACTIONS while the previous transaction is being ended.

Version notes: v0-3 are the client versions (one transaction per request); v4+ batch
transactions and are broker-to-broker only (KIP-890), not served. PRODUCER_FENCED exists from
v2; older versions get INVALID_PRODUCER_EPOCH. v3 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.coordinator import error_for_version

_Topic = struct_type(ApiKey.AddPartitionsToTxn, "response", "AddPartitionsToTxnTopicResult")
_Partition = struct_type(
    ApiKey.AddPartitionsToTxn,
    "response",
    "AddPartitionsToTxnTopicResult",
    "AddPartitionsToTxnPartitionResult",
)
PRODUCER_FENCED_FROM_VERSION = 2


def _errors(ctx: RequestContext, request: Any) -> dict[tuple[str, int], ErrorCode]:
    wanted = [
        (topic.name, partition)
        for topic in request.v3_and_below_topics
        for partition in topic.partitions
    ]
    unknown = {tp for tp in wanted if ctx.broker.cluster.partition(*tp) is None}
    if unknown:
        return {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if tp in unknown
            else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in wanted
        }
    error = ctx.broker.transactions.add_partitions(
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        wanted,
    )
    error = error_for_version(error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION)
    return dict.fromkeys(wanted, error)


@handles(ApiKey.AddPartitionsToTxn, 0, 3)
async def handle_add_partitions_to_txn(ctx: RequestContext, request: Any) -> Any:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in _errors(ctx, request).items():
        by_topic.setdefault(topic, []).append(
            _Partition(partition_index=partition, partition_error_code=error)
        )
    return new_response(
        ApiKey.AddPartitionsToTxn,
        ctx.api_version,
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            _Topic(name=name, results_by_partition=partitions)
            for name, partitions in by_topic.items()
        ],
    )
