"""Topics, partitions and their configs: the broker state that handlers read and change.

A partition with one replica has one log, and its high watermark is the log end offset; a
partition with several (an in-process cluster) has a `ReplicaSet` whose leader's log is the
partition's `log` and whose high watermark moves with its followers (cluster/replicas.py,
cluster/replication.py). Topic
ids live in each partition's `partition.metadata` (written by the log); topic-level config
overrides are kept in `<data dir>/minibroker-topic-configs.json` so they survive restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from minibroker.cluster.replicas import NO_LEADER, UNDEFINED_EPOCH, EpochCache, ReplicaSet
from minibroker.cluster.replication import (
    REPLICAS_FILE,
    ReplicaStores,
    add_replica,
    first_log_of,
    new_replica_set,
    restored_replica_set,
    state_entry,
    stored_state,
    write_state,
)
from minibroker.config import BrokerConfig, validate_topic_configs
from minibroker.log.base import PartitionLog
from minibroker.log.checkpoints import write_atomically
from minibroker.log.config import LogConfig
from minibroker.log.dirs import LogDirs
from minibroker.protocol.errors import ErrorCode
from minibroker.records.validate import ValidationConfig
from minibroker.txn.ongoing import OngoingTxns

TOPIC_CONFIGS_FILE = "minibroker-topic-configs.json"
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# Topics whose partition directories are created when first used (log/lazy.py), all but the
# last: its directory tells a restarted broker the partition count and the topic id.
LAZY_TOPICS = frozenset({"__consumer_offsets", "__share_group_state"})


class TopicError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def check_topic_name(name: str) -> None:
    """Kafka's `Topic.validate`: INVALID_TOPIC_EXCEPTION for names it would refuse."""
    if not name:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty"
        )
    if name in (".", ".."):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters",
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'",
        )


def _known_topic_id(logs: list[PartitionLog]) -> uuid.UUID:
    """The topic id its partitions' `partition.metadata` give (an offline partition's may be
    unreadable: the zero id)."""
    return next((plog.topic_id for plog in logs if plog.topic_id.int), logs[0].topic_id)


AppendListener = Callable[["Partition"], None]


class Listened(Protocol):
    """What a long poll waits on: a partition, or a fetch session (woken by its partitions)."""

    @property
    def append_listeners(self) -> set[Callable[[Any], None]]: ...


@dataclass(eq=False)
class Partition:
    topic: str
    index: int
    log: PartitionLog
    leader_epoch: int = 0
    append_listeners: set[AppendListener] = field(default_factory=set)
    ongoing_txns: OngoingTxns = field(default_factory=OngoingTxns)
    replication: ReplicaSet | None = None

    @property
    def high_watermark(self) -> int:
        if self.replication is None:
            return self.log.log_end_offset
        return self.replication.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.ongoing_txns.last_stable_offset(self.high_watermark, self.log.log_start_offset)

    def leader_epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        """Kafka's answer to a request made for `current_leader_epoch` (-1: unchecked)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return None
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.FENCED_LEADER_EPOCH

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: the log start moves up to `offset`; the new log start."""
        log_start = self.log.delete_records_before(offset)
        self.notify_appended()
        return log_start

    def notify_appended(self) -> None:
        """Any change a fetch could see: an append, a move of the high watermark, log start or
        last stable offset, a new leader or leader epoch, the partition's deletion. Long polls
        and fetch sessions listen."""
        for listener in list(self.append_listeners):
            listener(self)


