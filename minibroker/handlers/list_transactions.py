"""ListTransactions (key 66), versions 0-2.

Behaviour (Kafka's `TransactionStateManager.listTransactionStates`): every transactional id
this coordinator knows with its producer id and state, filtered by `state_filters` (Kafka's
state names; names that are not states come back in `unknown_state_filters`),
`producer_id_filters` and the transactional id pattern; empty filters match everything.

Version notes: v1 adds `duration_filter` (KIP-994): if >= 0, only transactions started more
than that many milliseconds ago. v2 adds `transactional_id_pattern` (KIP-1152): null or empty
matches every id, otherwise the whole id must match the pattern (Java `matches()`, not
`find()`). Kafka compiles it with RE2/J; here it is translated as KIP-848 subscription
regexes are (`groups/consumer/regex.py`).
A pattern that does not compile answers INVALID_REGULAR_EXPRESSION with nothing listed.

Authorization, as Kafka's `handleListTransactionsRequest`: only the transactional ids the
principal may DESCRIBE are listed.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.consumer.regex import InvalidRegex, compile_re2
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.state import TxnState

_State = struct_type(ApiKey.ListTransactions, "response", "TransactionState")


def _empty(ctx: RequestContext, error: ErrorCode) -> Any:
    return new_response(
        ApiKey.ListTransactions,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        unknown_state_filters=[],
        transaction_states=[],
    )


@handles(ApiKey.ListTransactions, 0, 2)
async def handle_list_transactions(ctx: RequestContext, request: Any) -> Any:
    id_pattern = request.transactional_id_pattern if ctx.api_version >= 2 else None
    try:
        matcher = compile_re2(id_pattern) if id_pattern else None
    except InvalidRegex:
        return _empty(ctx, ErrorCode.INVALID_REGULAR_EXPRESSION)
    names = request.state_filters or []
    states = {state for name in names if (state := TxnState.from_name(name)) is not None}
    unknown = [name for name in names if TxnState.from_name(name) is None]
    listed = []
    if states or not names:
        listed = ctx.broker.transactions.listed(
            states, set(request.producer_id_filters or []), request.duration_filter
        )
    describable = ctx.authorized_names(
        AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, [t.transactional_id for t in listed]
    )
    return new_response(
        ApiKey.ListTransactions,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        unknown_state_filters=unknown,
        transaction_states=[
            _State(
                transactional_id=txn.transactional_id,
                producer_id=txn.producer_id,
                transaction_state=txn.state.display_name,
            )
            for txn in listed
            if (matcher is None or matcher.fullmatch(txn.transactional_id))
            and txn.transactional_id in describable
        ],
    )
