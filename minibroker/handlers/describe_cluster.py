"""DescribeCluster (key 60), versions 0-2.

Behaviour: the brokers are the live nodes (one, unless this is an in-process cluster), at
the addresses advertised on the listener the request came in on, and, as KRaft brokers
answer, the controller id is one of them (the lowest). Nothing is authorized to ask; the
cluster authorized operations, when asked for, are the principal's on the cluster
(`ctx.authorized_operations`), none (0) without DESCRIBE on the cluster, as Kafka's
`AuthHelper.computeDescribeClusterResponse`; otherwise INT32_MIN, Kafka's "not requested".

Version notes: v1 adds the endpoint type: this is a broker endpoint (1); asking for
controllers (2) is MISMATCHED_ENDPOINT_TYPE, any other type UNSUPPORTED_ENDPOINT_TYPE.
v2 (KIP-1073) adds `IncludeFencedBrokers` and each broker's `IsFenced`: the stopped nodes of an
in-process cluster are fenced (as a KRaft broker is after a controlled shutdown) and listed,
at their configured addresses, only when the request includes fenced brokers. A node
unregistered (UnregisterBroker) is not listed until it starts again.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Broker = struct_type(ApiKey.DescribeCluster, "response", "DescribeClusterBroker")


class EndpointType(IntEnum):
    BROKER = 1
    CONTROLLER = 2


def _endpoint_error(endpoint_type: int) -> tuple[ErrorCode, str] | None:
    if endpoint_type == EndpointType.BROKER:
        return None
    if endpoint_type == EndpointType.CONTROLLER:
        return (
            ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
            "of type CONTROLLER",
        )
    return ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"


def _brokers(ctx: RequestContext, *, include_fenced: bool) -> list[Any]:
    nodes = ctx.broker.nodes
    listed = nodes.registered_brokers(include_fenced=include_fenced)
    brokers = []
    for node in sorted(listed, key=lambda node: node.node_id):
        host, port = node.advertised_endpoint(ctx.listener)
        brokers.append(
            _Broker(
                broker_id=node.node_id,
                host=host,
                port=port,
                rack=None,
                is_fenced=node.node_id not in nodes.live,
            )
        )
    return brokers


@handles(ApiKey.DescribeCluster, 0, 2)
async def handle_describe_cluster(ctx: RequestContext, request: Any) -> Any:
    error = _endpoint_error(request.endpoint_type)
    if error is not None:
        return new_response(
            ApiKey.DescribeCluster,
            ctx.api_version,
            throttle_time_ms=0,
            error_code=error[0],
            error_message=error[1],
            endpoint_type=EndpointType.BROKER,
            cluster_id="",
            controller_id=-1,
            brokers=[],
            authorized_operations=None,
        )
    return new_response(
        ApiKey.DescribeCluster,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        endpoint_type=EndpointType.BROKER,
        cluster_id=ctx.broker.cluster_id,
        controller_id=ctx.broker.nodes.controller_id(),
        brokers=_brokers(ctx, include_fenced=bool(request.include_fenced_brokers)),
        authorized_operations=_cluster_operations(ctx, request),
    )


def _cluster_operations(ctx: RequestContext, request: Any) -> set[int] | None:
    """As Kafka's `AuthHelper.computeDescribeClusterResponse`: none without DESCRIBE on the
    cluster, None (INT32_MIN) when not asked for."""
    if not request.include_cluster_authorized_operations:
        return None
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return set()
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
