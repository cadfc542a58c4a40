"""ApiVersions against Apache Kafka 4.3: every range advertised by default (emulating 4.3) is
Kafka 4.3's, and none is lost.

`KAFKA_4_3` is a table of facts: the version range a Kafka 4.3.0 broker advertises to clients
for each API key its broker listener serves (the `validVersions` of the 4.3 message
definitions, without a top version marked `latestVersionUnstable`; Produce advertised from v0
for librdkafka's feature probe, KAFKA-18659). A served key whose range differs from Kafka
4.3's fails, and so does dropping a key from `SERVED`, the keys minibroker serves today.
"""

from __future__ import annotations

import pytest

from minibroker.handlers import load_all
from minibroker.handlers.registry import REGISTRY, api_gates
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.releases import RELEASES
from tests.wire import WireClient

KAFKA_4_3: dict[ApiKey, tuple[int, int]] = {
    ApiKey.Produce: (0, 13),
    ApiKey.Fetch: (4, 18),
    ApiKey.ListOffsets: (1, 11),
    ApiKey.Metadata: (0, 13),
    ApiKey.OffsetCommit: (2, 10),
    ApiKey.OffsetFetch: (1, 10),
    ApiKey.FindCoordinator: (0, 6),
    ApiKey.JoinGroup: (0, 9),
    ApiKey.Heartbeat: (0, 4),
    ApiKey.LeaveGroup: (0, 5),
    ApiKey.SyncGroup: (0, 5),
    ApiKey.DescribeGroups: (0, 6),
    ApiKey.ListGroups: (0, 5),
    ApiKey.SaslHandshake: (0, 1),
    ApiKey.ApiVersions: (0, 4),
    ApiKey.CreateTopics: (2, 7),
    ApiKey.DeleteTopics: (1, 6),
    ApiKey.DeleteRecords: (0, 2),
    ApiKey.InitProducerId: (0, 5),
    ApiKey.OffsetForLeaderEpoch: (2, 4),
    ApiKey.AddPartitionsToTxn: (0, 5),
    ApiKey.AddOffsetsToTxn: (0, 4),
    ApiKey.EndTxn: (0, 5),
    ApiKey.WriteTxnMarkers: (1, 2),
    ApiKey.TxnOffsetCommit: (0, 5),
    ApiKey.DescribeAcls: (1, 3),
    ApiKey.CreateAcls: (1, 3),
    ApiKey.DeleteAcls: (1, 3),
    ApiKey.DescribeConfigs: (1, 4),
    ApiKey.AlterConfigs: (0, 2),
    ApiKey.AlterReplicaLogDirs: (1, 2),
    ApiKey.DescribeLogDirs: (1, 5),
    ApiKey.SaslAuthenticate: (0, 2),
    ApiKey.CreatePartitions: (0, 3),
    ApiKey.CreateDelegationToken: (1, 3),
    ApiKey.RenewDelegationToken: (1, 2),
    ApiKey.ExpireDelegationToken: (1, 2),
    ApiKey.DescribeDelegationToken: (1, 3),
    ApiKey.DeleteGroups: (0, 2),
    ApiKey.ElectLeaders: (0, 2),
    ApiKey.IncrementalAlterConfigs: (0, 1),
    ApiKey.AlterPartitionReassignments: (0, 1),
    ApiKey.ListPartitionReassignments: (0, 0),
    ApiKey.OffsetDelete: (0, 0),
    ApiKey.DescribeClientQuotas: (0, 1),
    ApiKey.AlterClientQuotas: (0, 1),
    ApiKey.DescribeUserScramCredentials: (0, 0),
    ApiKey.AlterUserScramCredentials: (0, 0),
    ApiKey.DescribeQuorum: (0, 2),
    ApiKey.UpdateFeatures: (0, 2),
    ApiKey.DescribeCluster: (0, 2),
    ApiKey.DescribeProducers: (0, 0),
    ApiKey.UnregisterBroker: (0, 0),
    ApiKey.DescribeTransactions: (0, 0),
    ApiKey.ListTransactions: (0, 2),
    ApiKey.ConsumerGroupHeartbeat: (0, 1),
    ApiKey.ConsumerGroupDescribe: (0, 1),
    ApiKey.GetTelemetrySubscriptions: (0, 0),
    ApiKey.PushTelemetry: (0, 0),
    ApiKey.ListConfigResources: (0, 1),
    ApiKey.DescribeTopicPartitions: (0, 0),
    ApiKey.ShareGroupHeartbeat: (1, 1),
    ApiKey.ShareGroupDescribe: (1, 1),
    ApiKey.ShareFetch: (1, 2),
    ApiKey.ShareAcknowledge: (1, 2),
    ApiKey.AddRaftVoter: (0, 1),
    ApiKey.InitializeShareGroupState: (0, 0),
    ApiKey.ReadShareGroupState: (0, 0),
    ApiKey.WriteShareGroupState: (0, 1),
    ApiKey.DeleteShareGroupState: (0, 0),
    ApiKey.ReadShareGroupStateSummary: (0, 1),
    ApiKey.RemoveRaftVoter: (0, 0),
    ApiKey.StreamsGroupHeartbeat: (0, 0),
    ApiKey.StreamsGroupDescribe: (0, 0),
    ApiKey.DescribeShareGroupOffsets: (0, 1),
    ApiKey.AlterShareGroupOffsets: (0, 0),
    ApiKey.DeleteShareGroupOffsets: (0, 0),
}

