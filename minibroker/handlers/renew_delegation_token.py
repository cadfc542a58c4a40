"""RenewDelegationToken (key 39), versions 1-2.

Behaviour: as Kafka 4.3's KafkaApis/ControllerApis and DelegationTokenControlManager. Over
PLAINTEXT, SSL without a client certificate or a token-authenticated connection:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry -1. Without `delegation.token.secret.key`:
DELEGATION_TOKEN_AUTH_DISABLED. Else the token with this HMAC is renewed by its owner or a
renewer: expiry = min(max timestamp, now + min(`delegation.token.expiry.time.ms`, the renew
period when positive)); an unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, an expired token
DELEGATION_TOKEN_EXPIRED, another principal DELEGATION_TOKEN_OWNER_MISMATCH (expiry 0 for
these errors, the controller's answer).

Version notes: v0 is gone in Kafka 4 (KIP-896); v2 is the first flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.handlers.token_expiry import expiry_answer
from minibroker.protocol.api_keys import ApiKey
from minibroker.server.context import RequestContext


@handles(ApiKey.RenewDelegationToken, 1, 2)
async def handle_renew_delegation_token(ctx: RequestContext, request: Any) -> Any:
    return expiry_answer(
        ctx,
        ApiKey.RenewDelegationToken,
        lambda tokens: tokens.renew(
            bytes(request.hmac), ctx.principal, request.renew_period_ms, ctx.now_ms()
        ),
    )
