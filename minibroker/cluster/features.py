"""Feature flags (KIP-584), as a Kafka 4.3 broker reports them and as UpdateFeatures changes them.

ApiVersions v3+ lists the features this broker supports (a level range each) and the levels
finalized for the cluster, with an epoch that grows with every change. The seven features are
the ones a Kafka 4.3 broker lists; the supported ranges are the levels minibroker implements,
so UpdateFeatures cannot finalize a level whose behaviour is not served:

| feature | supported | finalized | why |
|---|---|---|---|
| metadata.version | 7-30 (3.3-IV3 .. 4.3-IV0) | 30 | as a new 4.3 cluster (clients only read it) |
| transaction.version | 0-2 | `minibroker.transaction.version` (2) | KIP-890: 1 = TV1, 2 = TV2 |
| kraft.version | 0-1 | 0 | a static quorum (`controller.quorum.voters`); 1: dynamic, KIP-853 |
| group.version | 0-1 | 1 | KIP-848 consumer groups (at 0 their APIs answer UNSUPPORTED_VERSION) |
| eligible.leader.replicas.version | 0-1 | 1 | KIP-966 eligible leader replicas (new 4.3 cluster) |
| share.version | 0-1 | 1 | KIP-932 share groups (at 0 their APIs answer UNSUPPORTED_VERSION) |
| streams.version | 0-1 | 1 | KIP-1071 streams groups (at 0 their APIs answer UNSUPPORTED_VERSION) |

`transaction.version` defaults to 2 because a cluster newly formatted with Kafka 4.3 finalizes
TV2 (its latest production level), and Java 4.x clients then use transactions V2 (EndTxn v5,
Produce v12 adding partitions implicitly); `minibroker.transaction.version=1` (or 0) gives a
TV1 cluster, as a cluster upgraded from 3.x without `kafka-features upgrade` is. Like Kafka's
`kafka-storage format --feature`, the setting is the level a new data directory starts with:
a level changed by UpdateFeatures is stored in `<data dir>/minibroker-features.json` and
wins over the setting after a restart. Level 0 is omitted from the finalized list, as Kafka
omits it; below ApiVersions v4 a supported range starting at 0 is omitted too (KAFKA-17011).

Under an emulated Kafka release (`minibroker.emulate.kafka.version`, `protocol/releases.py`)
the supported features are those that release's broker reported, each capped at what
minibroker implements (metadata.version as the release reported it), and a new data
directory finalizes the levels a cluster newly formatted with that release did: under 2.8-3.2
(ZooKeeper mode) none, under 3.3-3.9 only metadata.version, so clients see no
`transaction.version` (Java uses transactions V1) and KIP-848 and share-group requests get
UNSUPPORTED_VERSION. `minibroker.transaction.version` is capped at the release's maximum, and
levels stored by an earlier run are capped the same way.

`update()` is Kafka's `FeatureControlManager.updateFeature`: INVALID_UPDATE_VERSION with
Kafka's messages for a negative level, a level outside the supported range (an unknown
feature supports only 0), a downgrade without a downgrade type, a "downgrade" to a higher
level, and metadata.version downgrades (refused: they might delete metadata information).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING

from minibroker.config import ConfigError
from minibroker.log.checkpoints import write_atomically
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.releases import EMULATE_SETTING, RELEASES, KafkaRelease, find_release

if TYPE_CHECKING:
    from minibroker.config import BrokerConfig

FEATURES_FILE = "minibroker-features.json"
_FILE_VERSION = 1
TRANSACTION_VERSION = "transaction.version"
METADATA_VERSION = "metadata.version"
GROUP_VERSION = "group.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"
KRAFT_VERSION = "kraft.version"
ELR_VERSION = "eligible.leader.replicas.version"
TRANSACTION_VERSION_SETTING = "minibroker.transaction.version"
METADATA_VERSION_4_3_IV0 = 30
METADATA_VERSION_MINIMUM = 7  # 3.3-IV3, the lowest a Kafka 4.x cluster accepts
LOCAL_CONTROLLER = "Local controller"

SUPPORTED: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (METADATA_VERSION_MINIMUM, METADATA_VERSION_4_3_IV0),
    TRANSACTION_VERSION: (0, 2),
    KRAFT_VERSION: (0, 1),
    GROUP_VERSION: (0, 1),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 1),
    STREAMS_VERSION: (0, 1),
}


class UpgradeType(IntEnum):
    """UpdateFeatures' UpgradeType (v1+); v0's AllowDowngrade maps to the first two."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def of(cls, value: int) -> UpgradeType:
        return cls(value) if value in (1, 2, 3) else cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class UpdateResult:
    error: ErrorCode = ErrorCode.NO_ERROR
    message: str | None = None


def emulated_release(config: BrokerConfig) -> KafkaRelease:
    """The release named by `minibroker.emulate.kafka.version`; ConfigError for another name."""
    name = config.get_str(EMULATE_SETTING)
    release = find_release(name)
    if release is None:
        raise ConfigError(
            f"Invalid value {name} for configuration {EMULATE_SETTING}: one of "
            + ", ".join(RELEASES)
        )
    return release


def supported_under(release: KafkaRelease) -> dict[str, tuple[int, int]]:
    """The release's supported features, each capped at the levels minibroker implements."""
    supported: dict[str, tuple[int, int]] = {}
    for name, (ours_low, ours_high) in SUPPORTED.items():
        if name not in release.features:
            continue
        low, high = release.features[name]
        if name == METADATA_VERSION:
            supported[name] = (low, high)
        else:
            supported[name] = (max(low, ours_low), min(high, ours_high))
    return supported


def _capped(levels: dict[str, int], supported: dict[str, tuple[int, int]]) -> dict[str, int]:
    capped = {name: min(level, supported.get(name, (0, 0))[1]) for name, level in levels.items()}
    return {name: level for name, level in capped.items() if level > 0}


