"""DeleteAcls (key 31), versions 0-3 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: as Kafka's AclApis.handleDeleteAcls and AclControlManager.deleteAcls (Kafka forwards
the request to its controller, which answers the same). A code 0 (UNKNOWN) in any filter fails
Kafka's request parsing, so the connection is closed. The principal needs ALTER on the cluster,
else every filter result is CLUSTER_AUTHORIZATION_FAILED; with no authorizer configured every
filter result is SECURITY_DISABLED "No Authorizer is configured.". Otherwise each filter is
checked as AclControlManager.validateFilter checks it (a code Kafka does not know reads as
UNKNOWN: "Unknown patternFilter." / "Unknown entryFilter.", INVALID_REQUEST), then every binding
it matches (as DescribeAcls matches them) is removed and listed in its result, each with error
NONE; a binding two filters match is listed for both, a filter matching nothing gets an empty
list and no error. The removal is saved before the answer (`Authorizer.delete`).

Version notes: v1-v3 have the same fields (v1 added the pattern types); v2+ is flexible. v0 has
no pattern type: LITERAL, its default, as Kafka 3.9 read it, so only literal bindings match and
a v0 answer never carries another kind. Kafka 4.0 removed v0.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    InvalidAcl,
    UnknownAclElement,
)
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import MalformedRequest, new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_FilterResult = struct_type(ApiKey.DeleteAcls, "response", "DeleteAclsFilterResult")
_MatchingAcl = _FilterResult.DeleteAclsMatchingAcl


@handles(ApiKey.DeleteAcls, 0, 3)
async def handle_delete_acls(ctx: RequestContext, request: Any) -> Any:
    filters = [_filter(fields) for fields in request.filters]
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = cluster_denied_message("DeleteAcls", ctx.principal)
        return _answer(
            ctx, [_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)] * len(filters)
        )
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        message = "No Authorizer is configured."
        return _answer(ctx, [_failed(ErrorCode.SECURITY_DISABLED, message)] * len(filters))
    refusals = [_refusal(acl_filter) for acl_filter in filters]
    valid = [
        acl_filter for acl_filter, refusal in zip(filters, refusals, strict=True) if refusal is None
    ]
    deleted = iter(authorizer.delete(valid) if valid else [])
    results = [
        _matched(next(deleted)) if refusal is None else _failed(ErrorCode.INVALID_REQUEST, refusal)
        for refusal in refusals
    ]
    return _answer(ctx, results)


def _filter(fields: Any) -> AclBindingFilter:
    try:
        return AclBindingFilter.of_codes(
            fields.resource_type_filter,
            fields.resource_name_filter,
            fields.pattern_type_filter,
            fields.principal_filter,
            fields.host_filter,
            fields.operation,
            fields.permission_type,
        )
    except UnknownAclElement as exc:
        raise MalformedRequest(f"DeleteAcls: {exc}") from exc


def _refusal(acl_filter: AclBindingFilter) -> str | None:
    try:
        acl_filter.validate()
    except InvalidAcl as exc:
        return str(exc)
    return None


def _matched(bindings: list[AclBinding]) -> Any:
    return _FilterResult(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        matching_acls=[_matching_acl(binding) for binding in bindings],
    )


def _matching_acl(binding: AclBinding) -> Any:
    return _MatchingAcl(
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        resource_type=binding.resource_type,
        resource_name=binding.resource_name,
        pattern_type=binding.pattern_type,
        principal=binding.principal,
        host=binding.host,
        operation=binding.operation,
        permission_type=binding.permission,
    )


def _failed(error: ErrorCode, message: str) -> Any:
    return _FilterResult(error_code=error, error_message=message, matching_acls=[])


def _answer(ctx: RequestContext, results: list[Any]) -> Any:
    return new_response(
        ApiKey.DeleteAcls, ctx.api_version, throttle_time_ms=0, filter_results=results
    )
