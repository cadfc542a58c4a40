"""The consumer offsets a ZooKeeper-mode Kafka broker kept in ZooKeeper, for OffsetCommit v0
and OffsetFetch v0 under an emulated Kafka 2.8-3.2.

Kafka 2.8-3.9's `KafkaApis` sends a v0 commit to ZooKeeper (`/consumers/<group>/offsets/<topic>/
<partition>`, the offset alone: no metadata, leader epoch or timestamps) and answers a v0 fetch
from there, apart from the group coordinator's `__consumer_offsets`: a v0 client and a v1+
client of the same group do not see each other's commits. A KRaft broker (3.3 on) has no
ZooKeeper and answers both with UNSUPPORTED_VERSION. These offsets are kept in memory only: a
restarted broker has lost them (ZooKeeper kept them).
"""

from __future__ import annotations

from minibroker.cluster.state import Cluster
from minibroker.protocol.errors import ErrorCode

NO_OFFSET = -1


class ZooKeeperOffsets:
    def __init__(self, cluster: Cluster, metadata_max_bytes: int) -> None:
        self._cluster = cluster
        self._metadata_max_bytes = metadata_max_bytes
        self._offsets: dict[tuple[str, str, int], int] = {}

    def commit(
        self, group_id: str, topic: str, partition: int, offset: int, metadata: str | None
    ) -> ErrorCode:
        """Kafka's `commitOffsetsToZookeeper`, after the unknown-partition check it runs first."""
        if self._cluster.partition(topic, partition) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if metadata is not None and len(metadata) > self._metadata_max_bytes:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        self._offsets[(group_id, topic, partition)] = offset
        return ErrorCode.NO_ERROR

    def fetch(self, group_id: str, topic: str, partition: int) -> int:
        """The committed offset, -1 for none or a partition that does not exist."""
        if self._cluster.partition(topic, partition) is None:
            return NO_OFFSET
        return self._offsets.get((group_id, topic, partition), NO_OFFSET)
