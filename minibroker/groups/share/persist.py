"""`__share_group_state`: where share-partition state survives a restart, as Kafka's share
coordinator keeps it (records in `state_records.py`).

The topic has `share.coordinator.state.topic.num.partitions` partitions (50), is compacted,
and a share partition's records go to the partition of its coordinator key
(`group:topicId:partition`). After every change of a share partition its whole state is
written as one ShareSnapshot (start offset and runs of in-flight records: available,
acknowledged or archived, with delivery counts; an acquired record is stored as available, so
after a restart it is delivered again); forgetting a share partition writes a tombstone.
At start the latest record of each key is read back.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.record_codec import RecordFormatError
from minibroker.groups.share.partition import DurableRun, RecordState, SharePartition
from minibroker.groups.share.state_records import (
    ShareSnapshot,
    ShareStateKey,
    StateBatch,
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
StoredState = tuple[int, list[DurableRun]]  # start offset, runs


class ShareStateTopic:
    def __init__(self, cluster: Cluster, config: BrokerConfig) -> None:
        self.topic = InternalTopic(
            cluster,
            SHARE_STATE_TOPIC,
            config.get_int("share.coordinator.state.topic.num.partitions"),
            config.get_int("share.coordinator.state.topic.segment.bytes"),
        )

    def write(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        index: int,
        share: SharePartition | None,
        now_ms: int,
    ) -> ErrorCode:
        """Store the share partition's state (None: forget it)."""
        key = ShareStateKey(group_id, topic_id, index)
        value = None if share is None else encode_snapshot(_snapshot(share))
        return self.topic.append_records(coordinator_key(key), [(encode_key(key), value)], now_ms)

    def load(self) -> dict[ShareStateKey, StoredState]:
        """The latest stored state of every share partition."""
        found: dict[ShareStateKey, StoredState] = {}
        for key, value in self._records():
            if value is None:
                found.pop(key, None)
            else:
                runs = [
                    (b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
                    for b in value.state_batches
                ]
                found[key] = (value.start_offset, runs)
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


def _snapshot(share: SharePartition) -> ShareSnapshot:
    return ShareSnapshot(
        snapshot_epoch=0,
        state_epoch=0,
        leader_epoch=0,
        start_offset=share.start_offset,
        state_batches=tuple(
            StateBatch(first, last, int(state), count)
            for first, last, state, count in share.durable_runs()
        ),
    )
