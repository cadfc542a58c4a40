"""CreateDelegationToken (key 38), versions 1-3.

Behaviour: as Kafka 4.3's KafkaApis/ControllerApis and DelegationTokenControlManager. The
owner is the request's owner (v3+, when its name is not empty) or the requester. Refused, in
this order and with timestamps -1, an empty token id and HMAC: over PLAINTEXT, SSL without a
client certificate or a token-authenticated connection, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED;
for another owner without CREATE_TOKENS on the USER resource named by the owner principal
(`User:bob`), DELEGATION_TOKEN_AUTHORIZATION_FAILED; a renewer whose type is not `User`,
INVALID_PRINCIPAL_TYPE. Without `delegation.token.secret.key`, DELEGATION_TOKEN_AUTH_DISABLED
(timestamps 0, the controller's answer). Otherwise a new token (minibroker/security/
delegation_tokens.py): its id, HMAC, issue, expiry and max timestamps, owner and requester.

Version notes: v0 is gone in Kafka 4 (KIP-896); v2 is the first flexible version; v3 adds the
owner to the request and the requester to the response. A v3 owner name with a null type
fails the request as in Kafka: UNKNOWN_SERVER_ERROR with both principals `User:ANONYMOUS`.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import ANONYMOUS, AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.security.delegation_tokens import (
    USER_TYPE,
    TokenInformation,
    split_principal,
    token_requests_allowed,
)
from minibroker.server.context import RequestContext


def _owner(ctx: RequestContext, request: Any) -> str | None:
    """The owner principal; None for an owner name without a type, which Kafka's
    KafkaPrincipal refuses (the request fails as a whole)."""
    name = request.owner_principal_name if ctx.api_version >= 3 else None
    if not name:
        return ctx.principal
    if request.owner_principal_type is None:
        return None
    return f"{request.owner_principal_type}:{name}"


def _response(
    ctx: RequestContext,
    error: ErrorCode,
    owner: str,
    token: TokenInformation | None = None,
    token_hmac: bytes = b"",
    no_token_timestamp: int = -1,
    requester: str | None = None,
) -> Any:
    owner_type, owner_name = split_principal(owner)
    requester_type, requester_name = split_principal(requester or ctx.principal)
    return new_response(
        ApiKey.CreateDelegationToken,
        ctx.api_version,
        error_code=error,
        principal_type=owner_type,
        principal_name=owner_name,
        token_requester_principal_type=requester_type,
        token_requester_principal_name=requester_name,
        issue_timestamp_ms=no_token_timestamp if token is None else token.issue_ms,
        expiry_timestamp_ms=no_token_timestamp if token is None else token.expiry_ms,
        max_timestamp_ms=no_token_timestamp if token is None else token.max_ms,
        token_id="" if token is None else token.token_id,
        hmac=token_hmac,
        throttle_time_ms=0,
    )


def _refusal(ctx: RequestContext, request: Any, owner: str) -> ErrorCode | None:
    protocol = ctx.broker.security[ctx.listener.name].protocol
    if not token_requests_allowed(protocol, ctx.principal, ctx.session.token_authenticated):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    if owner != ctx.principal and not ctx.authorize(
        AclOperation.CREATE_TOKENS, ResourceType.USER, owner
    ):
        return ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if any(renewer.principal_type != USER_TYPE for renewer in request.renewers):
        return ErrorCode.INVALID_PRINCIPAL_TYPE
    return None


@handles(ApiKey.CreateDelegationToken, 1, 3)
async def handle_create_delegation_token(ctx: RequestContext, request: Any) -> Any:
    owner = _owner(ctx, request)
    if owner is None:
        # Kafka's getErrorResponse for a request that failed: both principals anonymous
        return _response(ctx, ErrorCode.UNKNOWN_SERVER_ERROR, ANONYMOUS, requester=ANONYMOUS)
    refusal = _refusal(ctx, request, owner)
    if refusal is not None:
        return _response(ctx, refusal, owner)
    tokens = ctx.broker.delegation_tokens
    if not tokens.enabled:
        return _response(ctx, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, owner, no_token_timestamp=0)
    renewers = [f"{r.principal_type}:{r.principal_name}" for r in request.renewers]
    token = tokens.create(owner, ctx.principal, renewers, request.max_lifetime_ms, ctx.now_ms())
    return _response(ctx, ErrorCode.NO_ERROR, owner, token, tokens.hmac(token.token_id))
