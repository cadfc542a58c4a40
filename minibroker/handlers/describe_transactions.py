"""DescribeTransactions (key 65), version 0.

Behaviour (Kafka's `TransactionCoordinator.handleDescribeTransactions`): for each
transactional id its state (Kafka's names: Empty, Ongoing, PrepareCommit, ...), timeout,
start time (-1 when no transaction is open), producer id and epoch and the partitions of the
open transaction, grouped by topic. Unknown (or expired) ids get TRANSACTIONAL_ID_NOT_FOUND.

Authorization, as Kafka's `handleDescribeTransactionsRequest`: DESCRIBE on each transactional
id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED, state "", producer id -1, no topics); the
topics listed are only those the principal may DESCRIBE.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.state import TransactionMetadata

_State = struct_type(ApiKey.DescribeTransactions, "response", "TransactionState")
_Topic = struct_type(ApiKey.DescribeTransactions, "response", "TransactionState", "TopicData")


def _described(ctx: RequestContext, transactional_id: str) -> Any:
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        # Kafka answers only the id and the error; every other field keeps its default.
        return _State(
            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            transactional_id=transactional_id,
            topics=[],
        )
    txn = ctx.broker.transactions.transactions.get(transactional_id)
    if txn is None:
        return _State(
            error_code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout_ms=0,
            transaction_start_time_ms=-1,
            producer_id=-1,
            producer_epoch=-1,
            topics=[],
        )
    return _state(ctx, transactional_id, txn)


def _state(ctx: RequestContext, transactional_id: str, txn: TransactionMetadata) -> Any:
    describable = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.TOPIC, {topic for topic, _ in txn.partitions}
    )
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        if topic in describable:
            by_topic.setdefault(topic, []).append(partition)
    return _State(
        error_code=ErrorCode.NO_ERROR,
        transactional_id=transactional_id,
        transaction_state=txn.state.display_name,
        transaction_timeout_ms=txn.timeout_ms,
        transaction_start_time_ms=txn.start_ms,
        producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch,
        topics=[_Topic(topic=topic, partitions=parts) for topic, parts in by_topic.items()],
    )


@handles(ApiKey.DescribeTransactions, 0, 0)
async def handle_describe_transactions(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.DescribeTransactions,
        ctx.api_version,
        throttle_time_ms=0,
        transaction_states=[
            _described(ctx, transactional_id) for transactional_id in request.transactional_ids
        ],
    )
