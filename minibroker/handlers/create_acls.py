"""CreateAcls (key 30), versions 0-3 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: as Kafka's AclApis.handleCreateAcls and AclControlManager.createAcls (Kafka forwards
the request to its controller, which answers the same). A code 0 (UNKNOWN) in any creation
fails Kafka's request parsing, so the connection is closed. The principal needs ALTER on the
cluster, else every result is CLUSTER_AUTHORIZATION_FAILED; with no authorizer configured every
result is SECURITY_DISABLED "No Authorizer is configured.". A creation naming ANY (resource
type, operation, permission) or ANY/MATCH (pattern type) is one Kafka cannot turn into a
binding: the request fails as a whole, every result UNKNOWN_SERVER_ERROR and nothing created.
Otherwise each creation is checked on its own (`AclBinding.validate`, Kafka's order and
messages: the CLUSTER resource's name, an empty name, UNKNOWN types, a principal without a
colon) and refused with INVALID_REQUEST, or added; a binding that exists already succeeds
again. Bindings are saved before the answer (`Authorizer.create`).

Version notes: v1-v3 have the same fields (v1 added the pattern type); v2+ is flexible. v0 has
no pattern type: LITERAL, its default, as Kafka 3.9 read it. Kafka 4.0 removed v0.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclBinding, AclOperation, InvalidAcl, UnknownAclElement
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import MalformedRequest, new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.CreateAcls, "response", "AclCreationResult")


@handles(ApiKey.CreateAcls, 0, 3)
async def handle_create_acls(ctx: RequestContext, request: Any) -> Any:
    bindings = [_binding(creation) for creation in request.creations]
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = cluster_denied_message("CreateAcls", ctx.principal)
        return _answer(
            ctx, [_result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)] * len(bindings)
        )
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        message = "No Authorizer is configured."
        return _answer(ctx, [_result(ErrorCode.SECURITY_DISABLED, message)] * len(bindings))
    if any(binding.has_filter_codes for binding in bindings):
        return _answer(ctx, [_result(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * len(bindings))
    results, valid = [], []
    for binding in bindings:
        try:
            binding.validate()
        except InvalidAcl as exc:
            results.append(_result(ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        valid.append(binding)
        results.append(_result(ErrorCode.NO_ERROR, None))
    if valid:
        authorizer.create(valid)
    return _answer(ctx, results)


def _binding(creation: Any) -> AclBinding:
    try:
        return AclBinding.of_codes(
            creation.resource_type,
            creation.resource_name,
            creation.resource_pattern_type,
            creation.principal,
            creation.host,
            creation.operation,
            creation.permission_type,
        )
    except UnknownAclElement as exc:
        raise MalformedRequest(f"CreateAcls: {exc}") from exc


def _result(error: ErrorCode, message: str | None) -> Any:
    return _Result(error_code=error, error_message=message)


def _answer(ctx: RequestContext, results: list[Any]) -> Any:
    return new_response(ApiKey.CreateAcls, ctx.api_version, throttle_time_ms=0, results=results)
