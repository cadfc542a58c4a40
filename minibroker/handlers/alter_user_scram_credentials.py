"""AlterUserScramCredentials (key 51), version 0.

Behaviour: as Kafka's ScramControlManager.alterCredentials. Clients send upsertions already
salted (salt, SaltedPassword, iterations); the broker keeps only the salt, StoredKey,
ServerKey and iterations, saved in the data directory so they survive restarts. One result
per user, Kafka's checks and messages: a user altered twice in one request (even for two
mechanisms) gets DUPLICATE_RESOURCE; an empty name UNACCEPTABLE_CREDENTIAL; an unknown
mechanism UNSUPPORTED_SASL_MECHANISM; iterations below the mechanism's minimum (4096) or
above 16384 UNACCEPTABLE_CREDENTIAL; deleting what does not exist RESOURCE_NOT_FOUND.
Accepted changes apply together. It needs ALTER on the cluster (checked by Kafka's
controller), else every user named gets CLUSTER_AUTHORIZATION_FAILED ("Request ... is not
authorized.") and nothing changes.

Version notes: v0 is the only version, and flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.security.credentials import Change, ScramCredentials
from minibroker.security.scram import MAX_ITERATIONS, MECHANISM_BY_TYPE, ScramCredential
from minibroker.server.context import RequestContext

_Result = struct_type(
    ApiKey.AlterUserScramCredentials, "response", "AlterUserScramCredentialsResult"
)

Error = tuple[ErrorCode, str]
DUPLICATE: Error = (
    ErrorCode.DUPLICATE_RESOURCE,
    "A user credential cannot be altered twice in the same request",
)


def _name_and_mechanism_error(name: str, mechanism: int) -> Error | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _deletion_error(store: ScramCredentials, deletion: Any) -> Error | None:
    error = _name_and_mechanism_error(deletion.name, deletion.mechanism)
    if (
        error is None
        and store.get(deletion.name, MECHANISM_BY_TYPE[deletion.mechanism].name) is None
    ):
        error = (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        )
    return error


def _upsertion_error(upsertion: Any) -> Error | None:
    error = _name_and_mechanism_error(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < MECHANISM_BY_TYPE[upsertion.mechanism].min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def _upsert(upsertion: Any) -> Change:
    mechanism = MECHANISM_BY_TYPE[upsertion.mechanism]
    credential = ScramCredential.from_salted_password(
        mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password), upsertion.iterations
    )
    return upsertion.name, mechanism.name, credential


def _denied(ctx: RequestContext, request: Any) -> Any:
    """Kafka's error answer: one result per user named, sorted."""
    message = cluster_denied_message("AlterUserScramCredentials", ctx.principal)
    users = {change.name for change in [*request.deletions, *request.upsertions]}
    return new_response(
        ApiKey.AlterUserScramCredentials,
        ctx.api_version,
        throttle_time_ms=0,
        results=[
            _Result(
                user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message
            )
            for user in sorted(users)
        ],
    )


@handles(ApiKey.AlterUserScramCredentials, 0, 0)
async def handle_alter_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _denied(ctx, request)
    store = ctx.broker.scram_credentials
    changes: dict[str, Change] = {}
    errors: dict[str, Error] = {}
    for deletion in request.deletions:
        if deletion.name in errors:
            continue
        if changes.pop(deletion.name, None) is not None:
            errors[deletion.name] = DUPLICATE
        elif (error := _deletion_error(store, deletion)) is not None:
            errors[deletion.name] = error
        else:
            mechanism = MECHANISM_BY_TYPE[deletion.mechanism].name
            changes[deletion.name] = (deletion.name, mechanism, None)
    for upsertion in request.upsertions:
        if upsertion.name in errors:
            continue
        if changes.pop(upsertion.name, None) is not None:
            errors[upsertion.name] = DUPLICATE
        elif (error := _upsertion_error(upsertion)) is not None:
            errors[upsertion.name] = error
        else:
            changes[upsertion.name] = _upsert(upsertion)
    store.apply(changes.values())
    results = [
        _Result(user=user, error_code=ErrorCode.NO_ERROR, error_message=None) for user in changes
    ] + [
        _Result(user=user, error_code=code, error_message=message)
        for user, (code, message) in errors.items()
    ]
    return new_response(
        ApiKey.AlterUserScramCredentials, ctx.api_version, throttle_time_ms=0, results=results
    )
