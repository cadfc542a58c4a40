"""`__share_group_state`: where the share coordinator's state survives a restart (records in
`state_records.py`).

The topic has `share.coordinator.state.topic.num.partitions` partitions (50), is compacted,
and a share partition's records go to the partition of its coordinator key
(`group:topicId:partition`, the topic id as Kafka writes it). After every change of a share
partition's state its whole state is written as one ShareSnapshot (state and leader epochs,
start offset and state batches: available, acknowledged or archived runs with delivery
counts); deleting a share partition's state writes a tombstone. At start the latest record of
each key is read back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.record_codec import RecordFormatError
from minibroker.groups.share.state_records import (
    ShareSnapshot,
    ShareStateKey,
    coordinator_key,
    decode_key,
    decode_snapshot,
    encode_key,
    encode_snapshot,
)
from minibroker.internal.topic import InternalTopic, ReadMarker
from minibroker.protocol.errors import ErrorCode

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"


class ShareStateTopic:
    def __init__(self, cluster: Cluster, config: BrokerConfig) -> None:
        self.topic = InternalTopic(
            cluster,
            SHARE_STATE_TOPIC,
            config.get_int("share.coordinator.state.topic.num.partitions"),
            config.get_int("share.coordinator.state.topic.segment.bytes"),
        )

    def write(self, key: ShareStateKey, snapshot: ShareSnapshot | None, now_ms: int) -> ErrorCode:
        """Store the share partition's state (None: a tombstone, its state is deleted)."""
        value = None if snapshot is None else encode_snapshot(snapshot)
        return self.topic.append_records(coordinator_key(key), [(encode_key(key), value)], now_ms)

    def load(self) -> dict[ShareStateKey, ShareSnapshot]:
        """The latest stored state of every share partition."""
        found: dict[ShareStateKey, ShareSnapshot] = {}
        for key, value in self._records():
            if value is None:
                found.pop(key, None)
            else:
                found[key] = value
        return found

    def _records(self) -> Iterator[tuple[ShareStateKey, ShareSnapshot | None]]:
        for partition in self.topic.created_partitions():
            for item in self.topic.read(partition):
                if isinstance(item, ReadMarker):
                    continue
                key_bytes, value_bytes, _ = item
                try:
                    key = decode_key(key_bytes)
                    value = None if value_bytes is None else decode_snapshot(value_bytes)
                except RecordFormatError as exc:
                    log.warning("skipping a %s record: %s", SHARE_STATE_TOPIC, exc)
                    continue
                yield key, value
