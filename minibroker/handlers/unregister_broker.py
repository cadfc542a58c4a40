"""UnregisterBroker (key 64), version 0.

Behaviour: as Kafka's controller (a broker forwards the request to it), the broker id's
registration is removed (`Nodes.unregister`): the node leaves every ISR it is in (as the last
member only while eligible leader replicas are enabled: without them Kafka's controller keeps
an ISR from going empty), every ELR and last-known ELR, and its leaderships move, and Metadata
and DescribeCluster (fenced brokers included) no longer list it. Kafka's controller does not
refuse a broker that is running: it is unregistered too (fenced here) and registers again when
it restarts, as a stopped one does. A broker id not registered (never known, or unregistered
already) is BROKER_ID_NOT_REGISTERED. It needs ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED. Kafka's controller answers an error with its code only: the
message is always null.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


def _response(ctx: RequestContext, error: ErrorCode) -> Any:
    return new_response(
        ApiKey.UnregisterBroker,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=None,
    )


@handles(ApiKey.UnregisterBroker, 0, 0)
async def handle_unregister_broker(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _response(ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if not ctx.broker.nodes.unregister(request.broker_id):
        return _response(ctx, ErrorCode.BROKER_ID_NOT_REGISTERED)
    return _response(ctx, ErrorCode.NO_ERROR)
