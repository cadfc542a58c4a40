"""EndTxn (key 26), versions 0-4.

Behaviour (Kafka's `TransactionCoordinator.handleEndTransaction`): an ongoing transaction moves
to PrepareCommit or PrepareAbort, stored in `__transaction_state`, and the answer is sent; the
COMMIT/ABORT markers are then written to every partition of the transaction (and to the
group's `__consumer_offsets` partition for TxnOffsetCommit), after which it is CompleteCommit
or CompleteAbort. Errors: INVALID_PRODUCER_ID_MAPPING (unknown id or producer id),
PRODUCER_FENCED (any other epoch), CONCURRENT_TRANSACTIONS (this end is still being written),
INVALID_TXN_STATE (nothing to end, or the opposite end of one already ended). Repeating the
end that completed answers NO_ERROR (a retry).

Version notes: PRODUCER_FENCED exists from v2; older versions get INVALID_PRODUCER_EPOCH. v3 is
flexible. v5 (transactions V2, KIP-890) is not served: `transaction.version` is never
advertised.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.server.context import RequestContext
from minibroker.txn.coordinator import error_for_version

PRODUCER_FENCED_FROM_VERSION = 2


@handles(ApiKey.EndTxn, 0, 4)
async def handle_end_txn(ctx: RequestContext, request: Any) -> Any:
    error = ctx.broker.transactions.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed
    )
    return new_response(
        ApiKey.EndTxn,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error_for_version(error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION),
    )
