"""RemoveRaftVoter (key 81), version 0.

Behaviour: as Kafka's controller (a broker forwards the request to it) and its
`KafkaRaftClient`/`RemoveVoterHandler` (KIP-853), on the quorum `cluster/quorum.py` keeps.
Checks, in Kafka's order: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED; a cluster
id other than this cluster's (null is any) is INCONSISTENT_CLUSTER_ID; a negative voter id or
the null directory id is INVALID_REQUEST ("Remove voter request didn't include a valid
voter"); kraft.version 0 (a static quorum) is UNSUPPORTED_VERSION ("Cluster doesn't support
removing voter because the kraft.version feature is 0"); a voter not in the set with that
directory id, or the last voter, is VOTER_NOT_FOUND ("Cannot remove voter ... from the set of
voters ..."). Then the voter leaves the set (a live node goes on as an observer); removing the
leader makes the lowest remaining live voter lead, with a new leader epoch, as Kafka's leader
resigns once the change is committed.

Version notes: v0 is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.cluster.features import KRAFT_VERSION
from minibroker.cluster.quorum import NULL_DIRECTORY_IDS
from minibroker.handlers.add_raft_voter import cluster_id_error
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext


def _response(ctx: RequestContext, error: ErrorCode, message: str | None) -> Any:
    return new_response(
        ApiKey.RemoveRaftVoter,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
    )


@handles(ApiKey.RemoveRaftVoter, 0, 0)
async def handle_remove_raft_voter(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        return _response(
            ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        )
    if (mismatch := cluster_id_error(ctx, request.cluster_id)) is not None:
        return _response(ctx, ErrorCode.INCONSISTENT_CLUSTER_ID, mismatch)
    if request.voter_id < 0 or request.voter_directory_id in NULL_DIRECTORY_IDS:
        return _response(
            ctx, ErrorCode.INVALID_REQUEST, "Remove voter request didn't include a valid voter"
        )
    nodes = ctx.broker.nodes
    change = nodes.quorum.remove(
        ctx.broker.features.level(KRAFT_VERSION),
        nodes.controller_id(),
        request.voter_id,
        request.voter_directory_id,
    )
    return _response(ctx, change.error, change.message)