# The keys served today. The rest of KAFKA_4_3 is broker-to-broker or controller traffic,
# or belongs to other issues (ACLs, quotas, replication, KIP-848, share and streams groups,
# delegation tokens); once served, their ranges must be Kafka 4.3's too.
SERVED: frozenset[ApiKey] = frozenset(
    {
        ApiKey.Produce,
        ApiKey.Fetch,
        ApiKey.ListOffsets,
        ApiKey.Metadata,
        ApiKey.OffsetCommit,
        ApiKey.OffsetFetch,
        ApiKey.FindCoordinator,
        ApiKey.JoinGroup,
        ApiKey.Heartbeat,
        ApiKey.LeaveGroup,
        ApiKey.SyncGroup,
        ApiKey.DescribeGroups,
        ApiKey.ListGroups,
        ApiKey.SaslHandshake,
        ApiKey.ApiVersions,
        ApiKey.CreateTopics,
        ApiKey.DeleteTopics,
        ApiKey.DeleteRecords,
        ApiKey.InitProducerId,
        ApiKey.OffsetForLeaderEpoch,
        ApiKey.AddPartitionsToTxn,
        ApiKey.AddOffsetsToTxn,
        ApiKey.EndTxn,
        ApiKey.TxnOffsetCommit,
        ApiKey.DescribeAcls,
        ApiKey.CreateAcls,
        ApiKey.DeleteAcls,
        ApiKey.DescribeConfigs,
        ApiKey.AlterConfigs,
        ApiKey.DescribeLogDirs,
        ApiKey.SaslAuthenticate,
        ApiKey.CreatePartitions,
        ApiKey.CreateDelegationToken,
        ApiKey.RenewDelegationToken,
        ApiKey.ExpireDelegationToken,
        ApiKey.DescribeDelegationToken,
        ApiKey.DeleteGroups,
        ApiKey.ElectLeaders,
        ApiKey.AlterReplicaLogDirs,
        ApiKey.IncrementalAlterConfigs,
        ApiKey.AlterPartitionReassignments,
        ApiKey.ListPartitionReassignments,
        ApiKey.OffsetDelete,
        ApiKey.DescribeClientQuotas,
        ApiKey.AlterClientQuotas,
        ApiKey.DescribeUserScramCredentials,
        ApiKey.AlterUserScramCredentials,
        ApiKey.DescribeCluster,
        ApiKey.DescribeProducers,
        ApiKey.DescribeTransactions,
        ApiKey.ConsumerGroupHeartbeat,
        ApiKey.ConsumerGroupDescribe,
        ApiKey.ListTransactions,
        ApiKey.DescribeQuorum,
        ApiKey.UpdateFeatures,
        ApiKey.GetTelemetrySubscriptions,
        ApiKey.PushTelemetry,
        ApiKey.ListConfigResources,
        ApiKey.DescribeTopicPartitions,
        ApiKey.ShareGroupHeartbeat,
        ApiKey.ShareGroupDescribe,
        ApiKey.DescribeShareGroupOffsets,
        ApiKey.AlterShareGroupOffsets,
        ApiKey.DeleteShareGroupOffsets,
        ApiKey.InitializeShareGroupState,
        ApiKey.ReadShareGroupState,
        ApiKey.WriteShareGroupState,
        ApiKey.DeleteShareGroupState,
        ApiKey.ReadShareGroupStateSummary,
        ApiKey.StreamsGroupHeartbeat,
        ApiKey.StreamsGroupDescribe,
        ApiKey.WriteTxnMarkers,
        ApiKey.UnregisterBroker,
        ApiKey.AddRaftVoter,
        ApiKey.RemoveRaftVoter,
    }
)


@pytest.fixture(scope="module", autouse=True)
def _handlers() -> None:
    load_all()


def test_every_served_key_is_still_served() -> None:
    missing = sorted(key.name for key in SERVED if key not in REGISTRY)
    assert missing == []


@pytest.mark.parametrize("key", sorted(KAFKA_4_3), ids=lambda key: key.name)
def test_served_range_is_kafka_4_3s(key: ApiKey) -> None:
    gate = api_gates(RELEASES["4.3"]).get(key)
    if gate is None:
        assert key not in SERVED
        return
    assert (gate.advertised_min, gate.max_version) == KAFKA_4_3[key]


def test_nothing_beyond_kafka_4_3_is_advertised() -> None:
    assert sorted(REGISTRY.keys() - KAFKA_4_3.keys()) == []


def test_api_versions_on_the_wire_is_the_registry(bootstrap: str) -> None:
    with WireClient(bootstrap) as client:
        for version in range(5):
            response = client.call(ApiKey.ApiVersions, version)
            on_the_wire = [(k.api_key, k.min_version, k.max_version) for k in response.api_keys]
            assert on_the_wire == [
                (key, gate.advertised_min, gate.max_version)
                for key, gate in api_gates(RELEASES["4.3"]).items()
            ]


def test_kafka_python_3_takes_minibroker_for_kafka_4_3(bootstrap: str) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        assert admin._client.check_version() == (4, 3)
    finally:
        admin.close()
