"""InternalTopic: a topic of keyed records, loaded at start and appended before answering.

`__consumer_offsets` (groups/store.py), `__transaction_state` (txn/state_log.py),
`__share_group_state` (groups/share/persist.py) and the Schema Registry's `_schemas`
(registry/store.py) are built on it; their record formats and the state they rebuild stay with
their owners. What they share:

- The topic is created the first time it is needed (`ensure`) with the partition count of its
  broker setting (`offsets.topic.num.partitions`, `transaction.state.log.num.partitions`,
  `share.coordinator.state.topic.num.partitions`; `_schemas` has one) and
  the topic configs Kafka gives it: `cleanup.policy=compact` (log/cleaner.py compacts it) and
  `segment.bytes` of its own setting.
- The records of a key (a group id, a transactional id) go to partition
  `Utils.abs(key.hashCode) % partitions`, Java's String hashCode, as in Kafka.
- A write is a synchronous append of one uncompressed batch, so a change is in the log before
  its response is sent. A topic that cannot be created answers COORDINATOR_NOT_AVAILABLE, a
  failed write NOT_COORDINATOR.
- In a replicated partition a write is an acks=all append (Kafka's coordinators append with
  `acks=-1`): refused while the ISR is below the topic's min.insync.replicas, and answered once
  the ISR has it (`replicated`), with Kafka's mapping of append errors to coordinator errors
  (`coordinator_error`).
- At start each partition that exists is read back in log order (`read`): the keyed records of
  its data batches, with their transactional producer, and the COMMIT/ABORT markers of its
  control batches. A corrupt batch is skipped with a warning.

This package sits between the coordinators (groups/, txn/) and cluster/, log/ and records/: it
never imports the coordinators.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from minibroker.cluster.assignments import placed_replicas
from minibroker.cluster.state import Cluster, Partition, Topic, TopicError
from minibroker.log.base import SCAN_CHUNK_BYTES
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

log = logging.getLogger(__name__)

# A record to append: key and value (None: a tombstone).
KeyedRecord = tuple[bytes, bytes | None]
# A record read back: key, value, and the producer of its batch if that is transactional
# (else NO_PRODUCER_ID).
ReadRecord = tuple[bytes, bytes | None, int]
# Appends a built batch to the partition in place of a plain append (a transactional batch
# whose producer state must be checked and recorded); the error to answer, if any.
BatchWriter = Callable[[Partition, bytes], ErrorCode]


@dataclass(frozen=True, slots=True)
class ReadMarker:
    """A COMMIT/ABORT marker read back: the producer's transaction in the partition ends."""

    producer_id: int
    commit: bool


