"""AddPartitionsToTxn (key 24), versions 0-5.

Behaviour (Kafka's `handleAddPartitionsToTxnRequest`): if any partition is unknown, those get
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, and nothing is added.
Otherwise the transaction coordinator adds them to the producer's transaction (starting it:
Empty/Complete* -> Ongoing) and every partition gets its answer: INVALID_PRODUCER_ID_MAPPING
for an unknown transactional id or producer id, PRODUCER_FENCED for another epoch,
CONCURRENT_TRANSACTIONS while the previous transaction is being ended.

v4+ is the batched form brokers send to the coordinator (KIP-890): several transactions per
request, each answered on its own (`ResultsByTransaction`, top-level error NONE). A
transaction with VerifyOnly is only checked (Kafka's handleVerifyPartitionsInTransaction):
each partition answers NO_ERROR if it is in the producer's ongoing transaction,
TRANSACTION_ABORTABLE if not (the producer's errors, and CONCURRENT_TRANSACTIONS while its
transaction is being ended, for every partition); nothing is added. Without VerifyOnly the
partitions are added, for a client on transactions V2 (Kafka: a v4+ add is TV2).

Authorization, as Kafka's `handleAddPartitionsToTxnRequest`. v0-3 (clients): WRITE on the
transactional id (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each
topic: partitions of a topic without it, and of internal topics (always, as Kafka), answer
TOPIC_AUTHORIZATION_FAILED, unknown ones UNKNOWN_TOPIC_OR_PARTITION, the others
OPERATION_NOT_ATTEMPTED, and nothing is added. v4+ (brokers): CLUSTER_ACTION on the cluster,
else CLUSTER_AUTHORIZATION_FAILED at the top level with no results; the transactions and topics
themselves are not checked.

Version notes: v0-3 are the client versions (one transaction per request). PRODUCER_FENCED
exists from v2; older versions get INVALID_PRODUCER_EPOCH. v3 is flexible; v5 only adds
TRANSACTION_ABORTABLE, which only a VerifyOnly check answers (at v4 as at v5).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import INTERNAL_TOPICS
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.server.nodes import TRANSACTION_KEY_TYPE
from minibroker.txn.coordinator import TRANSACTION_VERSION_2, error_for_version
from minibroker.txn.state import TopicPartition

_Topic = struct_type(ApiKey.AddPartitionsToTxn, "response", "AddPartitionsToTxnTopicResult")
_Partition = struct_type(
    ApiKey.AddPartitionsToTxn,
    "response",
    "AddPartitionsToTxnTopicResult",
    "AddPartitionsToTxnPartitionResult",
)
_Transaction = struct_type(ApiKey.AddPartitionsToTxn, "response", "AddPartitionsToTxnResult")
PRODUCER_FENCED_FROM_VERSION = 2
FIRST_BATCHED_VERSION = 4


def _errors(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    verify_only: bool = False,
) -> dict[TopicPartition, ErrorCode]:
    wanted = [(topic.name, partition) for topic in topics for partition in topic.partitions]
    refused = _refused(ctx, wanted)
    if refused:
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    coordinator = ctx.broker.transactions
    if verify_only:
        return coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, wanted)
    tv = TRANSACTION_VERSION_2 if ctx.api_version >= FIRST_BATCHED_VERSION else 0
    error = coordinator.add_partitions(
        transactional_id, producer_id, producer_epoch, wanted, client_transaction_version=tv
    )
    error = error_for_version(error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION)
    return dict.fromkeys(wanted, error)


def _refused(ctx: RequestContext, wanted: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """Partitions that may not be added: topics without WRITE (v0-3), unknown partitions."""
    names = {topic for topic, _ in wanted}
    if ctx.api_version < FIRST_BATCHED_VERSION:
        names = ctx.authorized_names(
            AclOperation.WRITE, ResourceType.TOPIC, names - set(INTERNAL_TOPICS)
        )
    refused = {}
    for tp in wanted:
        if tp[0] not in names:
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif ctx.broker.cluster.partition(*tp) is None:
            refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return refused


def _txn_errors(
    ctx: RequestContext, transactional_id: str, producer_id: int, producer_epoch: int, topics: Any
) -> dict[TopicPartition, ErrorCode]:
    """v0-3: the transaction's partitions, after WRITE on its transactional id."""
    if ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return _errors(ctx, transactional_id, producer_id, producer_epoch, topics)
    error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return {(topic.name, partition): error for topic in topics for partition in topic.partitions}


def _topic_results(errors: dict[TopicPartition, ErrorCode]) -> list[Any]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            _Partition(partition_index=partition, partition_error_code=error)
        )
    return [
        _Topic(name=name, results_by_partition=partitions) for name, partitions in by_topic.items()
    ]


def _batched(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        return new_response(
            ApiKey.AddPartitionsToTxn,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            results_by_transaction=[],
        )
    results = [
        _Transaction(
            transactional_id=txn.transactional_id,
            topic_results=_topic_results(
                _errors(
                    ctx,
                    txn.transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                    txn.topics,
                    txn.verify_only,
                )
            ),
        )
        for txn in request.transactions
    ]
    return new_response(
        ApiKey.AddPartitionsToTxn,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        results_by_transaction=results,
    )


@handles(ApiKey.AddPartitionsToTxn, 0, 5)
async def handle_add_partitions_to_txn(ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version >= FIRST_BATCHED_VERSION:
        return _batched(ctx, request)
    errors = _txn_errors(
        ctx,
        request.v3_and_below_transactional_id,
        request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch,
        request.v3_and_below_topics,
    )
    if ErrorCode.NO_ERROR in errors.values():
        key = request.v3_and_below_transactional_id
        waited = await ctx.replicated_write(key, TRANSACTION_KEY_TYPE)
        errors = {tp: waited if e == ErrorCode.NO_ERROR else e for tp, e in errors.items()}
    return new_response(
        ApiKey.AddPartitionsToTxn,
        ctx.api_version,
        throttle_time_ms=0,
        results_by_topic_v3_and_below=_topic_results(errors),
    )
