"""DescribeAcls (key 29), versions 0-3 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: as Kafka's AclApis.handleDescribeAcls. A filter code 0 (UNKNOWN) fails Kafka's
request parsing, so the connection is closed. The principal needs DESCRIBE on the cluster,
else the top-level error is CLUSTER_AUTHORIZATION_FAILED. With no authorizer configured the
answer is SECURITY_DISABLED "No Authorizer is configured on the broker". Otherwise the answer
holds every binding the filter matches (`AclBindingFilter.matches`: resource type ANY or
one type; pattern type ANY, LITERAL, PREFIXED or MATCH, which also matches the `*` and prefix
bindings that apply to the name; a null name, principal or host matches anything), grouped
per resource pattern as DescribeAclsResponse.aclsResources groups them. Any other code Kafka
does not know reads as UNKNOWN and matches nothing.

Version notes: v1-v3 have the same fields (v1 added the pattern types); v2+ is flexible. v0 has
no pattern type: LITERAL, its default, as Kafka 3.9 read it, so only literal bindings match and
a v0 answer never carries another kind. Kafka 4.0 removed v0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from minibroker.auth.acls import AclBinding, AclBindingFilter, AclOperation, UnknownAclElement
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import MalformedRequest, new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Resource = struct_type(ApiKey.DescribeAcls, "response", "DescribeAclsResource")
_Description = _Resource.AclDescription


@handles(ApiKey.DescribeAcls, 0, 3)
async def handle_describe_acls(ctx: RequestContext, request: Any) -> Any:
    acl_filter = _filter(request)
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        message = cluster_denied_message("DescribeAcls", ctx.principal)
        return _answer(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        message = "No Authorizer is configured on the broker"
        return _answer(ctx, ErrorCode.SECURITY_DISABLED, message)
    return _answer(ctx, ErrorCode.NO_ERROR, None, _resources(authorizer.acls(acl_filter)))


def _filter(request: Any) -> AclBindingFilter:
    try:
        return AclBindingFilter.of_codes(
            request.resource_type_filter,
            request.resource_name_filter,
            request.pattern_type_filter,
            request.principal_filter,
            request.host_filter,
            request.operation,
            request.permission_type,
        )
    except UnknownAclElement as exc:
        raise MalformedRequest(f"DescribeAcls: {exc}") from exc


def _resources(bindings: Iterable[AclBinding]) -> list[Any]:
    """One entry per resource pattern (type, name, pattern type) with its bindings' entries."""
    by_pattern: dict[tuple[int, str, int], list[Any]] = {}
    for binding in bindings:
        pattern = (binding.resource_type, binding.resource_name, binding.pattern_type)
        by_pattern.setdefault(pattern, []).append(
            _Description(
                principal=binding.principal,
                host=binding.host,
                operation=binding.operation,
                permission_type=binding.permission,
            )
        )
    return [
        _Resource(resource_type=kind, resource_name=name, pattern_type=pattern, acls=acls)
        for (kind, name, pattern), acls in by_pattern.items()
    ]


def _answer(
    ctx: RequestContext, error: ErrorCode, message: str | None, resources: list[Any] | None = None
) -> Any:
    return new_response(
        ApiKey.DescribeAcls,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        resources=resources or [],
    )
