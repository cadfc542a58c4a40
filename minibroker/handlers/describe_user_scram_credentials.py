"""DescribeUserScramCredentials (key 50), version 0.

Behaviour: as Kafka's ScramImage.describe. No users (null or empty) describes every user
with a SCRAM credential; each user gets its mechanisms (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512)
and iteration counts, never salts or keys. A user named twice gets DUPLICATE_RESOURCE, an
unknown one RESOURCE_NOT_FOUND, each with Kafka's message; the top-level error is NONE.
Credentials live in `broker.scram_credentials` (minibroker/security/credentials.py). It needs
DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization failed.")
at the top and in one result per user named, each with an empty user name, as Kafka's
error answer.

Version notes: v0 is the only version, and flexible.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.security.scram import SCRAM_MECHANISMS
from minibroker.server.context import RequestContext

_Result = struct_type(
    ApiKey.DescribeUserScramCredentials, "response", "DescribeUserScramCredentialsResult"
)
_CredentialInfo = _Result.CredentialInfo
_DENIED = "Cluster authorization failed."


def _denied(ctx: RequestContext, request: Any) -> Any:
    """Kafka's error answer: the error at the top and once per user named (with no name)."""
    return new_response(
        ApiKey.DescribeUserScramCredentials,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        error_message=_DENIED,
        results=[
            _Result(
                user="",
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message=_DENIED,
                credential_infos=[],
            )
            for _user in request.users or []
        ],
    )


@handles(ApiKey.DescribeUserScramCredentials, 0, 0)
async def handle_describe_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return _denied(ctx, request)
    store = ctx.broker.scram_credentials
    requested = [user.name for user in request.users or []]
    counts = Counter(requested)
    results = []
    for user in dict.fromkeys(requested or store.users()):
        credentials = store.of(user)
        if counts[user] > 1:
            error = ErrorCode.DUPLICATE_RESOURCE
            message = (
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"
            )
        elif not credentials:
            error = ErrorCode.RESOURCE_NOT_FOUND
            message = f"Attempt to describe a user credential that does not exist: {user}"
        else:
            error, message = ErrorCode.NO_ERROR, None
        infos = [
            _CredentialInfo(mechanism=SCRAM_MECHANISMS[name].type_code, iterations=c.iterations)
            for name, c in sorted(credentials.items())
        ]
        results.append(
            _Result(
                user=user,
                error_code=error,
                error_message=message,
                credential_infos=infos if error == ErrorCode.NO_ERROR else [],
            )
        )
    return new_response(
        ApiKey.DescribeUserScramCredentials,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        results=results,
    )
