"""The classic group coordinator, as Kafka's `GroupCoordinator` (KIP-345/394/814 included).

Rebalance protocol: JoinGroup moves a group to PreparingRebalance; the join completes when
every known member has rejoined (or the rebalance timeout removes those that did not, or,
for a group that was Empty, after `group.initial.rebalance.delay.ms`). The leader gets the
members' metadata and sends the assignments in SyncGroup; the others wait for it. Members
are removed when their session expires, when they leave, or when they do not send SyncGroup
within the rebalance timeout. Static members (`group.instance.id`) rejoin under a new member
id without a rebalance when nothing changed.

Every method mutates state without awaiting; only join_group and sync_group then await
their waiter future, which another member's request (or a deadline) completes. Committed
offsets and group metadata are written to `__consumer_offsets` before they are answered and
loaded back with their partition (loading.py); expired offsets and empty groups are cleaned up every
`offsets.retention.check.interval.ms`.

KIP-848 consumer groups live in the same map (a `Group` whose `consumer` is set keeps its
offsets here and its members, epochs and assignments in `groups/consumer/`): `consumer`
answers ConsumerGroupHeartbeat, `classic_members` the classic requests of classic members
inside a consumer group, and this class converts groups between the two protocols
(online upgrade and downgrade) and reloads consumer-group records with their partition.

Share groups (KIP-932) live there too (a `Group` whose `share` is set; `share` answers
ShareGroupHeartbeat); their records are loaded with their partition. A group id belongs to
one kind of group: the others' requests get GROUP_ID_NOT_FOUND (ConsumerGroupHeartbeat,
ShareGroupHeartbeat, and OffsetCommit, OffsetFetch v9+ and OffsetDelete on a share group), a
classic JoinGroup INCONSISTENT_GROUP_PROTOCOL, as Kafka.

Streams groups (KIP-1071) likewise (`streams` answers StreamsGroupHeartbeat, in
`groups/streams/`); their records are loaded with their partition. An empty classic group that only
has offsets becomes a streams group when a member joins, and an empty streams group becomes a
classic one when a classic member joins (offline upgrade and downgrade); OffsetCommit and
OffsetFetch from streams members are checked by member epoch.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from minibroker.cluster.state import Cluster
from minibroker.config import BrokerConfig
from minibroker.groups.consumer.manager import ConsumerGroupError, ConsumerGroups
from minibroker.groups.consumer.migration import (
    ClassicJoin,
    ClassicMembers,
    ClassicMemberState,
    MemberIdRequired,
    assignment_bytes,
    consumer_group_from_classic,
)
from minibroker.groups.consumer.model import ConsumerGroup, ConsumerMember
from minibroker.groups.consumer.persist import restore, tombstones
from minibroker.groups.consumer.protocol import MalformedConsumerProtocol
from minibroker.groups.consumer_records import (
    ConsumerGroupKey,
    ConsumerGroupRecord,
    ConsumerGroupValue,
    encode_consumer_group_record,
)
from minibroker.groups.group import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    GroupState,
    JoinResult,
    Member,
    SyncResult,
)
from minibroker.groups.loading import GroupTable
from minibroker.groups.records import (
    GroupKey,
    GroupValue,
    OffsetKey,
    OffsetValue,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
)
from minibroker.groups.settings import migration_policy
from minibroker.groups.share.manager import ShareGroupError, ShareGroups
from minibroker.groups.share.model import ShareGroup
from minibroker.groups.share.records import restore as restore_share_group
from minibroker.groups.share.records import tombstones as share_tombstones
from minibroker.groups.store import (
    Loaded,
    LoadedConsumerRecord,
    LoadedOffset,
    LoadedShareRecord,
    LoadedStreamsRecord,
    LoadedTxnMarker,
    OffsetsTopic,
    StoredRecord,
)
from minibroker.groups.streams.internal_topics import InternalTopicCreator
from minibroker.groups.streams.manager import StreamsGroupError, StreamsGroups
from minibroker.groups.streams.model import StreamsGroup
from minibroker.groups.streams.records import changes as streams_changes
from minibroker.groups.streams.records import restore as restore_streams_group
from minibroker.groups.streams.records import tombstones as streams_tombstones
from minibroker.groups.timers import Deadline, armed_late
from minibroker.groups.txn_offsets import PendingTxnOffsets
from minibroker.groups.zookeeper_offsets import ZooKeeperOffsets
from minibroker.protocol.errors import ErrorCode
from minibroker.txn.producers import ProducerStateManager

log = logging.getLogger(__name__)

# A new member that never completes its first join is dropped after this long (Kafka's).
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
DEFAULT_RETENTION_CHECK_INTERVAL_MS = 600_000
DEFAULT_OFFSET_METADATA_MAX_BYTES = 4096
NO_GENERATION = -1


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _collect(
    groups: dict[str, dict[ConsumerGroupKey, ConsumerGroupValue]], record: ConsumerGroupRecord
) -> None:
    """Keep the latest value of each consumer-group record key (a tombstone removes it)."""
    records = groups.setdefault(record.key.group_id, {})
    if record.value is None:
        records.pop(record.key, None)
    else:
        records[record.key] = record.value


def _collect_streams(
    groups: dict[str, dict[bytes, bytes]], loaded: LoadedStreamsRecord | LoadedShareRecord
) -> None:
    """Keep the latest value of each streams- or share-group record key (a tombstone removes
    it)."""
    records = groups.setdefault(loaded.group_id, {})
    if loaded.value is None:
        records.pop(loaded.key, None)
    else:
        records[loaded.key] = loaded.value


def _has_modern_members(group: Group) -> bool:
    """A consumer, share or streams group with members (the classic state stays Empty)."""
    return bool(
        (group.consumer is not None and group.consumer.members)
        or (group.share is not None and group.share.members)
        or (group.streams is not None and group.streams.members)
    )


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    require_known_member_id: bool


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    # OffsetCommit v1's explicit commit time; -1: when the commit is stored.
    commit_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode = ErrorCode.NO_ERROR


class GroupCoordinator:
    def __init__(
        self, config: BrokerConfig, cluster: Cluster, producers: ProducerStateManager
    ) -> None:
        self.groups = GroupTable(self)
        # When this node took each `__consumer_offsets` partition over (its start, or the
        # election that made it the leader): the timers of a partition loaded later count
        # from then.
        self._started_ms = now_ms()
        self._owned_since: dict[int, int] = {}
        self.store = OffsetsTopic(
            cluster,
            config.get_int("offsets.topic.num.partitions"),
            config.get_int("offsets.topic.segment.bytes"),
            producers,
        )
        self.cluster = cluster
        self.min_session_timeout_ms = config.get_int("group.min.session.timeout.ms")
        self.max_session_timeout_ms = config.get_int("group.max.session.timeout.ms")
        self.initial_rebalance_delay_ms = config.get_int("group.initial.rebalance.delay.ms")
        self.offsets_retention_ms = config.get_int("offsets.retention.minutes") * 60_000
        self.retention_check_interval_ms = int(
            config.raw("offsets.retention.check.interval.ms") or DEFAULT_RETENTION_CHECK_INTERVAL_MS
        )
        self.offset_metadata_max_bytes = int(
            config.raw("offset.metadata.max.bytes") or DEFAULT_OFFSET_METADATA_MAX_BYTES
        )
        self._retention_check = Deadline()
        self.txn_offsets = PendingTxnOffsets()
        self.zookeeper_offsets = ZooKeeperOffsets(cluster, self.offset_metadata_max_bytes)
        self.consumer = ConsumerGroups(
            config,
            cluster,
            self.consumer_group,
            lambda group_id, records: self.store.append(group_id, records, now_ms()),
        )
        self.consumer.after_removal = self._maybe_downgrade
        self.classic_members = ClassicMembers(self.consumer, cluster)
        self.share = ShareGroups(config, cluster, self.share_group)
        self.share.append = lambda group_id, records: self.store.append(group_id, records, now_ms())
        self.streams = StreamsGroups(config, cluster, self.streams_group)
        self.streams.persist = self._persist_streams_group
        self.streams.discard = self._discard_streams_group
        self.streams_topics = InternalTopicCreator(cluster)
        self.upgrade_enabled, self.downgrade_enabled = migration_policy(
            config.get_str("group.consumer.migration.policy")
        )

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the expiry timer. Groups and offsets are loaded from `__consumer_offsets` a
        partition at a time, when first needed (loading.py)."""
        self._started_ms = now_ms()
        self._schedule_retention_check()

    def reload_partition(self, index: int) -> None:
        """Partition `index` of `__consumer_offsets` has a new leader: its groups are unloaded
        (waiting members answered NOT_COORDINATOR), to be loaded again from that leader's
        replica when next needed, as Kafka's coordinator does on `onElection`."""
        for group in list(self.groups.loaded()):
            if self.offsets_partition_for(group.group_id) == index:
                self._unload(group)
                self.groups.discard_loaded(group.group_id)
        self.txn_offsets.discard(lambda group_id: self.offsets_partition_for(group_id) == index)
        self.store.forget_unreplicated(index)
        self.groups.unload(index)
        self._owned_since[index] = now_ms()

    # PartitionLoader (loading.py): where the groups come from.

    def partition_index(self, group_id: str) -> int | None:
        return self.store.partition_index(group_id)

    def partition_indexes(self) -> list[int]:
        topic = self.store.topic()
        return [] if topic is None else [partition.index for partition in topic.partitions]

    def load_partition(self, index: int) -> None:
        """Replay one `__consumer_offsets` partition: its groups, offsets and pending
        transactional offsets, with the timers they would have armed when it was taken over."""
        elapsed_ms = now_ms() - self._owned_since.get(index, self._started_ms)
        with armed_late(elapsed_ms):
            self._load(self.store.load_with_consumer_records([index]))

    def load_offsets_partition(self, index: int) -> None:
        """A transaction marker is about to be written there: the producers' pending offsets
        it ends are loaded first."""
        self.groups.load_partition(index)

    def _load(self, records: Iterable[Loaded]) -> None:
        consumer_records: dict[str, dict[ConsumerGroupKey, ConsumerGroupValue]] = {}
        streams_records: dict[str, dict[bytes, bytes]] = {}
        share_records: dict[str, dict[bytes, bytes]] = {}
        touched: set[str] = set()
        for loaded in records:
            if isinstance(loaded, LoadedConsumerRecord):
                _collect(consumer_records, loaded.record)
            elif isinstance(loaded, LoadedStreamsRecord):
                _collect_streams(streams_records, loaded)
            elif isinstance(loaded, LoadedShareRecord):
                _collect_streams(share_records, loaded)
            elif isinstance(loaded, LoadedTxnMarker):
                self.complete_txn_offsets(loaded.partition, loaded.producer_id, loaded.commit)
            elif isinstance(loaded, LoadedOffset) and loaded.txn_producer_id >= 0:
                if loaded.value is not None:
                    self.txn_offsets.add(
                        loaded.txn_producer_id,
                        loaded.key.group,
                        {(loaded.key.topic, loaded.key.partition): loaded.value},
                    )
            elif isinstance(loaded, LoadedOffset):
                self._load_offset(loaded.key, loaded.value)
            else:
                self._load_group(loaded.key, loaded.value)
                touched.add(loaded.key.group)
        for group_id, records_of in consumer_records.items():
            self._load_consumer_group(group_id, records_of)
        for group_id, raw in streams_records.items():
            self._load_streams_group(group_id, raw)
        for group_id, raw in share_records.items():
            self._load_share_group(group_id, raw)
        for group_id in touched:
            group = self.groups.get(group_id)
            if group is not None:
                for member in group.members.values():
                    self._arm_session(group, member)

    def _load_consumer_group(
        self, group_id: str, records: dict[ConsumerGroupKey, ConsumerGroupValue]
    ) -> None:
        consumer = restore(group_id, records)
        if consumer is None:
            return
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        group.consumer = consumer
        consumer.written = dict(
            encode_consumer_group_record(key, value) for key, value in records.items()
        )
        self.consumer.refresh_metadata(consumer)
        self.consumer.arm_timers(consumer)

    def _load_streams_group(self, group_id: str, records: dict[bytes, bytes]) -> None:
        streams = restore_streams_group(group_id, records)
        if streams is None:
            return
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        group.streams = streams
        self.streams.loaded(streams)

    def _load_share_group(self, group_id: str, records: dict[bytes, bytes]) -> None:
        restored = restore_share_group(group_id, records)
        if restored is None:
            return
        share, written_hash = restored
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        group.share = share
        self.share.loaded(share, written_hash)

    def _discard_streams_group(self, streams: StreamsGroup) -> None:
        """A streams group created by a heartbeat that was then refused: the group id goes
        back to what it was (nothing, or an empty classic group holding offsets)."""
        group = self.groups.get(streams.group_id)
        if group is None or group.streams is not streams:
            return
        streams.stop_timers()
        group.streams = None
        if not group.offsets and not group.members:
            del self.groups[streams.group_id]

    def _persist_streams_group(self, streams: StreamsGroup) -> None:
        error = self.store.append(streams.group_id, streams_changes(streams), now_ms())
        if error != ErrorCode.NO_ERROR:
            log.warning("streams group %s: records not written: %s", streams.group_id, error.name)

    def stop(self) -> None:
        """Answer every waiting member NOT_COORDINATOR (as Kafka on unload) and stop timers."""
        self._retention_check.cancel()
        for group in self.groups.loaded():
            self._unload(group)

    def _unload(self, group: Group) -> None:
        if group.consumer is not None:
            self.consumer.stop(group.consumer)
        if group.share is not None:
            group.share.stop_timers()
        if group.streams is not None:
            group.streams.stop_timers()
        group.join_deadline.cancel()
        group.sync_deadline.cancel()
        for pending in group.pending_members.values():
            pending.cancel()
        for member in group.members.values():
            member.session.cancel()
            member.complete_join(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
            member.complete_sync(SyncResult(ErrorCode.NOT_COORDINATOR))

    def _load_offset(self, key: OffsetKey, value: OffsetValue | None) -> None:
        group = self.groups.get(key.group)
        if value is None:
            if group is not None:
                group.offsets.pop((key.topic, key.partition), None)
            return
        if group is None:
            group = self.groups[key.group] = Group(key.group)
        group.offsets[(key.topic, key.partition)] = value

    def _load_group(self, key: GroupKey, value: GroupValue | None) -> None:
        if value is None:
            self.groups.pop(key.group, None)
            return
        offsets = self.groups[key.group].offsets if key.group in self.groups else {}
        group = Group(
            key.group,
            state=GroupState.STABLE if value.members else GroupState.EMPTY,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
            state_timestamp_ms=value.current_state_timestamp,
            offsets=offsets,
        )
        for stored in value.members:
            member = Member(
                member_id=stored.member_id,
                group_instance_id=stored.group_instance_id,
                client_id=stored.client_id,
                client_host=stored.client_host,
                rebalance_timeout_ms=stored.rebalance_timeout_ms,
                session_timeout_ms=stored.session_timeout_ms,
                protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", stored.subscription)],
                assignment=stored.assignment,
            )
            group.members[member.member_id] = member
            if member.group_instance_id is not None:
                group.static_members[member.group_instance_id] = member.member_id
        self.groups[key.group] = group

    def ensure_offsets_topic(self) -> None:
        self.store.ensure()

    # ---- KIP-848 consumer groups -------------------------------------------------------------

    def consumer_group(self, group_id: str, create: bool) -> ConsumerGroup:
        """Kafka's getOrMaybeCreateConsumerGroup: an Empty classic group (one that only has
        offsets) becomes a consumer group when a member joins; a classic group with members
        is upgraded online when the migration policy allows it and it uses the consumer
        protocol, else it is not a consumer group (GROUP_ID_NOT_FOUND)."""
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None:
            return group.consumer
        if group is not None and (group.share is not None or group.streams is not None):
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        if group is None and not create:
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found."
            )
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        elif create and group.members and self._can_upgrade(group):
            return self._upgrade(group)
        elif not create or group.members or not group.is_in(GroupState.EMPTY):
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group"
            )
        group.consumer = ConsumerGroup(group_id, assignor_name=self.consumer.settings.assignors[0])
        return group.consumer

    def _can_upgrade(self, group: Group) -> bool:
        """Kafka's validateOnlineUpgrade."""
        return (
            self.upgrade_enabled
            and group.protocol_type == CONSUMER_PROTOCOL_TYPE
            and not group.is_in(GroupState.DEAD)
            and len(group.members) <= self.consumer.settings.max_size
        )

    def _upgrade(self, group: Group) -> ConsumerGroup:
        """A classic group's members become members of a consumer group (at the classic
        generation, with their subscriptions and assignments)."""
        protocol = group.protocol_name
        states = [
            ClassicMemberState(
                member_id=member.member_id,
                instance_id=member.group_instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                session_timeout_ms=member.session_timeout_ms,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                protocols=list(member.protocols),
                subscription=member.metadata(protocol or member.protocols[0][0]),
                assignment=member.assignment,
            )
            for member in group.members.values()
        ]
        try:
            consumer = consumer_group_from_classic(
                group.group_id, group.generation_id, states, self.cluster
            )
        except MalformedConsumerProtocol as exc:
            raise ConsumerGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade the classic group {group.group_id} to consumer group because "
                "the embedded consumer protocol is malformed.",
            ) from exc
        group.hand_over_to_consumer_group(now_ms())
        self._store_group(group)
        group.consumer = consumer
        consumer.assignor_name = self.consumer.settings.assignors[0]
        self.consumer.refresh_metadata(consumer)
        self.consumer.arm_timers(consumer)
        log.info("group %s: upgraded to a consumer group", group.group_id)
        return consumer

    def _maybe_downgrade(self, consumer: ConsumerGroup, removed: ConsumerMember) -> None:
        """Kafka's online downgrade: the last member using the consumer protocol is gone and
        only classic members remain: they become a classic group, which rebalances."""
        group = self.groups.get(consumer.group_id)
        if (
            group is None
            or group.consumer is not consumer
            or not self.downgrade_enabled
            or removed.classic is not None
            or not consumer.members
            or not consumer.all_classic_except("")
        ):
            return
        members = [self._classic_member(consumer, taken) for taken in consumer.members.values()]
        for taken in consumer.members.values():
            taken.stop_timers()
        if self.store.append(group.group_id, tombstones(consumer), now_ms()) != ErrorCode.NO_ERROR:
            return
        group.consumer = None
        group.take_over_from_consumer_group(members, consumer.group_epoch, now_ms())
        for classic in members:
            self._arm_session(group, classic)
        self._prepare_rebalance(group)
        log.info("group %s: downgraded to a classic group", group.group_id)

    def _classic_member(self, consumer: ConsumerGroup, member: ConsumerMember) -> Member:
        classic = member.classic
        assert classic is not None
        return Member(
            member_id=member.member_id,
            group_instance_id=member.instance_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_timeout_ms=classic.session_timeout_ms,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=list(classic.protocols),
            assignment=assignment_bytes(
                self.cluster, consumer.target.get(member.member_id, member.assigned)
            ),
        )

    # ---- JoinGroup -------------------------------------------------------------------------

    # ---- share groups ----------------------------------------------------------------------

    def share_group(self, group_id: str, create: bool) -> ShareGroup | None:
        """Kafka's getOrMaybeCreateShareGroup: the share group, a new one when `create`, None
        when there is none; GROUP_ID_NOT_FOUND when the id is another kind of group (even an
        Empty classic group that only has offsets: groups are not converted to share groups)."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                return None
            group = self.groups[group_id] = Group(group_id, share=ShareGroup(group_id))
        if group.share is None:
            raise ShareGroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group."
            )
        return group.share

    # ---- streams groups --------------------------------------------------------------------

    def streams_group(self, group_id: str, create: bool) -> StreamsGroup | None:
        """Kafka's getOrCreateStreamsGroup / getStreamsGroupOrThrow: the streams group, a new
        one when `create` (an Empty classic group that only has offsets becomes one, keeping
        its offsets), None when there is none; GROUP_ID_NOT_FOUND when the id is another kind
        of group."""
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                return None
            group = self.groups[group_id] = Group(group_id)
        if group.streams is not None:
            return group.streams
        if (
            create
            and group.consumer is None
            and group.share is None
            and not group.members
            and group.is_in(GroupState.EMPTY)
        ):
            group.streams = StreamsGroup(group_id)
            return group.streams
        raise StreamsGroupError(
            ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group."
        )

    async def join_group(self, request: JoinRequest) -> JoinResult:
        result = self.begin_join(request)
        if isinstance(result, JoinResult):
            return result
        return await result

    def begin_join(self, request: JoinRequest) -> JoinResult | asyncio.Future[JoinResult]:
        """The join's answer now, or the future the join's completion answers."""

        def error(code: ErrorCode) -> JoinResult:
            return JoinResult(code, request.member_id)

        if not request.group_id:
            return error(ErrorCode.INVALID_GROUP_ID)
        if not (
            self.min_session_timeout_ms <= request.session_timeout_ms <= self.max_session_timeout_ms
        ):
            return error(ErrorCode.INVALID_SESSION_TIMEOUT)
        known = bool(request.member_id)
        group = self.groups.get(request.group_id)
        if group is None and known:
            return error(ErrorCode.UNKNOWN_MEMBER_ID)
        if group is not None and group.share is not None:
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group is not None and group.streams is not None:
            if group.streams.members:
                return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            # Kafka's maybeDeleteEmptyStreamsGroup: an empty streams group becomes a classic
            # one (offline downgrade); its records are deleted, its offsets kept.
            stored = self.store.append(group.group_id, streams_tombstones(group.streams), now_ms())
            if stored != ErrorCode.NO_ERROR:
                return error(stored)
            group.streams.stop_timers()
            group.streams = None
        if group is not None and group.consumer is not None:
            if group.consumer.members:
                return self._join_consumer_group(group.consumer, request)
            # An empty consumer group becomes a classic one: its records are deleted.
            stored = self.store.append(group.group_id, tombstones(group.consumer), now_ms())
            if stored != ErrorCode.NO_ERROR:
                return error(stored)
            group.consumer = None
        checked = group or Group(request.group_id)
        if checked.is_in(GroupState.DEAD):
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not checked.supports_protocols(request.protocol_type, request.protocols):
            return error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        group = self.groups.setdefault(request.group_id, checked)
        if known:
            return self._join_known_member(group, request)
        return self._join_new_member(group, request)

    def _join_consumer_group(self, consumer: ConsumerGroup, request: JoinRequest) -> JoinResult:
        """A classic member joining a consumer group (migration.py): answered at once."""
        join = ClassicJoin(
            member_id=request.member_id,
            instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
        )
        try:
            member = self.classic_members.join(consumer, join, request.require_known_member_id)
        except MemberIdRequired as required:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, required.member_id)
        except ConsumerGroupError as exc:
            return JoinResult(exc.error, request.member_id)
        return JoinResult(
            ErrorCode.NO_ERROR,
            member.member_id,
            generation_id=member.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=self.classic_members.protocol_name(member),
        )

    def _join_new_member(
        self, group: Group, request: JoinRequest
    ) -> JoinResult | asyncio.Future[JoinResult]:
        member_id = f"{request.client_id}-{uuid.uuid4()}"
        if request.group_instance_id is not None:
            existing = group.static_member_id(request.group_instance_id)
            if existing is not None:
                return self._rejoin_static_member(group, request, existing, member_id)
        elif request.require_known_member_id:
            pending = group.pending_members[member_id] = Deadline()
            pending.start(
                request.session_timeout_ms, lambda: self._expire_pending(group, member_id)
            )
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        return self._add_member_and_rebalance(group, request, member_id)

    def _join_known_member(
        self, group: Group, request: JoinRequest
    ) -> JoinResult | asyncio.Future[JoinResult]:
        member_id = request.member_id
        if member_id in group.pending_members:
            return self._add_member_and_rebalance(group, request, member_id)
        if group.is_static_member_fenced(request.group_instance_id, member_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
        member = group.members.get(member_id)
        if member is None or group.is_in(GroupState.EMPTY):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if group.is_in(GroupState.COMPLETING_REBALANCE) and member.matches(request.protocols):
            return group.join_result(member)
        if (
            group.is_in(GroupState.STABLE)
            and not group.is_leader(member_id)
            and member.matches(request.protocols)
        ):
            return group.join_result(member)
        return self._update_member_and_rebalance(group, member, request)

    def _add_member_and_rebalance(
        self, group: Group, request: JoinRequest, member_id: str
    ) -> asyncio.Future[JoinResult]:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=request.protocols,
            is_new=True,
        )
        waiter = self._await_join(member)
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        member.session.start(
            NEW_MEMBER_JOIN_TIMEOUT_MS, lambda: self._expire_session(group, member)
        )
        self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)
        return waiter

    def _update_member_and_rebalance(
        self, group: Group, member: Member, request: JoinRequest
    ) -> asyncio.Future[JoinResult]:
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.complete_join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        waiter = self._await_join(member)
        self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)
        return waiter

    def _rejoin_static_member(
        self, group: Group, request: JoinRequest, old_member_id: str, new_member_id: str
    ) -> JoinResult | asyncio.Future[JoinResult]:
        """A static member came back under a new member id; the old id is fenced.

        As Kafka, a Stable group only rebalances if the rejoin changes the protocol the group
        would select: the member's metadata (a Java consumer's owned partitions and
        generation) may differ after a restart."""
        old = group.members[old_member_id]
        old.complete_join(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_member_id))
        old.complete_sync(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member = group.replace_static_member(old_member_id, new_member_id)
        member.client_id = request.client_id
        member.client_host = request.client_host
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.protocols = request.protocols
        if group.is_in(GroupState.STABLE) and group.select_protocol() == group.protocol_name:
            self._arm_session(group, member)
            self._store_group(group)
            result = group.join_result(member)
            if group.is_leader(new_member_id):
                result.members = group.joined_members()
                result.skip_assignment = True
            return result
        waiter = self._await_join(member)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        else:
            self._maybe_prepare_rebalance(group)
        self._maybe_complete_join(group)
        return waiter

    @staticmethod
    def _await_join(member: Member) -> asyncio.Future[JoinResult]:
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = waiter
        return waiter

    # ---- rebalance ------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: Group) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._reset_assignments(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.sync_deadline.cancel()
        group.pending_sync.clear()
        was_empty = group.is_in(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE, now_ms())
        if was_empty:
            delay = self.initial_rebalance_delay_ms
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.join_deadline.start(delay, lambda: self._initial_delay_expired(group, delay))
        else:
            group.initial_delay_remaining_ms = None
            group.join_deadline.start(
                group.rebalance_timeout_ms(), lambda: self._complete_join(group)
            )

    def _initial_delay_expired(self, group: Group, delay_ms: int) -> None:
        """Kafka's InitialDelayedJoin: wait again while new members keep arriving."""
        remaining = group.initial_delay_remaining_ms or 0
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            next_delay = min(delay_ms, remaining)
            group.initial_delay_remaining_ms = max(remaining - delay_ms, 0)
            group.join_deadline.start(
                next_delay, lambda: self._initial_delay_expired(group, next_delay)
            )
            return
        group.initial_delay_remaining_ms = None
        self._complete_join(group)

    def _maybe_complete_join(self, group: Group) -> None:
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_remaining_ms is None
            and group.all_members_joined()
        ):
            group.join_deadline.cancel()
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        group.join_deadline.cancel()
        for member in list(group.members.values()):
            if not member.awaiting_join and member.group_instance_id is None:
                self._remove_member(group, member, rebalance=False)
        if not group.maybe_elect_joined_leader() and group.members:
            # Only static members that have not rejoined are left: wait for them (or their
            # sessions) as Kafka does.
            group.join_deadline.start(
                group.rebalance_timeout_ms(), lambda: self._complete_join(group)
            )
            return
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.transition(GroupState.EMPTY, now_ms())
            self._store_group(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE, now_ms())
        for member in group.members.values():
            member.complete_join(group.join_result(member))
            member.is_new = False
            self._arm_session(group, member)
            group.pending_sync.add(member.member_id)
        generation = group.generation_id
        group.sync_deadline.start(
            group.rebalance_timeout_ms(), lambda: self._expire_sync(group, generation)
        )

    def _expire_sync(self, group: Group, generation: int) -> None:
        """Members that did not send SyncGroup within the rebalance timeout are removed."""
        if generation != group.generation_id or not group.pending_sync:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for member_id in list(group.pending_sync):
            member = group.members.get(member_id)
            if member is not None:
                self._remove_member(group, member, rebalance=False)
        self._prepare_rebalance(group)

    def _reset_assignments(self, group: Group, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.complete_sync(SyncResult(error))

    # ---- sessions --------------------------------------------------------------------------

    def _arm_session(self, group: Group, member: Member) -> None:
        member.session.start(member.session_timeout_ms, lambda: self._expire_session(group, member))

    def _expire_session(self, group: Group, member: Member) -> None:
        if group.members.get(member.member_id) is not member:
            return
        if member.awaiting_sync or (member.awaiting_join and not member.is_new):
            return  # kept alive until the join/sync completes (and re-arms the session)
        log.info("group %s: member %s session expired", group.group_id, member.member_id)
        self._remove_member(group, member)

    def _expire_pending(self, group: Group, member_id: str) -> None:
        if group.remove_pending(member_id):
            self._maybe_complete_join(group)

    def _remove_member(self, group: Group, member: Member, *, rebalance: bool = True) -> None:
        member.complete_join(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        member.complete_sync(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if not rebalance:
            return
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(group)

    def _member_error(
        self, group: Group | None, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        """Kafka's checks before SyncGroup and Heartbeat, in its order."""
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    # ---- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------

    async def sync_group(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        result = self._sync(
            group_id, member_id, instance_id, generation, protocol_type, protocol_name, assignments
        )
        if isinstance(result, SyncResult):
            return result
        return await result

    def _sync(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult | asyncio.Future[SyncResult]:
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None:
            try:
                assignment = self.classic_members.sync(
                    group.consumer, member_id, instance_id, generation, protocol_type, protocol_name
                )
            except ConsumerGroupError as exc:
                return SyncResult(exc.error)
            return SyncResult(ErrorCode.NO_ERROR, CONSUMER_PROTOCOL_TYPE, protocol_name, assignment)
        error = self._member_error(group, member_id, instance_id, generation)
        if error is not None:
            return SyncResult(error)
        assert group is not None
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]
        if group.is_in(GroupState.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member_id)
        if group.is_in(GroupState.STABLE):
            self._arm_session(group, member)
            return self._sync_result(group, member)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.complete_sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_waiter = waiter
        if group.is_leader(member_id):
            self._complete_sync(group, assignments)
        return waiter

    def _complete_sync(self, group: Group, assignments: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignments.get(member.member_id, b"")
        error = self._store_group(group)
        if error != ErrorCode.NO_ERROR:
            self._reset_assignments(group, error)
            self._maybe_prepare_rebalance(group)
            return
        group.transition(GroupState.STABLE, now_ms())
        for member in group.members.values():
            if member.awaiting_sync:
                member.complete_sync(self._sync_result(group, member))
            self._arm_session(group, member)

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(
            ErrorCode.NO_ERROR, group.protocol_type, group.protocol_name, member.assignment
        )

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None:
            try:
                return self.classic_members.heartbeat(
                    group.consumer, member_id, instance_id, generation
                )
            except ConsumerGroupError as exc:
                return exc.error
        error = self._member_error(group, member_id, instance_id, generation)
        if error is not None:
            return error
        assert group is not None
        if group.is_in(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._arm_session(group, group.members[member_id])
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NO_ERROR

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """The group-level error and one error per (member id, instance id) leaving."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NO_ERROR, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        if group.consumer is not None:
            consumer = group.consumer
            return ErrorCode.NO_ERROR, [
                self.classic_members.leave(consumer, m, i) for m, i in leaving
            ]
        return ErrorCode.NO_ERROR, [self._leave(group, m, i) for m, i in leaving]

    def _leave(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        if instance_id is not None:
            static_id = group.static_member_id(instance_id)
            if static_id is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if member_id and static_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            member_id = static_id
        elif group.remove_pending(member_id):
            self._maybe_complete_join(group)
            return ErrorCode.NO_ERROR
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("group %s: member %s left", group.group_id, member_id)
        self._remove_member(group, member)
        return ErrorCode.NO_ERROR

    # ---- offsets ---------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        commits: list[OffsetCommit],
        retention_ms: int = -1,
        api_version: int = 9,
    ) -> ErrorCode | list[ErrorCode]:
        """A group-level error for every partition, or one error per commit. For a consumer
        group, `generation` is the member epoch."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return ErrorCode.ILLEGAL_GENERATION
            group = self.groups[group_id] = Group(group_id)
        if group.share is not None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.streams is not None:
            refused = self.streams.commit_error(
                group.streams,
                member_id,
                generation,
                False,
                api_version,
                [(commit.topic, commit.partition) for commit in commits],
            )
            return refused.error if refused else self._store_offsets(group, commits, retention_ms)
        if group.consumer is not None:
            failed = self.consumer.commit_error(
                group.consumer, member_id, generation, False, api_version
            )
            return failed.error if failed else self._store_offsets(group, commits, retention_ms)
        error = self._commit_error(group, member_id, instance_id, generation)
        if error is not None:
            return error
        member = group.members.get(member_id)
        if member is not None:
            self._arm_session(group, member)
        return self._store_offsets(group, commits, retention_ms)

    @staticmethod
    def _commit_error(
        group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_member_fenced(instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return None
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def _store_offsets(
        self, group: Group, commits: list[OffsetCommit], retention_ms: int
    ) -> list[ErrorCode]:
        timestamp = now_ms()
        expire = timestamp + retention_ms if retention_ms >= 0 else -1
        errors: list[ErrorCode] = []
        accepted: dict[tuple[str, int], OffsetValue] = {}
        for commit in commits:
            error = self._offset_error(commit)
            errors.append(error)
            if error == ErrorCode.NO_ERROR:
                committed_at = (
                    timestamp if commit.commit_timestamp == -1 else commit.commit_timestamp
                )
                accepted[(commit.topic, commit.partition)] = OffsetValue(
                    commit.offset, commit.leader_epoch, commit.metadata or "", committed_at, expire
                )
        records: list[StoredRecord] = [
            (encode_offset_key(OffsetKey(group.group_id, topic, partition)), encode_offset_value(v))
            for (topic, partition), v in accepted.items()
        ]
        stored = self.store.append(group.group_id, records, timestamp)
        if stored != ErrorCode.NO_ERROR:
            return [stored if error == ErrorCode.NO_ERROR else error for error in errors]
        self.store.after_replication(group.group_id, lambda: group.offsets.update(accepted))
        return errors

    def _offset_error(self, commit: OffsetCommit) -> ErrorCode:
        if commit.metadata is not None and len(commit.metadata) > self.offset_metadata_max_bytes:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        if self.cluster.partition(commit.topic, commit.partition) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NO_ERROR

    # ---- transactional offsets (TxnOffsetCommit) --------------------------------------------

    def offsets_partition_for(self, group_id: str) -> int:
        return self.store.partition_of(group_id).index

    def commit_txn_offsets(
        self,
        group_id: str,
        producer: tuple[int, int],
        member_id: str,
        instance_id: str | None,
        generation: int,
        commits: list[OffsetCommit],
    ) -> ErrorCode | list[ErrorCode]:
        """Store offsets in the producer's transaction; they count once its COMMIT marker is
        written (`complete_txn_offsets`). A group-level error, or one error per commit."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = Group(group_id)
        error = self._txn_commit_error(group, member_id, instance_id, generation)
        if group.consumer is not None:
            failed = self.consumer.commit_error(group.consumer, member_id, generation, True)
            error = failed.error if failed else None
        if group.streams is not None:
            refused = self.streams.commit_error(
                group.streams,
                member_id,
                generation,
                True,
                partitions=[(commit.topic, commit.partition) for commit in commits],
            )
            error = refused.error if refused else None
        if error is not None:
            return error
        timestamp = now_ms()
        errors = [self._offset_error(commit) for commit in commits]
        accepted = {
            (commit.topic, commit.partition): OffsetValue(
                commit.offset, commit.leader_epoch, commit.metadata or "", timestamp
            )
            for commit, error in zip(commits, errors, strict=True)
            if error == ErrorCode.NO_ERROR
        }
        records: list[StoredRecord] = [
            (encode_offset_key(OffsetKey(group_id, topic, partition)), encode_offset_value(v))
            for (topic, partition), v in accepted.items()
        ]
        stored = self.store.append(group_id, records, timestamp, txn_producer=producer)
        if stored != ErrorCode.NO_ERROR:
            return [stored if error == ErrorCode.NO_ERROR else error for error in errors]
        self.txn_offsets.add(producer[0], group_id, accepted)
        return errors

    @staticmethod
    def _txn_commit_error(
        group: Group, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        """Kafka's validateOffsetCommit for a transactional commit (v3+ group metadata)."""
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and not member_id and instance_id is None:
            return None
        if group.is_static_member_fenced(instance_id, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def complete_txn_offsets(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker of `producer_id` is in that `__consumer_offsets` partition."""
        self.groups.load_partition(offsets_partition)  # its pending offsets, first
        completed = self.txn_offsets.complete(
            producer_id, lambda group_id: self.offsets_partition_for(group_id) == offsets_partition
        )
        if not commit:
            return
        for group_id, offsets in completed.items():
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = Group(group_id)
            group.offsets.update(offsets)

    def fetch_member_error(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> ErrorCode | None:
        """OffsetFetch v9+ from a member of a consumer group: Kafka's validateOffsetFetch.
        (A classic group does not check them; a share group has no offsets to fetch.)"""
        group = self.groups.get(group_id)
        if group is not None and group.share is not None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group is not None and group.streams is not None:
            refused = self.streams.fetch_error(group.streams, member_id, member_epoch)
            return refused.error if refused else None
        if group is None or group.consumer is None:
            return None
        failed = self.consumer.fetch_error(group.consumer, member_id, member_epoch)
        return failed.error if failed else None

    def fetch_offsets(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int]]] | None,
        require_stable: bool = False,
    ) -> list[FetchedOffset]:
        """Committed offsets (-1 when none); `wanted` None means all of the group's. With
        `require_stable`, a partition with transactional offsets awaiting their marker answers
        UNSTABLE_OFFSET_COMMIT (and -1), as Kafka's OffsetMetadataManager.fetchOffsets."""
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if wanted is None:
            keys = sorted(offsets)
        else:
            keys = [(topic, partition) for topic, partitions in wanted for partition in partitions]
        fetched = []
        for topic, partition in keys:
            value = offsets.get((topic, partition))
            if require_stable and self.txn_offsets.is_pending(group_id, topic, partition):
                fetched.append(
                    FetchedOffset(topic, partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
                )
            elif value is None:
                fetched.append(FetchedOffset(topic, partition, -1, -1, ""))
            else:
                fetched.append(
                    FetchedOffset(
                        topic, partition, value.offset, value.leader_epoch, value.metadata
                    )
                )
        return fetched

    # ---- admin -----------------------------------------------------------------------------

    def listed_groups(self) -> list[Group]:
        return [group for group in self.groups.values() if not group.is_in(GroupState.DEAD)]

    def delete_groups(self, group_ids: Iterable[str]) -> list[tuple[str, ErrorCode]]:
        results = []
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if not group_id:
                error = ErrorCode.INVALID_GROUP_ID
            elif group is None or group.is_in(GroupState.DEAD):
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_in(GroupState.EMPTY) or _has_modern_members(group):
                error = ErrorCode.NON_EMPTY_GROUP
            else:
                error = self._delete_group(group)
            results.append((group_id, error))
        return results

    def _delete_group(self, group: Group) -> ErrorCode:
        records = self._offset_tombstones(group, list(group.offsets))
        records.append((encode_group_key(GroupKey(group.group_id)), None))
        if group.consumer is not None:
            records.extend(tombstones(group.consumer))
        if group.streams is not None:
            records.extend(streams_tombstones(group.streams))
            group.streams.stop_timers()
        if group.share is not None:
            records.extend(share_tombstones(group.share))
        error = self.store.append(group.group_id, records, now_ms())
        if error != ErrorCode.NO_ERROR:
            return error
        group.transition(GroupState.DEAD, now_ms())
        del self.groups[group.group_id]
        return ErrorCode.NO_ERROR

    @staticmethod
    def _offset_tombstones(group: Group, keys: Iterable[tuple[str, int]]) -> list[StoredRecord]:
        return [
            (encode_offset_key(OffsetKey(group.group_id, topic, partition)), None)
            for topic, partition in keys
        ]

    def delete_offsets(
        self, group_id: str, wanted: list[tuple[str, list[int]]]
    ) -> tuple[ErrorCode, list[tuple[str, int, ErrorCode]]]:
        """Kafka's OffsetDelete: a group error, or one error per requested partition."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD) or group.share is not None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        subscribed: set[str] | None = set()
        if group.consumer is not None:
            subscribed = group.consumer.subscribed_topic_names()
        elif group.streams is not None:
            subscribed = group.streams.source_topics() if group.streams.members else set()
        elif not group.is_in(GroupState.EMPTY):
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                return ErrorCode.NON_EMPTY_GROUP, []
            subscribed = group.subscribed_topics()
        results = []
        deletable = []
        for topic, partitions in wanted:
            for partition in partitions:
                if self.cluster.partition(topic, partition) is None:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif subscribed is None or topic in subscribed:
                    error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    error = ErrorCode.NO_ERROR
                    deletable.append((topic, partition))
                results.append((topic, partition, error))
        present = [key for key in deletable if key in group.offsets]
        stored = self.store.append(group_id, self._offset_tombstones(group, present), now_ms())
        if stored != ErrorCode.NO_ERROR:
            return stored, []
        for key in present:
            del group.offsets[key]
        return ErrorCode.NO_ERROR, results

    # ---- persistence and expiry ------------------------------------------------------------

    def _store_group(self, group: Group) -> ErrorCode:
        value = GroupValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id if group.members else None,
            current_state_timestamp=group.state_timestamp_ms,
            members=[member.stored(group.protocol_name) for member in group.members.values()],
        )
        record = (encode_group_key(GroupKey(group.group_id)), encode_group_value(value))
        return self.store.append(group.group_id, [record], now_ms())

    def _schedule_retention_check(self) -> None:
        self._retention_check.start(self.retention_check_interval_ms, self._run_retention_check)

    def _run_retention_check(self) -> None:
        self.expire_offsets(now_ms())
        self._schedule_retention_check()

    def expire_offsets(self, now: int) -> None:
        """Kafka's offset expiration (KIP-211), then drop empty groups with no offsets left."""
        for group in list(self.groups.values()):
            self._remove_offsets(group, self._expired_offsets(group, now), now)

    def delete_topic_offsets(self, topics: Iterable[str]) -> None:
        """Kafka's cleanup when topics are deleted (GroupMetadataManager.cleanupGroupMetadata):
        every group's offsets of those topics go, tombstoned in __consumer_offsets, and
        Empty groups left without offsets are dropped."""
        deleted = set(topics)
        now = now_ms()
        for group in list(self.groups.values()):
            self._remove_offsets(group, [key for key in group.offsets if key[0] in deleted], now)

    def _remove_offsets(self, group: Group, keys: list[tuple[str, int]], now: int) -> None:
        records = self._offset_tombstones(group, keys)
        drop_group = (
            group.is_in(GroupState.EMPTY)
            and not _has_modern_members(group)
            and len(keys) == len(group.offsets)
        )
        if drop_group:
            records.append((encode_group_key(GroupKey(group.group_id)), None))
            if group.consumer is not None:
                records.extend(tombstones(group.consumer))
            if group.streams is not None:
                records.extend(streams_tombstones(group.streams))
                group.streams.stop_timers()
            if group.share is not None:
                records.extend(share_tombstones(group.share))
        if self.store.append(group.group_id, records, now) != ErrorCode.NO_ERROR:
            return
        for key in keys:
            del group.offsets[key]
        if drop_group:
            group.transition(GroupState.DEAD, now)
            del self.groups[group.group_id]

    def _expired_offsets(self, group: Group, now: int) -> list[tuple[str, int]]:
        subscribed: set[str] = set()
        if group.consumer is not None:
            base_from_state = False
            subscribed = group.consumer.subscribed_topic_names()
        elif group.streams is not None:
            base_from_state = False
            subscribed = group.streams.source_topics() if group.streams.members else set()
        elif group.is_in(GroupState.EMPTY):
            base_from_state = group.protocol_type is not None and group.state_timestamp_ms >= 0
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in(GroupState.STABLE):
            base_from_state = False
            topics = group.subscribed_topics()
            if topics is None:
                return []
            subscribed = topics
        else:
            return []
        expired = []
        for key, value in group.offsets.items():
            if key[0] in subscribed:
                continue
            if value.expire_timestamp >= 0:
                if now >= value.expire_timestamp:
                    expired.append(key)
                continue
            base = group.state_timestamp_ms if base_from_state else value.commit_timestamp
            if now - base >= self.offsets_retention_ms:
                expired.append(key)
        return expired
