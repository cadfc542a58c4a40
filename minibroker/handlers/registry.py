"""The handler registry: which module serves each API key, at which versions.

ApiVersions is answered from this registry, so the advertised ranges and the served ranges
are one list. The table below names each key's module and versions, and the module is imported
when its key is first requested (`HandlerSpec.handler`): a broker starts without importing the
handlers, and the subsystems they use, that its first requests do not need. In the module,
`@handles(ApiKey.X, min, max)` binds the coroutine and checks the versions against the table.

Each broker gates the registry by the Kafka release it emulates (`api_gates`): a key is
advertised and accepted only where the release had it, at the intersection of the two ranges
(and versions a release advertised but refused, as Kafka 4's Produce v0-2, get
UNSUPPORTED_VERSION).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.releases import KafkaRelease

if TYPE_CHECKING:
    from minibroker.server.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]

# Key -> (module in this package, lowest and highest version served).
HANDLER_MODULES: dict[ApiKey, tuple[str, int, int]] = {
    ApiKey.Produce: ("produce", 0, 13),
    ApiKey.Fetch: ("fetch", 0, 18),
    ApiKey.ListOffsets: ("list_offsets", 0, 11),
    ApiKey.Metadata: ("metadata", 0, 13),
    ApiKey.OffsetCommit: ("offset_commit", 0, 10),
    ApiKey.OffsetFetch: ("offset_fetch", 0, 10),
    ApiKey.FindCoordinator: ("find_coordinator", 0, 6),
    ApiKey.JoinGroup: ("join_group", 0, 9),
    ApiKey.Heartbeat: ("heartbeat", 0, 4),
    ApiKey.LeaveGroup: ("leave_group", 0, 5),
    ApiKey.SyncGroup: ("sync_group", 0, 5),
    ApiKey.DescribeGroups: ("describe_groups", 0, 6),
    ApiKey.ListGroups: ("list_groups", 0, 5),
    ApiKey.SaslHandshake: ("sasl_handshake", 0, 1),
    ApiKey.ApiVersions: ("api_versions", 0, 4),
    ApiKey.CreateTopics: ("create_topics", 0, 7),
    ApiKey.DeleteTopics: ("delete_topics", 0, 6),
    ApiKey.DeleteRecords: ("delete_records", 0, 2),
    ApiKey.InitProducerId: ("init_producer_id", 0, 5),
    ApiKey.OffsetForLeaderEpoch: ("offset_for_leader_epoch", 0, 4),
    ApiKey.AddPartitionsToTxn: ("add_partitions_to_txn", 0, 5),
    ApiKey.AddOffsetsToTxn: ("add_offsets_to_txn", 0, 4),
    ApiKey.EndTxn: ("end_txn", 0, 5),
    ApiKey.TxnOffsetCommit: ("txn_offset_commit", 0, 5),
    ApiKey.WriteTxnMarkers: ("write_txn_markers", 0, 2),
    ApiKey.DescribeAcls: ("describe_acls", 0, 3),
    ApiKey.CreateAcls: ("create_acls", 0, 3),
    ApiKey.DeleteAcls: ("delete_acls", 0, 3),
    ApiKey.DescribeConfigs: ("describe_configs", 0, 4),
    ApiKey.AlterConfigs: ("alter_configs", 0, 2),
    ApiKey.AlterReplicaLogDirs: ("alter_replica_log_dirs", 0, 2),
    ApiKey.DescribeLogDirs: ("describe_log_dirs", 0, 5),
    ApiKey.SaslAuthenticate: ("sasl_authenticate", 0, 2),
    ApiKey.CreatePartitions: ("create_partitions", 0, 3),
    ApiKey.CreateDelegationToken: ("create_delegation_token", 1, 3),
    ApiKey.RenewDelegationToken: ("renew_delegation_token", 1, 2),
    ApiKey.ExpireDelegationToken: ("expire_delegation_token", 1, 2),
    ApiKey.DescribeDelegationToken: ("describe_delegation_token", 1, 3),
    ApiKey.DeleteGroups: ("delete_groups", 0, 2),
    ApiKey.ElectLeaders: ("elect_leaders", 0, 2),
    ApiKey.IncrementalAlterConfigs: ("incremental_alter_configs", 0, 1),
    ApiKey.AlterPartitionReassignments: ("alter_partition_reassignments", 0, 1),
    ApiKey.ListPartitionReassignments: ("list_partition_reassignments", 0, 0),
    ApiKey.OffsetDelete: ("offset_delete", 0, 0),
    ApiKey.DescribeClientQuotas: ("describe_client_quotas", 0, 1),
    ApiKey.AlterClientQuotas: ("alter_client_quotas", 0, 1),
    ApiKey.DescribeUserScramCredentials: ("describe_user_scram_credentials", 0, 0),
    ApiKey.AlterUserScramCredentials: ("alter_user_scram_credentials", 0, 0),
    ApiKey.DescribeQuorum: ("describe_quorum", 0, 2),
    ApiKey.UpdateFeatures: ("update_features", 0, 2),
    ApiKey.DescribeCluster: ("describe_cluster", 0, 2),
    ApiKey.DescribeProducers: ("describe_producers", 0, 0),
    ApiKey.UnregisterBroker: ("unregister_broker", 0, 0),
    ApiKey.DescribeTransactions: ("describe_transactions", 0, 0),
    ApiKey.ListTransactions: ("list_transactions", 0, 2),
    ApiKey.ConsumerGroupHeartbeat: ("consumer_group_heartbeat", 0, 1),
    ApiKey.ConsumerGroupDescribe: ("consumer_group_describe", 0, 1),
    ApiKey.GetTelemetrySubscriptions: ("get_telemetry_subscriptions", 0, 0),
    ApiKey.PushTelemetry: ("push_telemetry", 0, 0),
    ApiKey.ListConfigResources: ("list_config_resources", 0, 1),
    ApiKey.DescribeTopicPartitions: ("describe_topic_partitions", 0, 0),
    ApiKey.ShareGroupHeartbeat: ("share_group_heartbeat", 1, 1),
    ApiKey.ShareGroupDescribe: ("share_group_describe", 1, 1),
    ApiKey.ShareFetch: ("share_fetch", 1, 2),
    ApiKey.ShareAcknowledge: ("share_acknowledge", 1, 2),
    ApiKey.InitializeShareGroupState: ("initialize_share_group_state", 0, 0),
    ApiKey.ReadShareGroupState: ("read_share_group_state", 0, 0),
    ApiKey.WriteShareGroupState: ("write_share_group_state", 0, 1),
    ApiKey.DeleteShareGroupState: ("delete_share_group_state", 0, 0),
    ApiKey.ReadShareGroupStateSummary: ("read_share_group_state_summary", 0, 1),
    ApiKey.DescribeShareGroupOffsets: ("describe_share_group_offsets", 0, 1),
    ApiKey.AlterShareGroupOffsets: ("alter_share_group_offsets", 0, 0),
    ApiKey.DeleteShareGroupOffsets: ("delete_share_group_offsets", 0, 0),
    ApiKey.StreamsGroupHeartbeat: ("streams_group_heartbeat", 0, 0),
    ApiKey.StreamsGroupDescribe: ("streams_group_describe", 0, 0),
    ApiKey.AddRaftVoter: ("add_raft_voter", 0, 1),
    ApiKey.RemoveRaftVoter: ("remove_raft_voter", 0, 0),
}


class HandlerSpec:
    """One API as the registry serves it; its coroutine is imported on first use."""

    __slots__ = ("_handler", "api_key", "max_version", "min_version", "module")

    def __init__(self, api_key: ApiKey, module: str, min_version: int, max_version: int) -> None:
        self.api_key = api_key
        self.module = module
        self.min_version = min_version
        self.max_version = max_version
        self._handler: Handler | None = None

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    @property
    def handler(self) -> Handler:
        if self._handler is None:
            importlib.import_module(f"{__package__}.{self.module}")
            if self._handler is None:
                raise RuntimeError(f"{self.module} registers no handler for {self.api_key.name}")
        return self._handler

    def bind(self, handler: Handler) -> None:
        if self._handler is not None:
            raise RuntimeError(f"two handlers for {self.api_key.name}")
        self._handler = handler


REGISTRY: dict[int, HandlerSpec] = {
    key: HandlerSpec(key, module, low, high) for key, (module, low, high) in HANDLER_MODULES.items()
}


def handles(api_key: ApiKey, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    spec = REGISTRY.get(api_key)
    if spec is None or (spec.min_version, spec.max_version) != (min_version, max_version):
        raise RuntimeError(
            f"@handles({api_key.name}, {min_version}, {max_version}) is not in HANDLER_MODULES"
        )

    def register(handler: Handler) -> Handler:
        spec.bind(handler)
        return handler

    return register


@dataclass(frozen=True, slots=True)
class ApiGate:
    """One API as one broker offers it: advertised `advertised_min`-`max_version`, accepted
    from `accepted_min` (higher only where the release refused versions it advertised)."""

    spec: HandlerSpec
    advertised_min: int
    accepted_min: int
    max_version: int


def api_gates(release: KafkaRelease) -> dict[int, ApiGate]:
    """The registry's advertised ranges intersected with the release's, key by key."""
    gates: dict[int, ApiGate] = {}
    for key, spec in sorted(REGISTRY.items()):
        released = release.api_ranges.get(key)
        if released is None:
            continue
        low = max(spec.min_version, released[0])
        high = min(spec.max_version, released[1])
        if low <= high:
            accepted = max(low, release.refused_below.get(key, low))
            gates[key] = ApiGate(spec, low, accepted, high)
    return gates
