"""EndTxn (key 26), versions 0-5.

Behaviour (Kafka's `TransactionCoordinator.handleEndTransaction`): an ongoing transaction moves
to PrepareCommit or PrepareAbort, stored in `__transaction_state`, and the answer is sent; the
COMMIT/ABORT markers are then written to every partition of the transaction (and to the
group's `__consumer_offsets` partition for TxnOffsetCommit), after which it is CompleteCommit
or CompleteAbort. Errors: INVALID_PRODUCER_ID_MAPPING (unknown id or producer id),
PRODUCER_FENCED (any other epoch), CONCURRENT_TRANSACTIONS (this end is still being written),
INVALID_TXN_STATE (nothing to end, or the opposite end of one already ended). Repeating the
end that completed answers NO_ERROR (a retry).

v5 is transactions V2 (KIP-890 part 2; clients send it only while `transaction.version` 2 is
finalized): the coordinator bumps the producer epoch as it prepares the end, writes the markers
with the new epoch and answers the producer id and new epoch, which the client uses for its
next transaction. A retry (the previous epoch, after the end completed) answers NO_ERROR with
the current epoch; an abort with nothing in the transaction bumps the epoch too.

Authorization first: WRITE on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
(producer id and epoch -1), as Kafka.

Version notes: PRODUCER_FENCED exists from v2; older versions get INVALID_PRODUCER_EPOCH. v3 is
flexible; v4 only adds TRANSACTION_ABORTABLE (never answered here); v5 adds ProducerId and
ProducerEpoch to the response (-1 with an error, as Kafka).
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
from minibroker.txn.coordinator import InitResult, error_for_version

PRODUCER_FENCED_FROM_VERSION = 2
TRANSACTIONS_V2_VERSION = 5


def _end(ctx: RequestContext, request: Any) -> InitResult:
    if not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return InitResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    coordinator = ctx.broker.transactions
    args = (
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        request.committed,
    )
    if ctx.api_version >= TRANSACTIONS_V2_VERSION:
        return coordinator.end_txn_v2(*args)
    return InitResult(coordinator.end_txn(*args))


@handles(ApiKey.EndTxn, 0, 5)
async def handle_end_txn(ctx: RequestContext, request: Any) -> Any:
    result = _end(ctx, request)
    error = await ctx.replicated_write(request.transactional_id, TRANSACTION_KEY_TYPE, result.error)
    return new_response(
        ApiKey.EndTxn,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error_for_version(error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION),
        producer_id=result.producer_id,
        producer_epoch=result.producer_epoch,
    )
