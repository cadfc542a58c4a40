"""The Kafka releases minibroker can emulate (`minibroker.emulate.kafka.version`): 2.8, 3.0-3.9
and 4.0-4.3, each the newest patch of its line.

A release is what its broker told clients: the API keys and version ranges of its ApiVersions
answer (`release_table.py`, derived from Kafka's request schemas at each release) and the
feature flags (KIP-584) it reported as supported, with the levels a cluster newly formatted with
it finalizes. 2.8-3.2 are ZooKeeper-mode brokers (no feature flags, no KRaft-only APIs such as
DescribeQuorum); 3.3 on are KRaft brokers, KRaft being production-ready from 3.3.

Per release, what changes for clients:
- 2.8-3.9 advertise Produce from v0 and Fetch from v0 and the other pre-2.1 versions that
  Kafka 4.0 removed (KIP-896); no `transaction.version` or `group.version` is finalized, so
  Java clients use transactions V1 and KIP-848 consumers get UNSUPPORTED_VERSION.
- ConsumerGroupHeartbeat is advertised from 3.7 and ConsumerGroupDescribe and
  DescribeTopicPartitions from 3.8; the telemetry APIs and ListClientMetricsResources from 3.7.
- 4.0: KIP-896 raised the lowest versions, but Produce stays advertised from v0 (librdkafka
  before 2.11.1 checks it before compressing, KAFKA-18659) while v0-2 requests are refused
  (`refused_below`); JoinGroup v0-1, dropped in 4.0.0, are back in 4.0.1 (KAFKA-19444).
  `transaction.version` 2 and `group.version` 1 are finalized in a new cluster.
- 4.1: share-group APIs from v1 with `share.version` supported but not finalized (preview);
  4.2: `share.version` 1 finalized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.release_table import RELEASE_API_RANGES

EMULATE_SETTING = "minibroker.emulate.kafka.version"

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
ELR_VERSION = "eligible.leader.replicas.version"
STREAMS_VERSION = "streams.version"

Range = tuple[int, int]


@dataclass(frozen=True)
class KafkaRelease:
    name: str
    api_ranges: Mapping[int, Range]
    # Feature name -> (min, max) the release's broker reported as supported.
    features: Mapping[str, Range]
    # Feature name -> the level a new cluster of this release finalizes (0 levels left out).
    finalized: Mapping[str, int]
    # API key -> lowest version accepted where the advertised range starts lower.
    refused_below: Mapping[int, int] = field(default_factory=dict)
    # A ZooKeeper-mode broker (OffsetCommit/OffsetFetch v0 kept in ZooKeeper); KRaft from 3.3.
    zookeeper: bool = False


def _parse_ranges(text: str) -> dict[int, Range]:
    ranges: dict[int, Range] = {}
    for word in text.split():
        key, _, versions = word.partition(":")
        low, _, high = versions.partition("-")
        ranges[int(key)] = (int(low), int(high or low))
    return ranges


def _kraft_3x(metadata_level: int, *more: tuple[str, Range]) -> dict[str, Range]:
    return {METADATA_VERSION: (1, metadata_level), **dict(more)}


# Feature flags: 3.x from Kafka's BrokerFeatures.defaultSupportedFeatures and MetadataVersion
# (LATEST_PRODUCTION) at each release branch; 4.x from MetadataVersion's levels
# (4.0-IV3 = 25, 4.1-IV1 = 27, 4.2-IV1 = 29, 4.3-IV0 = 30) and the features each release made
# production-ready.
_FEATURES_4_0 = {
    METADATA_VERSION: (7, 25),
    KRAFT_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
}
_FEATURES_4_1 = {
    **_FEATURES_4_0,
    METADATA_VERSION: (7, 27),
    SHARE_VERSION: (0, 1),
    STREAMS_VERSION: (0, 1),
}
_FEATURES: dict[str, dict[str, Range]] = {
    "2.8": {},
    "3.0": {},
    "3.1": {},
    "3.2": {},
    "3.3": _kraft_3x(7),
    "3.4": _kraft_3x(8),
    "3.5": _kraft_3x(11),
    "3.6": _kraft_3x(14),
    "3.7": _kraft_3x(19),
    "3.8": _kraft_3x(20),
    "3.9": _kraft_3x(21, (KRAFT_VERSION, (0, 1))),
    "4.0": _FEATURES_4_0,
    "4.1": _FEATURES_4_1,
    "4.2": {**_FEATURES_4_1, METADATA_VERSION: (7, 29)},
    "4.3": {**_FEATURES_4_1, METADATA_VERSION: (7, 30)},
}
ZOOKEEPER_RELEASES = ("2.8", "3.0", "3.1", "3.2")
_NEW_CLUSTER_4X = {TRANSACTION_VERSION: 2, GROUP_VERSION: 1}
_FINALIZED: dict[str, dict[str, int]] = {
    "4.0": _NEW_CLUSTER_4X,
    "4.1": {**_NEW_CLUSTER_4X, ELR_VERSION: 1},
    "4.2": {**_NEW_CLUSTER_4X, ELR_VERSION: 1, SHARE_VERSION: 1, STREAMS_VERSION: 1},
    "4.3": {**_NEW_CLUSTER_4X, ELR_VERSION: 1, SHARE_VERSION: 1, STREAMS_VERSION: 1},
}


def _release(name: str) -> KafkaRelease:
    features = _FEATURES[name]
    finalized = dict(_FINALIZED.get(name, {}))
    if METADATA_VERSION in features:
        finalized[METADATA_VERSION] = features[METADATA_VERSION][1]
    # KAFKA-18659: Kafka 4 advertises Produce from v0 but refuses v0-2.
    refused_below: dict[int, int] = {ApiKey.Produce: 3} if int(name.split(".")[0]) >= 4 else {}
    return KafkaRelease(
        name,
        MappingProxyType(_parse_ranges(RELEASE_API_RANGES[name])),
        MappingProxyType(features),
        MappingProxyType(finalized),
        MappingProxyType(refused_below),
        zookeeper=name in ZOOKEEPER_RELEASES,
    )


RELEASES: dict[str, KafkaRelease] = {name: _release(name) for name in RELEASE_API_RANGES}
NEWEST = next(reversed(RELEASES))


def find_release(name: str) -> KafkaRelease | None:
    """The release named `3.9` (a patch version such as `3.9.1` names its line)."""
    parts = name.strip().split(".")
    return RELEASES.get(".".join(parts[:2])) if len(parts) in (2, 3) else None
