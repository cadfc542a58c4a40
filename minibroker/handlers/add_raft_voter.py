"""AddRaftVoter (key 80), versions 0-1.

Behaviour: as Kafka's controller (a broker forwards the request to it) and its
`KafkaRaftClient`/`AddVoterHandler` (KIP-853), on the quorum `cluster/quorum.py` keeps. Checks,
in Kafka's order: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED; a cluster id other
than this cluster's (null is any) is INCONSISTENT_CLUSTER_ID; a negative voter id or the null
directory id is INVALID_REQUEST ("Add voter request didn't include a valid voter"), and so are
listeners without one named after the quorum's listener (minibroker has no controller
listener: the listener the request came in on); kraft.version 0 (a static quorum) is
UNSUPPORTED_VERSION ("Cluster doesn't support adding voter because the kraft.version feature
is 0"); a voter id already voting is DUPLICATE_VOTER; the new voter must be an observer
fetching with that directory id, i.e. a live node of the cluster with that node's directory id
(as DescribeQuorum shows it), else REQUEST_TIMED_OUT ("Aborted add voter operation for ...
since it is lagging behind"). Then the voter joins the set, with the listeners given as its
endpoints (DescribeQuorum's `Nodes`), and the answer is NO_ERROR once that is done (the change
is committed at once: there is one process). `TimeoutMs` has nothing to wait for.

Version notes: v0 is flexible; v1 (KIP-1186) adds AckWhenCommitted (answer when the leader has
written the change rather than committed it): the same here.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.features import KRAFT_VERSION
from minibroker.cluster.quorum import NULL_DIRECTORY_IDS, Endpoint, Voter, endpoints_text
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


def _response(ctx: RequestContext, error: ErrorCode, message: str | None) -> Any:
    return new_response(
        ApiKey.AddRaftVoter,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
    )


def cluster_id_error(ctx: RequestContext, cluster_id: str | None) -> str | None:
    """Kafka's `hasValidClusterId`: null matches any cluster."""
    if cluster_id is None or cluster_id == ctx.broker.cluster_id:
        return None
    return f'The given id "{cluster_id}" doesn\'t match the cluster id "{ctx.broker.cluster_id}"'


def _invalid_request(ctx: RequestContext, request: Any, endpoints: list[Endpoint]) -> str | None:
    if request.voter_id < 0 or request.voter_directory_id in NULL_DIRECTORY_IDS:
        return "Add voter request didn't include a valid voter"
    listener = ctx.listener.name
    if all(endpoint.name != listener for endpoint in endpoints):
        return (
            f"Add voter request didn't include the endpoint ({endpoints_text(endpoints)}) "
            f"for the default listener {listener}"
        )
    return None


@handles(ApiKey.AddRaftVoter, 0, 1)
async def handle_add_raft_voter(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _response(
            ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        )
    if (mismatch := cluster_id_error(ctx, request.cluster_id)) is not None:
        return _response(ctx, ErrorCode.INCONSISTENT_CLUSTER_ID, mismatch)
    endpoints = [Endpoint(e.name, e.host, e.port) for e in request.listeners]
    if (invalid := _invalid_request(ctx, request, endpoints)) is not None:
        return _response(ctx, ErrorCode.INVALID_REQUEST, invalid)
    nodes = ctx.broker.nodes
    quorum = nodes.quorum
    voter = Voter(request.voter_id, request.voter_directory_id, tuple(endpoints))
    caught_up = (
        voter.node_id in nodes.live and quorum.directory_of(voter.node_id) == voter.directory_id
    )
    change = quorum.add(
        ctx.broker.features.level(KRAFT_VERSION), nodes.controller_id(), voter, caught_up
    )
    return _response(ctx, change.error, change.message)
