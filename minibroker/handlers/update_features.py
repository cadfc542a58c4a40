"""UpdateFeatures (key 57), versions 0-2.

Behaviour (Kafka's `QuorumController.updateFeatures` and `FeatureControlManager`): each
update names a feature, a level and how to get there (UPGRADE, SAFE_DOWNGRADE,
UNSAFE_DOWNGRADE). The request is all or nothing: the first update that fails (in request
order) is the top-level error, INVALID_UPDATE_VERSION with Kafka's message ("Invalid update
version 3 for feature transaction.version. Local controller 1 only supports versions 0-2",
"... does not support this feature." for a feature minibroker does not implement or does not
know, "A feature version cannot be less than 0.", a downgrade without a downgrade type, a
"downgrade" to a higher level, "Invalid metadata.version N. ..." for metadata.version
downgrades), and nothing changes. Otherwise the levels are finalized (level 0 removes the
feature), the finalized-features epoch goes up and the levels are stored in the data directory
(`cluster/features.py`), unless ValidateOnly. ApiVersions shows the new levels at once; a
change of `transaction.version` applies to the next transactions clients start; kraft.version 1
makes the metadata quorum dynamic (KIP-853: AddRaftVoter, RemoveRaftVoter);
eligible.leader.replicas.version 1 sets the cluster-level min.insync.replicas (to the static
setting) unless set and removes broker-level ones (`cluster/dynamic_configs.py`), and 0 clears
every partition's ELR. It needs
ALTER on the cluster (Kafka's controller checks it first), else the top-level error is
CLUSTER_AUTHORIZATION_FAILED ("Request ... is not authorized.") with no results.

Version notes: v0 has AllowDowngrade (true: SAFE_DOWNGRADE) where v1+ has UpgradeType (an
unknown type is refused with "The controller does not support the given upgrade type.");
ValidateOnly from v1. v0-1 answer a result per feature (NONE for each, or none when the
request failed, as Kafka 4's `createWithErrors`); v2 has the top-level error only.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.auth.authorizer import cluster_denied_message
from minibroker.cluster.features import ELR_VERSION, KRAFT_VERSION, UpdateResult, UpgradeType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.UpdateFeatures, "response", "UpdatableFeatureResult")
FIRST_UPGRADE_TYPE_VERSION = 1


def _upgrade_type(api_version: int, update: Any) -> UpgradeType:
    if api_version < FIRST_UPGRADE_TYPE_VERSION:
        return UpgradeType.SAFE_DOWNGRADE if update.allow_downgrade else UpgradeType.UPGRADE
    return UpgradeType.of(update.upgrade_type)


def _update(ctx: RequestContext, request: Any) -> UpdateResult:
    features = ctx.broker.features
    levels: dict[str, int] = {}
    for update in request.feature_updates:
        upgrade_type = _upgrade_type(ctx.api_version, update)
        result = features.check(update.feature, update.max_version_level, upgrade_type)
        if result.error != ErrorCode.NO_ERROR:
            return result
        levels[update.feature] = update.max_version_level
    validate_only = ctx.api_version >= FIRST_UPGRADE_TYPE_VERSION and request.validate_only
    if not validate_only:
        features.apply(levels)
        if KRAFT_VERSION in levels:  # the quorum turns dynamic with the voter of this moment
            nodes = ctx.broker.nodes
            nodes.quorum.voters(features.level(KRAFT_VERSION), nodes.controller_id())
        if features.elr_enabled:
            _make_elr_safe(ctx)
        elif ELR_VERSION in levels:  # Kafka's ClearElrRecord for every partition
            for partition in ctx.broker.cluster.replicated_partitions():
                assert partition.replication is not None
                partition.replication.elr, partition.replication.last_known_elr = [], []
            ctx.broker.cluster.write_replication_state()
    return UpdateResult()


def _make_elr_safe(ctx: RequestContext) -> None:
    """Kafka's `maybeGenerateElrSafetyRecords`: min.insync.replicas at the cluster level only."""
    broker = ctx.broker
    nodes = list(broker.nodes.brokers.values())
    owner = next(node for node in nodes if node.owns_state)
    if broker.dynamic_configs.ensure_elr_safety(owner.static_config.get_int("min.insync.replicas")):
        broker.dynamic_configs.apply(nodes, owner, broker.cluster)


@handles(ApiKey.UpdateFeatures, 0, 2)
async def handle_update_features(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = cluster_denied_message("UpdateFeatures", ctx.principal)
        result = UpdateResult(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
    else:
        result = _update(ctx, request)
    results = (
        [
            _Result(feature=update.feature, error_code=result.error, error_message=None)
            for update in request.feature_updates
        ]
        if result.error == ErrorCode.NO_ERROR
        else []
    )
    return new_response(
        ApiKey.UpdateFeatures,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=result.error,
        error_message=result.message,
        results=results,
    )
