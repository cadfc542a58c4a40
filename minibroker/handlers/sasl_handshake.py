"""SaslHandshake (key 17), versions 0-1.

Behaviour: on a SASL listener the handshake is served before authentication by the
connection's authenticator (minibroker/server/authenticator.py), never by this handler. This
handler answers what reaches the ordinary dispatch: a handshake on a PLAINTEXT/SSL listener
or after authentication, which Kafka's KafkaApis answers with ILLEGAL_SASL_STATE and no
mechanisms. Kafka advertises keys 17 and 36 on every listener, and so does minibroker.

Version notes: v0 means the SASL tokens that follow travel raw (no Kafka header); v1 means
they travel in SaslAuthenticate requests. The response is the same for both.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


@handles(ApiKey.SaslHandshake, 0, 1)
async def handle_sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    return new_response(
        ApiKey.SaslHandshake,
        ctx.api_version,
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        mechanisms=[],
    )