# Kafka's coordinators answer an internal-topic append's error as (`TransactionStateManager`,
# `CoordinatorRuntime`): retriable COORDINATOR_NOT_AVAILABLE while the partition cannot take
# it, NOT_COORDINATOR once this node no longer leads it; any other is a server error.
_COORDINATOR_ERRORS = {
    ErrorCode.NO_ERROR: ErrorCode.NO_ERROR,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


def coordinator_error(append_error: ErrorCode) -> ErrorCode:
    """The coordinator's answer for an internal-topic append that ended with `append_error`."""
    return _COORDINATOR_ERRORS.get(append_error, ErrorCode.UNKNOWN_SERVER_ERROR)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode` over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        value = (31 * value + (encoded[index] << 8 | encoded[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(key: str, partitions: int) -> int:
    """Kafka's `Utils.abs(key.hashCode) % partitions` (`Utils.abs(MIN_VALUE)` is 0)."""
    hashed = java_string_hash(key)
    return (0 if hashed == -(1 << 31) else abs(hashed)) % partitions


# Each internal topic's replication factor and min.insync.replicas settings (Kafka's names; the
# defaults are 1 here, 3 and 2 in Kafka, whose single-node quick starts set them to 1).
REPLICATION_SETTINGS = {
    "__consumer_offsets": ("offsets.topic.replication.factor", None),
    "__transaction_state": (
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
    ),
    "__share_group_state": (
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    ),
}


class InternalTopic:
    def __init__(
        self,
        cluster: Cluster,
        name: str,
        num_partitions: int,
        segment_bytes: int,
        cleanup_policy: str = "compact",
    ) -> None:
        self.cluster = cluster
        self.name = name
        self.num_partitions = num_partitions
        self.segment_bytes = segment_bytes
        self.cleanup_policy = cleanup_policy
        # Per partition: changes waiting for the ISR to have their records (end offset, apply).
        self._unreplicated: dict[int, list[tuple[int, Callable[[], None]]]] = {}
        # Appends made so far: read before and after a request's changes, tells whether the
        # request wrote anything (`replicated`'s `appended`).
        self.appends = 0

    def topic(self) -> Topic | None:
        return self.cluster.topics.get(self.name)

    def ensure(self) -> Topic:
        """The topic, created if it does not exist yet (TopicError if it cannot be)."""
        topic = self.topic()
        if topic is None:
            configs = {
                "cleanup.policy": self.cleanup_policy,
                "segment.bytes": str(self.segment_bytes),
            }
            assignments = None
            factor_name, min_isr_name = REPLICATION_SETTINGS.get(self.name, (None, None))
            factor = 1 if factor_name is None else self.cluster.config.get_int(factor_name)
            if factor > 1:
                usable = self.cluster.usable_nodes()
                assignments = placed_replicas(usable, self.num_partitions, factor)
                if min_isr_name is not None:
                    configs["min.insync.replicas"] = str(self.cluster.config.get_int(min_isr_name))
            topic = self.cluster.create_topic(self.name, self.num_partitions, configs, assignments)
        return topic

    def partition_of(self, key: str) -> Partition:
        topic = self.ensure()
        return topic.partitions[partition_for(key, len(topic.partitions))]

    def append_records(
        self,
        key: str,
        records: Sequence[KeyedRecord],
        now_ms: int,
        txn_producer: tuple[int, int] | None = None,
        write: BatchWriter | None = None,
    ) -> ErrorCode:
        """Append the records, in one batch, to the partition of `key`; the error a request
        answers if that fails. `txn_producer`, (producer id, epoch), makes it a transactional
        batch of that producer, which `write` appends."""
        if not records:
            return ErrorCode.NO_ERROR
        producer_id, producer_epoch = txn_producer or (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        try:
            partition = self.partition_of(key)
            refused = self._refused(partition)
            if refused is not None:
                return coordinator_error(refused)
            batch = build_batch(
                [(record_key, value, [], now_ms) for record_key, value in records],
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=NO_SEQUENCE if txn_producer is None else 0,
                is_transactional=txn_producer is not None,
            )
            if write is None:
                partition.log.append(bytearray(batch), partition.leader_epoch, now_ms)
            else:
                error = write(partition, batch)
                if error != ErrorCode.NO_ERROR:
                    return error
        except TopicError:
            log.exception("cannot create %s", self.name)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        except OSError:
            log.exception("cannot write to %s", self.name)
            return ErrorCode.NOT_COORDINATOR
        self.appends += 1
        partition.notify_appended()
        return ErrorCode.NO_ERROR

    def _refused(self, partition: Partition) -> ErrorCode | None:
        """An acks=all append's early refusal: the partition offline, or its ISR below
        min.insync.replicas."""
        replica_set = partition.replication
        if replica_set is None:
            return None
        if replica_set.offline:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.cluster.not_enough_replicas(partition) is not None:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return None

    async def replicated(
        self, key: str, node_id: int, timeout_s: float, appended: bool = True
    ) -> ErrorCode:
        """Wait, as an acks=all append does, until the ISR of `key`'s partition has every
        record its leader (`node_id`) appended; the coordinator error to answer if it does
        not (the ISR under min.insync.replicas, the leader moved, the time out). A request
        that `appended` nothing waits the same way for the records before it (Kafka's
        coordinator runtime answers a write operation without records once the last written
        offset is committed); it was never an acks=all append, so min.insync.replicas
        is not its concern."""
        topic = self.topic()
        if topic is None:
            return ErrorCode.NO_ERROR
        partition = topic.partitions[partition_for(key, len(topic.partitions))]
        replica_set = partition.replication
        if replica_set is None:
            return ErrorCode.NO_ERROR
        if replica_set.leader != node_id:  # the leadership moved before the answer
            return coordinator_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        end = partition.log.log_end_offset
        replica_set.advance_high_watermark()  # Kafka's maybeIncrementLeaderHW after an append
        if replica_set.high_watermark < end:
            await replica_set.wait_for_high_watermark(end, timeout_s)
        outcome = self.cluster.acks_all_outcome(partition, end, node_id)
        if not appended and outcome == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
            outcome = ErrorCode.NO_ERROR
        if replica_set.leader == node_id:
            self._apply_replicated(partition)
        return coordinator_error(outcome)

    def after_replication(self, key: str, apply: Callable[[], None]) -> None:
        """Apply a change just appended for `key` once the ISR has it (at once in a partition
        without replicas), as Kafka's coordinator runtime exposes only committed state: a
        change never replicated is never seen, and one lost in an election is dropped by the
        reload (`forget_unreplicated`)."""
        partition = self.partition_of(key)
        if partition.replication is None:
            apply()
            return
        end = partition.log.log_end_offset
        pending = self._unreplicated.setdefault(partition.index, [])
        if not pending:
            self._listen(partition)
        pending.append((end, apply))
        self._apply_replicated(partition)

    def _listen(self, partition: Partition) -> None:
        replica_set = partition.replication
        assert replica_set is not None

        def high_watermark_moved() -> None:
            replica_set.high_watermark_listeners.remove(high_watermark_moved)
            self._apply_replicated(partition)
            if self._unreplicated.get(partition.index):
                self._listen(partition)

        replica_set.high_watermark_listeners.append(high_watermark_moved)

    def _apply_replicated(self, partition: Partition) -> None:
        pending = self._unreplicated.get(partition.index)
        if not pending or partition.replication is None:
            return
        high_watermark = partition.replication.high_watermark
        ready = [apply for end, apply in pending if end <= high_watermark]
        self._unreplicated[partition.index] = [p for p in pending if p[0] > high_watermark]
        for apply in ready:
            apply()

    def forget_unreplicated(self, index: int) -> None:
        self._unreplicated.pop(index, None)

    def partition_index(self, key: str) -> int | None:
        """The partition of `key` if the topic exists."""
        topic = self.topic()
        return None if topic is None else partition_for(key, len(topic.partitions))

    def created_partitions(self, indexes: Iterable[int] | None = None) -> Iterator[Partition]:
        """The partitions to load (all, or those of `indexes`): none before the topic exists,
        and none never used (a lazy partition, log/lazy.py, whose directory does not exist
        yet: empty)."""
        topic = self.topic()
        if topic is None:
            return
        chosen = topic.partitions if indexes is None else [topic.partitions[i] for i in indexes]
        for partition in chosen:
            if is_created(partition.log):
                yield partition

    def read(self, partition: Partition) -> Iterator[ReadRecord | ReadMarker]:
        """Every keyed record and transaction marker of the partition, in log order."""
        plog = partition.log
        offset = plog.log_start_offset
        while offset < plog.log_end_offset:
            batches = split_batches(plog.read(offset, SCAN_CHUNK_BYTES))
            if not batches:
                return
            for batch in batches:
                header = BatchHeader.parse(batch)
                offset = header.last_offset + 1
                if header.is_control:
                    marker = read_end_txn_marker(header, batch)
                    if marker is not None:
                        yield ReadMarker(header.producer_id, marker.commit)
                    continue
                txn_producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
                try:
                    records = list(iter_records(batch))
                except CorruptRecordsError as exc:
                    log.warning("skipping a corrupt %s batch: %s", self.name, exc.message)
                    continue
                for record in records:
                    if record.key is not None:
                        yield record.key, record.value, txn_producer_id
