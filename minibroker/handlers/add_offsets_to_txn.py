"""AddOffsetsToTxn (key 25), versions 0-4.

Behaviour (Kafka's `handleAddOffsetsToTxnRequest`): the group's `__consumer_offsets` partition
is added to the producer's transaction, so that EndTxn writes the marker that makes the
offsets sent with TxnOffsetCommit visible (or drops them). Errors as AddPartitionsToTxn:
INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS.

Authorization first, in Kafka's order: WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group (GROUP_AUTHORIZATION_FAILED).

Version notes: PRODUCER_FENCED exists from v2; older versions get INVALID_PRODUCER_EPOCH. v3 is
flexible; v4 only adds TRANSACTION_ABORTABLE (KIP-890), which minibroker never answers; v4 is
Kafka 4.3's latest. Transactions V2 clients do not send it: TxnOffsetCommit v5 adds the
offsets partition itself.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.server.nodes import TRANSACTION_KEY_TYPE
from minibroker.txn.coordinator import error_for_version

PRODUCER_FENCED_FROM_VERSION = 2


@handles(ApiKey.AddOffsetsToTxn, 0, 4)
async def handle_add_offsets_to_txn(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    elif not request.group_id:
        error = ErrorCode.INVALID_GROUP_ID
    else:
        error = ctx.broker.transactions.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
        error = await ctx.replicated_write(request.transactional_id, TRANSACTION_KEY_TYPE, error)
    return new_response(
        ApiKey.AddOffsetsToTxn,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error_for_version(error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION),
    )
