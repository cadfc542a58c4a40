"""SaslAuthenticate (key 36), versions 0-2.

Behaviour: on a SASL listener the tokens of an authentication are evaluated by the
connection's authenticator (minibroker/server/authenticator.py) before any request reaches
the handlers; a wrong password gets SASL_AUTHENTICATION_FAILED with Kafka's message and the
connection is closed. This handler answers what reaches the ordinary dispatch: a
SaslAuthenticate on a PLAINTEXT/SSL listener or after authentication, with Kafka's
ILLEGAL_SASL_STATE and its message.

Version notes: v1 adds session_lifetime_ms (always 0: minibroker does not ask clients to
re-authenticate, `connections.max.reauth.ms` is not served); v2 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


@handles(ApiKey.SaslAuthenticate, 0, 2)
async def handle_sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.SaslAuthenticate,
        ctx.api_version,
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful authentication",
        auth_bytes=b"",
        session_lifetime_ms=0,
    )