@dataclass(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def replication_factor(self) -> int:
        replication = self.partitions[0].replication if self.partitions else None
        return 1 if replication is None else len(replication.assignment)


class Cluster:
    def __init__(self, config: BrokerConfig, logs: LogDirs, data_dir: Path | None) -> None:
        self.config = config
        self.logs = logs
        self.data_dir = data_dir
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        # The same by the id's 16 bytes, as the native paths read it from a request: no UUID
        # made (or hashed, a Python method) per request.
        self.topics_by_id_bytes: dict[bytes, Topic] = {}
        log_dirs = [m.data_dir for m in logs.managers if m.data_dir is not None] or None
        self.replica_stores = ReplicaStores(log_dirs, logs.cluster_id, logs.default_config)
        logs.tell_offline(self._log_went_offline)
        self.replica_stores.on_offline = self._log_went_offline
        # The live, unfenced nodes replicas may be placed on (server/nodes.py sets it).
        self.usable_nodes: Callable[[], set[int]] = set
        # Whether eligible leader replicas are enabled (the broker sets it from its features).
        self.elr_enabled: Callable[[], bool] = bool
        # The last validation config built per topic, with the broker config and topic
        # overrides it was built from (a produce request would otherwise rebuild it).
        self._validation_configs: dict[
            str, tuple[BrokerConfig, dict[str, str], ValidationConfig]
        ] = {}
        self._grouping = self._state_due = False

    def load(self, on_open: Callable[[Partition], None] | None = None) -> None:
        """The topics found in the log directories; `on_open` is told when the log of one of
        their partitions, deferred or lazy (log/lazy.py), is opened or created."""
        stored_configs = self._read_topic_configs()
        by_topic: dict[str, list[PartitionLog]] = {}

        def log_opened(partition_log: PartitionLog) -> None:
            partition = self.partition(partition_log.topic, partition_log.partition)
            if on_open is not None and partition is not None and partition.log is partition_log:
                on_open(partition)

        for partition_log in self.logs.load(log_opened):
            by_topic.setdefault(partition_log.topic, []).append(partition_log)
        for name, logs in by_topic.items():
            logs.sort(key=lambda plog: plog.partition)
            topic = Topic(name, _known_topic_id(logs), [], stored_configs.get(name, {}))
            if name in LAZY_TOPICS:
                logs = self._with_uncreated(topic, logs)
            topic.partitions = [Partition(name, plog.partition, plog) for plog in logs]
            self._register(topic)
        self._load_replicated(stored_configs)
        for topic in self.topics.values():
            self._apply_log_config(topic)

    def _load_replicated(self, stored_configs: dict[str, dict[str, str]]) -> None:
        """The replicated topics recorded in `minibroker-replicas.json`, from their nodes'
        replica logs."""
        for name, entries in stored_state(self._replicas_path()).items():
            topic = Topic(name, uuid.UUID(int=0), [], stored_configs.get(name, {}))
            config = self.log_config(topic)
            for index, entry in enumerate(entries):
                replica_set = restored_replica_set(
                    self.replica_stores, entry, name, index, topic.topic_id, config
                )
                partition = Partition(name, index, first_log_of(replica_set))
                self._attach(partition, replica_set)
                partition.leader_epoch = int(entry["leader_epoch"])
                topic.partitions.append(partition)
            topic.topic_id = _known_topic_id([p.log for p in topic.partitions])
            self._register(topic)

    def _with_uncreated(self, topic: Topic, logs: list[PartitionLog]) -> list[PartitionLog]:
        """The logs found, and lazy ones for the partitions below the last never used."""
        found = {plog.partition: plog for plog in logs}
        config = self.log_config(topic)
        return [
            found.get(index) or self.logs.create_lazily(topic.name, index, topic.topic_id, config)
            for index in range(max(found) + 1)
        ]

    def _register(self, topic: Topic) -> None:
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic
        self.topics_by_id_bytes[topic.topic_id.bytes] = topic

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def partition(self, topic: str, index: int) -> Partition | None:
        found = self.topics.get(topic)
        if found is None or not 0 <= index < len(found.partitions):
            return None
        return found.partitions[index]

    def partitions(self) -> Iterator[Partition]:
        for topic in self.topics.values():
            yield from topic.partitions

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        configs: Mapping[str, str] | None = None,
        assignments: Sequence[Sequence[int]] | None = None,
    ) -> Topic:
        """A new topic; `assignments` (one replica list per partition) of more than one
        replica make it replicated."""
        self.check_new_topic(name, num_partitions, configs or {})
        topic = Topic(name, uuid.uuid4(), [], dict(configs or {}))
        log_config = self.log_config(topic)
        if assignments is not None and len(assignments[0]) > 1:
            topic.partitions = [
                self._replicated_partition(topic, index, replicas, log_config)
                for index, replicas in enumerate(assignments)
            ]
            self._register(topic)
            self._write_topic_configs()
            self.write_replication_state()
            return topic
        create = self.logs.create_lazily if name in LAZY_TOPICS else self.logs.create
        topic.partitions = [
            Partition(name, index, create(name, index, topic.topic_id, log_config))
            for index in range(num_partitions - 1)
        ]
        last = num_partitions - 1
        topic.partitions.append(
            Partition(name, last, self.logs.create(name, last, topic.topic_id, log_config))
        )
        self._register(topic)
        self._write_topic_configs()
        return topic

    def _replicated_partition(
        self, topic: Topic, index: int, replicas: Sequence[int], log_config: LogConfig
    ) -> Partition:
        replica_set = new_replica_set(
            self.replica_stores, replicas, topic.name, index, topic.topic_id, log_config
        )
        partition = Partition(topic.name, index, first_log_of(replica_set))
        self._attach(partition, replica_set)
        return partition

    def _attach(self, partition: Partition, replica_set: ReplicaSet) -> None:
        partition.replication = replica_set
        replica_set.high_watermark_listeners.append(partition.notify_appended)
        replica_set.elr_min_isr = functools.partial(self.elr_min_isr, partition)
        replica_set.min_isr = functools.partial(self.effective_min_isr, partition)

    def clear_elr(self, topic: str | None = None) -> None:
        """Kafka's ClearElrRecord: the ELR and last-known ELR of the topic's partitions (of
        every partition: None) are emptied, as min.insync.replicas changed under them."""
        for partition in self.replicated_partitions():
            if topic is None or partition.topic == topic:
                assert partition.replication is not None
                partition.replication.elr, partition.replication.last_known_elr = [], []
        self.write_replication_state()

    def effective_min_isr(self, partition: Partition) -> int:
        """Kafka's `Partition.effectiveMinIsr`: min.insync.replicas, at most the replication
        factor (1 once the topic is deleted)."""
        if partition.topic not in self.topics or partition.replication is None:
            return 1
        return min(self.min_isr(partition), len(partition.replication.replicas))

    def elr_min_isr(self, partition: Partition) -> int | None:
        """The min.insync.replicas the controller keeps the partition's ELR against; None
        while eligible leader replicas are disabled (or once the topic is deleted)."""
        if not self.elr_enabled() or partition.topic not in self.topics:
            return None
        return self.min_isr(partition)

    def check_new_topic(self, name: str, num_partitions: int, configs: Mapping[str, str]) -> None:
        check_topic_name(name)
        if name in self.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        self._check_collision(name)
        if num_partitions < 1:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
            )
        self._check_configs(configs)

    def _check_collision(self, name: str) -> None:
        """Kafka refuses a topic whose name differs from an existing one only by '.' versus
        '_' (both become '_' in metric names)."""
        unified = name.replace(".", "_")
        for existing in self.topics:
            if existing.replace(".", "_") == unified:
                raise TopicError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )

    def _check_configs(self, configs: Mapping[str, str | None]) -> None:
        try:
            validate_topic_configs(configs)
        except ValueError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from exc

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name, None)
        if topic is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic."
            )
        del self.topics_by_id[topic.topic_id]
        del self.topics_by_id_bytes[topic.topic_id.bytes]
        self._validation_configs.pop(name, None)
        for partition in topic.partitions:
            _release_waiters(partition)
            if partition.replication is None:
                self.logs.delete(name, partition.index)
                continue
            for node in partition.replication.replicas:
                self.replica_stores.delete(node, name, partition.index)
        self._write_topic_configs()
        self.write_replication_state()
        return topic

    def add_partitions(
        self, name: str, total: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        """`assignments`: the new partitions' replicas (replicated topics)."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
        self.check_partition_increase(topic, total)
        log_config = self.log_config(topic)
        first_new = len(topic.partitions)
        for index in range(first_new, total):
            if assignments is not None and topic.replication_factor > 1:
                replicas = assignments[index - first_new]
                topic.partitions.append(
                    self._replicated_partition(topic, index, replicas, log_config)
                )
                continue
            plog = self.logs.create(name, index, topic.topic_id, log_config)
            topic.partitions.append(Partition(name, index, plog))
        self.write_replication_state()

    @staticmethod
    def check_partition_increase(topic: Topic, total: int) -> None:
        current = len(topic.partitions)
        if total < current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the "
                f"requested {total}.",
            )
        if total == current:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions."
            )

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's overrides (AlterConfigs semantics)."""
        topic = self._existing(name)
        self._check_configs(configs)
        topic.configs = dict(configs)
        self._apply_log_config(topic)
        self._write_topic_configs()
        for partition in topic.partitions:  # what a fetch answers may depend on them
            partition.notify_appended()

    def check_topic_configs(self, configs: Mapping[str, str | None]) -> None:
        self._check_configs(configs)

    def _existing(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
            )
        return topic

    def topic_value(self, topic: Topic, name: str) -> str:
        return self.config.topic_value(topic.configs, name)

    def log_config(self, topic: Topic) -> LogConfig:
        return self.default_log_config(self.config, topic.configs)

    @staticmethod
    def default_log_config(
        config: BrokerConfig, overrides: Mapping[str, str] | None = None
    ) -> LogConfig:
        def value(name: str) -> int:
            return int(config.topic_value(overrides or {}, name))

        return LogConfig(
            segment_bytes=value("segment.bytes"),
            segment_ms=value("segment.ms"),
            segment_index_bytes=value("segment.index.bytes"),
            index_interval_bytes=value("index.interval.bytes"),
            retention_ms=value("retention.ms"),
            retention_bytes=value("retention.bytes"),
            flush_messages=value("flush.messages"),
            flush_ms=value("flush.ms"),
            fsync_on_ack=config.get_bool("minibroker.fsync.on.ack"),
            cleanup_policy=config.topic_value(overrides or {}, "cleanup.policy"),
            delete_retention_ms=value("delete.retention.ms"),
            min_compaction_lag_ms=value("min.compaction.lag.ms"),
            min_cleanable_dirty_ratio=float(
                config.topic_value(overrides or {}, "min.cleanable.dirty.ratio")
            ),
        )

    def _apply_log_config(self, topic: Topic) -> None:
        log_config = self.log_config(topic)
        for partition in topic.partitions:
            if partition.replication is None:
                partition.log.update_config(log_config)
                continue
            for replica in partition.replication.replicas.values():
                replica.log.update_config(log_config)

    # ---- replicated partitions ---------------------------------------------------------------

    def _log_went_offline(self, topic: str, index: int) -> None:
        """Fetchers of the partition look again (and answer KAFKA_STORAGE_ERROR)."""
        partition = self.partition(topic, index)
        if partition is not None:
            partition.notify_appended()

    def log_managers(self) -> list[LogDirs]:
        """The data directory's and every node's replica logs (retention, flush, close)."""
        return [self.logs, *self.replica_stores.managers()]

    def replicated_partitions(self) -> Iterator[Partition]:
        return (p for p in self.partitions() if p.replication is not None)

    def elect_leader(
        self, partition: Partition, live: set[int], *, force: int | None = None
    ) -> bool:
        """Let the controller choose the partition's leader among `live` nodes (`force`: that
        replica, if live); True when it changed. A new leader gets a new leader epoch."""
        replica_set = partition.replication
        assert replica_set is not None
        if force is not None:
            chosen = force if force in live else NO_LEADER
        else:
            topic = self.topics[partition.topic]
            unclean = self.topic_value(topic, "unclean.leader.election.enable") == "true"
            chosen = replica_set.elect(live, unclean)
        if chosen == replica_set.leader:
            return False
        if chosen == NO_LEADER:
            replica_set.go_offline()
        else:
            partition.leader_epoch += 1
            partition.log = replica_set.install_leader(chosen, partition.leader_epoch).log
        self.write_replication_state()
        partition.notify_appended()
        return True

    def min_isr(self, partition: Partition) -> int:
        return int(self.topic_value(self.topics[partition.topic], "min.insync.replicas"))

    def not_enough_replicas(self, partition: Partition) -> str | None:
        """Kafka's refusal of an acks=all append while the ISR is below min.insync.replicas."""
        replica_set = partition.replication
        if replica_set is None or len(replica_set.isr) >= (min_isr := self.min_isr(partition)):
            return None
        return (
            f"The size of the current ISR {sorted(replica_set.isr)} is insufficient to satisfy "
            f"the min.isr requirement of {min_isr} for partition "
            f"{partition.topic}-{partition.index}"
        )

    def acks_all_outcome(
        self, partition: Partition, required_offset: int, node_id: int
    ) -> ErrorCode:
        """An acks=all append's answer once waited for (Kafka's DelayedProduce: a partition
        deleted meanwhile is UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere now
        NOT_LEADER_OR_FOLLOWER)."""
        replica_set = partition.replication
        assert replica_set is not None
        if self.partition(partition.topic, partition.index) is not partition:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if replica_set.leader != node_id:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if replica_set.high_watermark < required_offset:
            return ErrorCode.REQUEST_TIMED_OUT
        if len(replica_set.isr) < self.min_isr(partition):
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NO_ERROR

    def add_replica(self, partition: Partition, node_id: int) -> None:
        replica_set = partition.replication
        assert replica_set is not None
        topic = self.topics[partition.topic]
        add_replica(
            self.replica_stores,
            replica_set,
            node_id,
            topic.name,
            partition.index,
            topic.topic_id,
            self.log_config(topic),
        )

    def reopen_replicas(self, node_id: int) -> None:
        """`node_id`'s replica logs opened again from its log directories (after
        `replica_stores.abandon`: recovered as after an unclean shutdown); a replica whose
        partition directory is gone starts empty. Its leader epochs are those of its log."""
        for partition in self.replicated_partitions():
            replica_set = partition.replication
            assert replica_set is not None
            replica = replica_set.replicas.get(node_id)
            if replica is None:
                continue
            topic = self.topics[partition.topic]
            log = self.replica_stores.replica_log(
                node_id, topic.name, partition.index, topic.topic_id, self.log_config(topic)
            )
            if partition.log is replica.log:
                partition.log = log
            replica.log = log
            replica.epochs = EpochCache.of_log(log)
            replica.following_epoch = UNDEFINED_EPOCH

    def drop_replica(self, partition: Partition, node_id: int) -> None:
        replica_set = partition.replication
        assert replica_set is not None
        replica_set.replicas.pop(node_id, None)
        replica_set.change_isr([node for node in replica_set.isr if node != node_id])
        replica_set.forget(node_id)
        self.replica_stores.delete(node_id, partition.topic, partition.index)

    @contextlib.contextmanager
    def grouped_writes(self) -> Iterator[None]:
        """Topics created and deleted inside are durable when it ends: their partitions
        synced together (log/syncs.py), then the topic configs and replication state written
        once, not once per topic."""
        if self._grouping:
            yield
            return
        self._grouping, self._state_due = True, False
        try:
            with self.logs.grouped_syncs():
                yield
        finally:
            self._grouping = False
            if self._state_due:
                self._write_topic_configs()
                self.write_replication_state()

    def _deferred_while_grouping(self) -> bool:
        self._state_due = self._state_due or self._grouping
        return self._grouping

    def write_replication_state(self) -> None:
        if self._deferred_while_grouping():
            return
        state = {
            topic.name: [
                state_entry(p.replication, p.leader_epoch)
                for p in topic.partitions
                if p.replication is not None
            ]
            for topic in self.topics.values()
            if any(p.replication is not None for p in topic.partitions)
        }
        write_state(self._replicas_path(), state)

    def _replicas_path(self) -> Path | None:
        return None if self.data_dir is None else self.data_dir / REPLICAS_FILE

    def validation_config(self, topic: Topic) -> ValidationConfig:
        cached = self._validation_configs.get(topic.name)
        if cached is not None and cached[0] is self.config and cached[1] == topic.configs:
            return cached[2]
        built = self._build_validation_config(topic)
        self._validation_configs[topic.name] = (self.config, dict(topic.configs), built)
        return built

    def _build_validation_config(self, topic: Topic) -> ValidationConfig:
        return ValidationConfig(
            timestamp_type=self.topic_value(topic, "message.timestamp.type"),
            timestamp_before_max_ms=int(self.topic_value(topic, "message.timestamp.before.max.ms")),
            timestamp_after_max_ms=int(self.topic_value(topic, "message.timestamp.after.max.ms")),
            max_message_bytes=int(self.topic_value(topic, "max.message.bytes")),
            compression_type=self.topic_value(topic, "compression.type"),
            max_decompressed_bytes=self.config.get_int("minibroker.max.decompressed.batch.bytes"),
            compacted="compact" in self.topic_value(topic, "cleanup.policy").split(","),
        )

    def _configs_path(self) -> Path | None:
        return None if self.data_dir is None else self.data_dir / TOPIC_CONFIGS_FILE

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        path = self._configs_path()
        if path is None or not path.exists():
            return {}
        stored: dict[str, dict[str, str]] = json.loads(path.read_text())
        return stored

    def _write_topic_configs(self) -> None:
        path = self._configs_path()
        if path is None or self._deferred_while_grouping():
            return
        content = {name: topic.configs for name, topic in self.topics.items() if topic.configs}
        write_atomically(path, json.dumps(content, indent=1, sort_keys=True))


def _release_waiters(partition: Partition) -> None:
    """The partition is being deleted: long polls waiting on it look again (and find it
    gone), acks=all appends waiting on its replicas end (Kafka completes both delayed
    operations when it stops a partition)."""
    partition.notify_appended()
    if partition.replication is not None:
        partition.replication.go_offline()


async def wait_for_append(
    partitions: Sequence[Listened],
    timeout_s: float,
    loop: asyncio.AbstractEventLoop | None = None,
) -> None:
    """Until one of `partitions` is appended to, or `timeout_s` passed. (A timer on the one
    future rather than `asyncio.wait_for`, which costs several futures and callbacks more per
    long poll.) `loop`: the running loop, when the caller has it already."""
    loop = loop or asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    for partition in partitions:
        partition.append_listeners.add(wake)
    timer = loop.call_later(timeout_s, wake)
    try:
        await woken
    finally:
        timer.cancel()
        for partition in partitions:
            partition.append_listeners.discard(wake)
