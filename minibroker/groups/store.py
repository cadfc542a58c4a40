"""`__consumer_offsets`: where committed offsets and group metadata are written and reloaded.

An internal topic (internal/topic.py): created the first time a group needs it (FindCoordinator,
or a write) with `offsets.topic.num.partitions` partitions and
`segment.bytes=offsets.topic.segment.bytes`; a group's records go to the partition of its group
id. Transactional offset commits go through the producer state as Kafka's appends of origin
COORDINATOR (epoch checked, sequences not): they open the producer's transaction on the
partition, so its last stable offset and `.txnindex` account for them while the broker runs, as
after a log replay.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from minibroker.cluster.state import Cluster, Partition
from minibroker.groups.consumer_records import (
    CONSUMER_GROUP_RECORD_TYPES,
    ConsumerGroupRecord,
    decode_consumer_group_record,
    record_type,
)
from minibroker.groups.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    RecordFormatError,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from minibroker.groups.share.records import SHARE_GROUP_RECORD_TYPES
from minibroker.groups.share.records import decode_key as share_key
from minibroker.groups.streams.records import STREAMS_GROUP_RECORD_TYPES
from minibroker.groups.streams.records import decode_key as streams_key
from minibroker.internal.topic import InternalTopic, KeyedRecord, ReadMarker
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import NO_PRODUCER_ID
from minibroker.txn.producers import CoordinatorBatch, ProducerStateManager

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

StoredRecord = KeyedRecord


@dataclass(frozen=True, slots=True)
class LoadedOffset:
    key: OffsetKey
    value: OffsetValue | None
    # The producer of a transactional offset commit (TxnOffsetCommit), else -1.
    txn_producer_id: int = NO_PRODUCER_ID


@dataclass(frozen=True, slots=True)
class LoadedTxnMarker:
    """A COMMIT/ABORT marker: the producer's pending offsets in this partition end."""

    partition: int
    producer_id: int
    commit: bool


@dataclass(frozen=True, slots=True)
class LoadedGroup:
    key: GroupKey
    value: GroupValue | None


@dataclass(frozen=True, slots=True)
class LoadedConsumerRecord:
    """A KIP-848 consumer-group record (consumer_records.py), value None for a tombstone."""

    record: ConsumerGroupRecord


@dataclass(frozen=True, slots=True)
class LoadedStreamsRecord:
    """A KIP-1071 streams-group record (streams/records.py), value None for a tombstone."""

    group_id: str
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class LoadedShareRecord:
    """A KIP-932 share-group record (share/records.py), value None for a tombstone."""

    group_id: str
    key: bytes
    value: bytes | None


Loaded = (
    LoadedOffset
    | LoadedGroup
    | LoadedTxnMarker
    | LoadedConsumerRecord
    | LoadedStreamsRecord
    | LoadedShareRecord
)


class OffsetsTopic(InternalTopic):
    def __init__(
        self,
        cluster: Cluster,
        num_partitions: int,
        segment_bytes: int,
        producers: ProducerStateManager,
    ) -> None:
        super().__init__(cluster, OFFSETS_TOPIC, num_partitions, segment_bytes)
        self.producers = producers

    def append(
        self,
        group_id: str,
        records: Sequence[StoredRecord],
        now_ms: int,
        txn_producer: tuple[int, int] | None = None,
    ) -> ErrorCode:
        """Append the records in one batch (a transactional one of `txn_producer`, (producer
        id, epoch), for TxnOffsetCommit); the error a commit answers if that fails."""
        if txn_producer is None:
            return self.append_records(group_id, records, now_ms)
        producer_batch = CoordinatorBatch(*txn_producer, len(records))

        def write(partition: Partition, batch: bytes) -> ErrorCode:
            return self._append_transactional(partition, producer_batch, batch, now_ms)

        return self.append_records(group_id, records, now_ms, txn_producer, write)

    def _append_transactional(
        self, partition: Partition, producer_batch: CoordinatorBatch, batch: bytes, now_ms: int
    ) -> ErrorCode:
        check = self.producers.check_coordinator_append(partition, producer_batch)
        if check.error != ErrorCode.NO_ERROR:
            log.info("transactional offset commit refused: %s", check.message)
            return check.error
        base_offset = partition.log.append(bytearray(batch), partition.leader_epoch, now_ms)
        last_offset = base_offset + producer_batch.record_count - 1
        self.producers.record_append(partition, producer_batch, base_offset, last_offset, now_ms)
        return ErrorCode.NO_ERROR

    def load(self) -> Iterator[LoadedOffset | LoadedGroup | LoadedTxnMarker]:
        """Every offset and group record and transaction marker in log order (tombstones have
        value None); consumer-, streams- and share-group records are skipped."""
        for item in self._load(consumer_records=False):
            assert not isinstance(
                item, LoadedConsumerRecord | LoadedStreamsRecord | LoadedShareRecord
            )
            yield item

    def load_with_consumer_records(self, indexes: Iterable[int] | None = None) -> Iterator[Loaded]:
        """As `load` (of every partition, or those of `indexes`), with the records of KIP-848
        consumer groups, KIP-1071 streams groups and KIP-932 share groups in their log
        order."""
        return self._load(consumer_records=True, indexes=indexes)

    def _load(
        self, consumer_records: bool, indexes: Iterable[int] | None = None
    ) -> Iterator[Loaded]:
        for partition in self.created_partitions(indexes):
            for item in self.read(partition):
                if isinstance(item, ReadMarker):
                    yield LoadedTxnMarker(partition.index, item.producer_id, item.commit)
                    continue
                key, value, txn_producer_id = item
                try:
                    kind = record_type(key)
                    if kind in STREAMS_GROUP_RECORD_TYPES:
                        if consumer_records:
                            yield LoadedStreamsRecord(streams_key(key)[1], key, value)
                    elif kind in SHARE_GROUP_RECORD_TYPES:
                        if consumer_records:
                            yield LoadedShareRecord(share_key(key)[1], key, value)
                    elif not _is_consumer_group_record(key):
                        yield _decode(key, value, txn_producer_id)
                    elif consumer_records:
                        yield LoadedConsumerRecord(decode_consumer_group_record(key, value))
                except RecordFormatError as exc:
                    log.warning("skipping a %s record: %s", OFFSETS_TOPIC, exc)


def _is_consumer_group_record(key: bytes) -> bool:
    return record_type(key) in CONSUMER_GROUP_RECORD_TYPES


def _decode(key: bytes, value: bytes | None, txn_producer_id: int) -> LoadedOffset | LoadedGroup:
    decoded_key = decode_key(key)
    if isinstance(decoded_key, OffsetKey):
        offset = None if value is None else decode_offset_value(value)
        return LoadedOffset(decoded_key, offset, txn_producer_id)
    return LoadedGroup(decoded_key, None if value is None else decode_group_value(value))
