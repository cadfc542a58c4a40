"""DescribeDelegationToken (key 41), versions 1-3.

Behaviour: as Kafka 4.3's KafkaApis.handleDescribeTokensRequest, from the broker's tokens.
Over PLAINTEXT, SSL without a client certificate or a token-authenticated connection:
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED; without `delegation.token.secret.key`:
DELEGATION_TOKEN_AUTH_DISABLED; both with no tokens. An empty owner list describes nothing;
null describes every token, a list the tokens one of whose owner, requester or renewers it
names. Of those, the principal sees the tokens it owns, requested or may renew, those it may
DESCRIBE (DELEGATION_TOKEN resource named by the token id), and those of owners it may
DESCRIBE_TOKENS (USER resource named by the owner principal, `User:bob`). Each token comes
with its HMAC, renewers and timestamps (expired tokens not yet removed included, as in Kafka).

Version notes: v0 is gone in Kafka 4 (KIP-896); v2 is the first flexible version; v3 adds the
token requester.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.security.delegation_tokens import (
    DelegationTokens,
    TokenInformation,
    split_principal,
    token_requests_allowed,
)
from minibroker.server.context import RequestContext

_Token = struct_type(ApiKey.DescribeDelegationToken, "response", "DescribedDelegationToken")
_Renewer = struct_type(
    ApiKey.DescribeDelegationToken,
    "response",
    "DescribedDelegationToken",
    "DescribedDelegationTokenRenewer",
)


def _visible(ctx: RequestContext, owners: list[str] | None, token: TokenInformation) -> bool:
    """Kafka's DelegationTokenManager.filterToken."""
    if owners is not None and not any(token.owner_or_renewer(owner) for owner in owners):
        return False
    return (
        token.owner_or_renewer(ctx.principal)
        or ctx.authorize(AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
        or ctx.authorize(AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner)
    )


def _described(tokens: DelegationTokens, token: TokenInformation) -> Any:
    owner_type, owner_name = split_principal(token.owner)
    requester_type, requester_name = split_principal(token.requester)
    return _Token(
        principal_type=owner_type,
        principal_name=owner_name,
        token_requester_principal_type=requester_type,
        token_requester_principal_name=requester_name,
        issue_timestamp=token.issue_ms,
        expiry_timestamp=token.expiry_ms,
        max_timestamp=token.max_ms,
        token_id=token.token_id,
        hmac=tokens.hmac(token.token_id),
        renewers=[
            _Renewer(principal_type=kind, principal_name=name)
            for kind, name in map(split_principal, token.renewers)
        ],
    )


def _response(ctx: RequestContext, error: ErrorCode, described: list[Any]) -> Any:
    return new_response(
        ApiKey.DescribeDelegationToken,
        ctx.api_version,
        error_code=error,
        tokens=described,
        throttle_time_ms=0,
    )


@handles(ApiKey.DescribeDelegationToken, 1, 3)
async def handle_describe_delegation_token(ctx: RequestContext, request: Any) -> Any:
    protocol = ctx.broker.security[ctx.listener.name].protocol
    tokens = ctx.broker.delegation_tokens
    if not token_requests_allowed(protocol, ctx.principal, ctx.session.token_authenticated):
        return _response(ctx, ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, [])
    if not tokens.enabled:
        return _response(ctx, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, [])
    owners = (
        None
        if request.owners is None
        else [f"{owner.principal_type}:{owner.principal_name}" for owner in request.owners]
    )
    visible = [token for token in tokens.tokens() if _visible(ctx, owners, token)]
    return _response(ctx, ErrorCode.NO_ERROR, [_described(tokens, token) for token in visible])
