"""`__consumer_offsets`: where committed offsets and group metadata are written and reloaded.

The topic is created the first time a group needs it (FindCoordinator, or a write) with
`offsets.topic.num.partitions` partitions, `cleanup.policy=compact` (log/cleaner.py compacts
it) and `segment.bytes=offsets.topic.segment.bytes`; a group's records go
to partition `abs(hash(group)) % partitions`, as in Kafka. Writes are synchronous appends of
one uncompressed batch, so a commit is in the log before its response is sent. Transactional
offset commits go through the producer state as Kafka's appends of origin COORDINATOR (epoch
checked, sequences not): they open the producer's transaction on the partition, so its last
stable offset and `.txnindex` account for them while the broker runs, as after a log replay.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from minibroker.cluster.state import Cluster, Partition, Topic, TopicError
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
    partition_for,
)
from minibroker.log.lazy import is_created
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    split_batches,
)
from minibroker.records.control import read_end_txn_marker
from minibroker.records.records import CorruptRecordsError, build_batch, iter_records
from minibroker.txn.producers import CoordinatorBatch, ProducerStateManager

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
_READ_CHUNK_BYTES = 1 << 20

StoredRecord = tuple[bytes, bytes | None]


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


Loaded = LoadedOffset | LoadedGroup | LoadedTxnMarker | LoadedConsumerRecord


class OffsetsTopic:
    def __init__(
        self,
        cluster: Cluster,
        num_partitions: int,
        segment_bytes: int,
        producers: ProducerStateManager,
    ) -> None:
        self.cluster = cluster
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.producers = producers

    def topic(self) -> Topic | None:
        return self.cluster.topics.get(OFFSETS_TOPIC)

    def ensure(self) -> Topic:
        topic = self.topic()
        if topic is None:
            topic = self.cluster.create_topic(
                OFFSETS_TOPIC,
                self.num_partitions,
                {"cleanup.policy": "compact", "segment.bytes": str(self.segment_bytes)},
            )
        return topic

    def partition_of(self, group_id: str) -> Partition:
        topic = self.ensure()
        return topic.partitions[partition_for(group_id, len(topic.partitions))]

    def append(
        self,
        group_id: str,
        records: Sequence[StoredRecord],
        now_ms: int,
        txn_producer: tuple[int, int] | None = None,
    ) -> ErrorCode:
        """Append the records in one batch (a transactional one of `txn_producer`, (producer
        id, epoch), for TxnOffsetCommit); the error a commit answers if that fails."""
        if not records:
            return ErrorCode.NO_ERROR
        producer_id, producer_epoch = txn_producer or (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        try:
            partition = self.partition_of(group_id)
            batch = build_batch(
                [(key, value, [], now_ms) for key, value in records],
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=NO_SEQUENCE if txn_producer is None else 0,
                is_transactional=txn_producer is not None,
            )
            if txn_producer is None:
                partition.log.append(bytearray(batch), partition.leader_epoch, now_ms)
            else:
                producer_batch = CoordinatorBatch(producer_id, producer_epoch, len(records))
                error = self._append_transactional(partition, producer_batch, batch, now_ms)
                if error != ErrorCode.NO_ERROR:
                    return error
        except TopicError:
            log.exception("cannot create %s", OFFSETS_TOPIC)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        except OSError:
            log.exception("cannot write to %s", OFFSETS_TOPIC)
            return ErrorCode.NOT_COORDINATOR
        partition.notify_appended()
        return ErrorCode.NO_ERROR

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
        value None); consumer-group records are skipped."""
        for item in self._load(consumer_records=False):
            assert not isinstance(item, LoadedConsumerRecord)
            yield item

    def load_with_consumer_records(self) -> Iterator[Loaded]:
        """As `load`, with the records of KIP-848 consumer groups in their log order."""
        return self._load(consumer_records=True)

    def _load(self, consumer_records: bool) -> Iterator[Loaded]:
        topic = self.topic()
        if topic is None:
            return
        for partition in topic.partitions:
            if not is_created(partition.log):
                continue  # never used: empty
            for item in _partition_records(partition):
                if isinstance(item, LoadedTxnMarker):
                    yield item
                    continue
                key, value, txn_producer_id = item
                try:
                    if not _is_consumer_group_record(key):
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


def _partition_records(
    partition: Partition,
) -> Iterator[tuple[bytes, bytes | None, int] | LoadedTxnMarker]:
    plog = partition.log
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, _READ_CHUNK_BYTES)
        batches = split_batches(data)
        if not batches:
            return
        for batch in batches:
            header = BatchHeader.parse(batch)
            offset = header.last_offset + 1
            if header.is_control:
                marker = read_end_txn_marker(header, batch)
                if marker is not None:
                    yield LoadedTxnMarker(partition.index, header.producer_id, marker.commit)
                continue
            txn_producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
            try:
                records = list(iter_records(batch))
            except CorruptRecordsError as exc:
                log.warning("skipping a corrupt %s batch: %s", OFFSETS_TOPIC, exc.message)
                continue
            for record in records:
                if record.key is not None:
                    yield record.key, record.value, txn_producer_id