class Features:
    def __init__(
        self,
        finalized: dict[str, int],
        epoch: int,
        path: Path | None,
        node_id: int,
        supported: dict[str, tuple[int, int]] | None = None,
    ) -> None:
        self.supported = dict(SUPPORTED) if supported is None else supported
        self.finalized = _capped(finalized, self.supported)
        self.epoch = epoch
        self.node_id = node_id
        self._path = path

    @classmethod
    def open(cls, config: BrokerConfig, data_dir: Path | None, node_id: int = 1) -> Features:
        path = None if data_dir is None else data_dir / FEATURES_FILE
        release = emulated_release(config)
        supported = supported_under(release)
        if path is not None and path.exists():
            stored = json.loads(path.read_text())
            finalized = {str(k): int(v) for k, v in stored["finalized"].items()}
            return cls(finalized, int(stored["epoch"]), path, node_id, supported)
        level = config.get_int(TRANSACTION_VERSION_SETTING)
        low, high = SUPPORTED[TRANSACTION_VERSION]
        if not low <= level <= high:
            raise ConfigError(
                f"{TRANSACTION_VERSION_SETTING}={level}: {TRANSACTION_VERSION} supports "
                f"levels {low}-{high}"
            )
        finalized = {**release.finalized, TRANSACTION_VERSION: level}
        epoch = 1 if release.features else -1
        return cls(finalized, epoch, path, node_id, supported)

    def level(self, feature: str) -> int:
        return self.finalized.get(feature, 0)

    @property
    def transaction_version(self) -> int:
        return self.level(TRANSACTION_VERSION)

    @property
    def consumer_groups_enabled(self) -> bool:
        """group.version 1+: the KIP-848 consumer group protocol (Kafka's GroupVersion GV_1)."""
        return self.level(GROUP_VERSION) >= 1

    @property
    def elr_enabled(self) -> bool:
        """eligible.leader.replicas.version 1+: KIP-966 (Kafka's `isElrFeatureEnabled`)."""
        return self.level(ELR_VERSION) >= 1

    @property
    def share_groups_enabled(self) -> bool:
        """share.version 1+: KIP-932 share groups (Kafka's ShareVersion SV_1)."""
        return self.level(SHARE_VERSION) >= 1

    @property
    def streams_groups_enabled(self) -> bool:
        """streams.version 1+: KIP-1071 streams groups (Kafka's StreamsVersion SV_1)."""
        return self.level(STREAMS_VERSION) >= 1

    def supported_list(self, api_version: int) -> list[tuple[str, int, int]]:
        """(name, min, max); below ApiVersions v4 a range starting at 0 is left out."""
        return [
            (name, low, high)
            for name, (low, high) in self.supported.items()
            if api_version >= 4 or low > 0
        ]

    def finalized_list(self) -> list[tuple[str, int]]:
        return [(name, level) for name, level in sorted(self.finalized.items()) if level > 0]

    # ---- UpdateFeatures ---------------------------------------------------------------------

    def check(self, feature: str, level: int, upgrade_type: UpgradeType) -> UpdateResult:
        """Kafka's FeatureControlManager.updateFeature, without applying anything."""
        if upgrade_type == UpgradeType.UNKNOWN:
            return _invalid(
                feature, level, "The controller does not support the given upgrade type."
            )
        if level < 0:
            return _invalid(feature, level, "A feature version cannot be less than 0.")
        low, high = self.supported.get(feature, (0, 0))
        if not low <= level <= high:
            who = f"{LOCAL_CONTROLLER} {self.node_id}"
            reason = (
                f"{who} does not support this feature."
                if high == 0
                else f"{who} only supports versions {low}-{high}"
            )
            return _invalid(feature, level, reason)
        current = self.level(feature)
        if level < current and upgrade_type == UpgradeType.UPGRADE:
            return _invalid(
                feature,
                level,
                "Can't downgrade the version of this feature without setting the upgrade type "
                "to either safe or unsafe downgrade.",
            )
        if level > current and upgrade_type != UpgradeType.UPGRADE:
            return _invalid(feature, level, "Can't downgrade to a newer version.")
        if feature == METADATA_VERSION and level < current:
            return _invalid_metadata_version(level, upgrade_type)
        return UpdateResult()

    def apply(self, updates: dict[str, int]) -> None:
        """Finalize the levels (all checked), bump the epoch and store them."""
        if not updates:
            return
        for feature, level in updates.items():
            if level == 0:
                self.finalized.pop(feature, None)
            else:
                self.finalized[feature] = level
        self.epoch += 1
        self._store()

    def _store(self) -> None:
        if self._path is None:
            return
        content = {"version": _FILE_VERSION, "epoch": self.epoch, "finalized": self.finalized}
        write_atomically(self._path, json.dumps(content))


def _invalid(feature: str, level: int, reason: str) -> UpdateResult:
    return UpdateResult(
        ErrorCode.INVALID_UPDATE_VERSION,
        f"Invalid update version {level} for feature {feature}. {reason}",
    )


def _invalid_metadata_version(level: int, upgrade_type: UpgradeType) -> UpdateResult:
    """Kafka refuses a metadata.version downgrade that changes metadata; minibroker keeps no
    per-level metadata table and refuses every downgrade the same way."""
    if upgrade_type == UpgradeType.UNSAFE_DOWNGRADE:
        reason = "Unsafe metadata downgrade is not supported in this version."
    else:
        reason = (
            "Refusing to perform the requested downgrade because it might delete metadata "
            "information. Retry using UNSAFE_DOWNGRADE if you want to force the downgrade "
            "to proceed."
        )
    return UpdateResult(
        ErrorCode.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. {reason}"
    )
