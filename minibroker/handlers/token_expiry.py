"""What RenewDelegationToken and ExpireDelegationToken share: the refusals Kafka checks before
the token store (a connection that may not ask for tokens, then tokens disabled), and the
answer, an error and an expiry timestamp."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.security.delegation_tokens import DelegationTokens, token_requests_allowed
from minibroker.server.context import RequestContext

ExpiryChange = Callable[[DelegationTokens], tuple[ErrorCode, int]]


def expiry_answer(ctx: RequestContext, api_key: ApiKey, change: ExpiryChange) -> Any:
    protocol = ctx.broker.security[ctx.listener.name].protocol
    tokens = ctx.broker.delegation_tokens
    if not token_requests_allowed(protocol, ctx.principal, ctx.session.token_authenticated):
        error, expiry = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1
    elif not tokens.enabled:
        error, expiry = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
    else:
        error, expiry = change(tokens)
    return new_response(
        api_key, ctx.api_version, error_code=error, expiry_timestamp_ms=expiry, throttle_time_ms=0
    )
