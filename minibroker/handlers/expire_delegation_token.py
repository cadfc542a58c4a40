"""ExpireDelegationToken (key 40), versions 1-2.

Behaviour: as Kafka 4.3's KafkaApis/ControllerApis and DelegationTokenControlManager. Over
PLAINTEXT, SSL without a client certificate or a token-authenticated connection:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry -1. Without `delegation.token.secret.key`:
DELEGATION_TOKEN_AUTH_DISABLED. Else the token with this HMAC, for its owner or a renewer: a
negative period removes it now (expiry = now); otherwise its expiry becomes min(max timestamp,
now + period), or DELEGATION_TOKEN_EXPIRED if it has already expired. An unknown HMAC is
DELEGATION_TOKEN_NOT_FOUND, another principal DELEGATION_TOKEN_OWNER_MISMATCH (expiry 0 for
these errors, the controller's answer).

Version notes: v0 is gone in Kafka 4 (KIP-896); v2 is the first flexible version.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.handlers.token_expiry import expiry_answer
from minibroker.protocol.api_keys import ApiKey
from minibroker.server.context import RequestContext


@handles(ApiKey.ExpireDelegationToken, 1, 2)
async def handle_expire_delegation_token(ctx: RequestContext, request: Any) -> Any:
    return expiry_answer(
        ctx,
        ApiKey.ExpireDelegationToken,
        lambda tokens: tokens.expire(
            bytes(request.hmac), ctx.principal, request.expiry_time_period_ms, ctx.now_ms()
        ),
    )
