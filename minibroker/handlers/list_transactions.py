"""ListTransactions (key 66), versions 0-2.

Behaviour (Kafka's `TransactionStateManager.listTransactionStates`): every transactional id
this coordinator knows with its producer id and state, filtered by `state_filters` (Kafka's
state names; names that are not states come back in `unknown_state_filters`),
`producer_id_filters` and the transactional id pattern; empty filters match everything.

Version notes: v1 adds `duration_filter` (KIP-994): if >= 0, only transactions started more
than that many milliseconds ago. v2 adds `transactional_id_pattern` (KIP-1152): null or empty
matches every id, otherwise the whole id must match the pattern (Java `matches()`, not
`find()`). Kafka compiles it with RE2/J; here it becomes a Python `re` pattern, refusing what
RE2 does not have (lookaround, backreferences, atomic groups, possessive quantifiers,
conditionals) and translating Java spellings Python lacks (`(?<name>`, `\\z`, `\\Q...\\E`).
A pattern that does not compile answers INVALID_REGULAR_EXPRESSION with nothing listed.
"""

from __future__ import annotations

import re
from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.state import TxnState

_State = struct_type(ApiKey.ListTransactions, "response", "TransactionState")

# Constructs java.util.regex and Python have but RE2 (Kafka's RE2/J) does not.
_NOT_IN_RE2 = re.compile(
    r"\(\?(?:[=!>(]|<[=!])"  # lookahead/lookbehind, atomic group, conditional
    r"|\\[1-9]|\\k<"  # backreferences
    r"|(?<!\\)[*+?}]\+"  # possessive quantifiers
)
_QUOTED = re.compile(r"\\Q(.*?)(?:\\E|$)", re.DOTALL)


class InvalidPattern(Exception):
    """The transactional id pattern is not a regular expression Kafka accepts."""


def compile_java_pattern(pattern: str) -> re.Pattern[str]:
    """A Python pattern for a Java/RE2 regular expression, or InvalidPattern."""
    if _NOT_IN_RE2.search(pattern):
        raise InvalidPattern(pattern)
    translated = _QUOTED.sub(lambda quoted: re.escape(quoted.group(1)), pattern)
    translated = translated.replace("(?<", "(?P<").replace(r"\z", r"\Z")
    try:
        return re.compile(translated)
    except re.error as exc:
        raise InvalidPattern(pattern) from exc


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
        matcher = compile_java_pattern(id_pattern) if id_pattern else None
    except InvalidPattern:
        return _empty(ctx, ErrorCode.INVALID_REGULAR_EXPRESSION)
    names = request.state_filters or []
    states = {state for name in names if (state := TxnState.from_name(name)) is not None}
    unknown = [name for name in names if TxnState.from_name(name) is None]
    listed = []
    if states or not names:
        listed = ctx.broker.transactions.listed(
            states, set(request.producer_id_filters or []), request.duration_filter
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
            if matcher is None or matcher.fullmatch(txn.transactional_id)
        ],
    )
