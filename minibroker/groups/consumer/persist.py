"""A consumer group as Kafka's records in `__consumer_offsets`, and back.

`snapshot(group)` is every record that describes the group now (Kafka's record types, codecs
in groups/consumer_records.py): the group epoch, each member's subscription, the target
assignment (its epoch and each member's partitions), each member's current assignment and
the regexes with the topics they resolved to. `changes()` compares it with what was last
written and gives only the records that changed, and tombstones for those gone, so a steady
heartbeat writes nothing. `restore()` rebuilds a group from the live records found at load
(the latest value of each key); the log cleaner keeps one record per key.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from minibroker.groups.consumer.model import (
    Assignment,
    ClassicInfo,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from minibroker.groups.consumer_records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupValue,
    TopicPartitions,
    encode_consumer_group_record,
)
from minibroker.groups.record_codec import StoredRecord, take_changes, take_tombstones

# Kafka's MemberState byte values.
MEMBER_STATE_VALUES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_STATES_BY_VALUE = {value: state for state, value in MEMBER_STATE_VALUES.items()}


def _topic_partitions(assignment: Assignment) -> list[TopicPartitions]:
    return [
        TopicPartitions(topic_id, sorted(partitions))
        for topic_id, partitions in sorted(assignment.items(), key=lambda item: str(item[0]))
        if partitions
    ]


def _assignment(items: list[TopicPartitions]) -> Assignment:
    return {item.topic_id: set(item.partitions) for item in items if item.partitions}


def _member_records(
    group: ConsumerGroup, member: ConsumerMember
) -> list[tuple[ConsumerGroupKey, ConsumerGroupValue]]:
    group_id, member_id = group.group_id, member.member_id
    return [
        (
            ConsumerGroupMemberMetadataKey(group_id, member_id),
            ConsumerGroupMemberMetadataValue(
                instance_id=member.instance_id,
                rack_id=member.rack_id,
                client_id=member.client_id,
                client_host=member.client_host,
                subscribed_topic_names=sorted(member.subscribed_topic_names),
                subscribed_topic_regex=member.subscribed_topic_regex,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                server_assignor=member.server_assignor,
                classic_member_metadata=_classic_metadata(member.classic),
            ),
        ),
        (
            ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
            ConsumerGroupTargetAssignmentMemberValue(
                _topic_partitions(group.target.get(member_id, {}))
            ),
        ),
        (
            ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=member.member_epoch,
                previous_member_epoch=member.previous_member_epoch,
                state=MEMBER_STATE_VALUES[member.state],
                assigned_partitions=_topic_partitions(member.assigned),
                partitions_pending_revocation=_topic_partitions(member.pending_revocation),
            ),
        ),
    ]


def _classic_metadata(classic: ClassicInfo | None) -> ClassicMemberMetadata | None:
    if classic is None:
        return None
    return ClassicMemberMetadata(
        classic.session_timeout_ms,
        [ClassicProtocol(name, metadata) for name, metadata in classic.protocols],
    )


def _classic_info(metadata: ClassicMemberMetadata | None) -> ClassicInfo | None:
    if metadata is None:
        return None
    return ClassicInfo(
        metadata.session_timeout_ms,
        [(protocol.name, protocol.metadata) for protocol in metadata.supported_protocols],
    )


def _group_records(group: ConsumerGroup) -> list[tuple[ConsumerGroupKey, ConsumerGroupValue]]:
    """The records of the group as a whole: its epoch, target assignment epoch, regexes."""
    records: list[tuple[ConsumerGroupKey, ConsumerGroupValue]] = [
        (
            ConsumerGroupMetadataKey(group.group_id),
            ConsumerGroupMetadataValue(group.group_epoch, group.subscription_metadata_hash()),
        ),
        (
            ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
            ConsumerGroupTargetAssignmentMetadataValue(group.assignment_epoch),
        ),
    ]
    for regex, (topics, timestamp) in group.resolved_regexes.items():
        records.append(
            (
                ConsumerGroupRegularExpressionKey(group.group_id, regex),
                ConsumerGroupRegularExpressionValue(sorted(topics), 0, timestamp),
            )
        )
    return records


def _encoded(
    records: list[tuple[ConsumerGroupKey, ConsumerGroupValue]],
) -> dict[bytes, bytes | None]:
    return dict(encode_consumer_group_record(key, value) for key, value in records)


def snapshot(group: ConsumerGroup) -> dict[bytes, bytes | None]:
    """The group's records now, as encoded key -> encoded value."""
    records = _group_records(group)
    for member in group.members.values():
        records.extend(_member_records(group, member))
    return _encoded(records)


def changes(group: ConsumerGroup, member: ConsumerMember | None = None) -> list[StoredRecord]:
    """Records to append so that the log describes the group as it is now; the group
    remembers them as written. With `member` (the one whose request changed the group),
    only its records are compared when the group's own records and its members are as
    written (a heartbeat that moved no epoch changes nobody else's records)."""
    if member is not None and set(group.members) == group.written_members:
        part = _encoded(_group_records(group))
        if all(group.written.get(key) == value for key, value in part.items()):
            part.update(_encoded(_member_records(group, member)))
            changed = [(k, v) for k, v in part.items() if group.written.get(k) != v]
            group.written.update(part)
            return changed
    records = take_changes(group, snapshot(group))
    group.written_members = set(group.members)
    return records


def tombstones(group: ConsumerGroup) -> list[StoredRecord]:
    """Deletes every record of the group (DeleteGroups, or a group that became classic)."""
    records = take_tombstones(group)
    group.written_members = set()
    return records


def restore(
    group_id: str, records: Mapping[ConsumerGroupKey, ConsumerGroupValue]
) -> ConsumerGroup | None:
    """The group the live records describe; None without a group metadata record."""
    metadata = records.get(ConsumerGroupMetadataKey(group_id))
    if not isinstance(metadata, ConsumerGroupMetadataValue):
        return None
    group = ConsumerGroup(
        group_id, group_epoch=metadata.epoch, metadata_hash=metadata.metadata_hash
    )
    target_metadata = records.get(ConsumerGroupTargetAssignmentMetadataKey(group_id))
    if isinstance(target_metadata, ConsumerGroupTargetAssignmentMetadataValue):
        group.assignment_epoch = target_metadata.assignment_epoch
    for key, value in records.items():
        if isinstance(key, ConsumerGroupMemberMetadataKey) and isinstance(
            value, ConsumerGroupMemberMetadataValue
        ):
            group.add(_restored_member(key.member_id, value, records, group_id))
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey) and isinstance(
            value, ConsumerGroupTargetAssignmentMemberValue
        ):
            group.target[key.member_id] = _assignment(value.topic_partitions)
        elif isinstance(key, ConsumerGroupRegularExpressionKey) and isinstance(
            value, ConsumerGroupRegularExpressionValue
        ):
            group.resolved_regexes[key.regular_expression] = (tuple(value.topics), value.timestamp)
    group.target = {m: a for m, a in group.target.items() if m in group.members}
    return group


def _restored_member(
    member_id: str,
    metadata: ConsumerGroupMemberMetadataValue,
    records: Mapping[ConsumerGroupKey, ConsumerGroupValue],
    group_id: str,
) -> ConsumerMember:
    member = ConsumerMember(
        member_id,
        instance_id=metadata.instance_id,
        rack_id=metadata.rack_id,
        client_id=metadata.client_id,
        client_host=metadata.client_host,
        rebalance_timeout_ms=metadata.rebalance_timeout_ms,
        server_assignor=metadata.server_assignor,
        subscribed_topic_names=list(metadata.subscribed_topic_names),
        subscribed_topic_regex=metadata.subscribed_topic_regex,
        classic=_classic_info(metadata.classic_member_metadata),
    )
    current = records.get(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id))
    if isinstance(current, ConsumerGroupCurrentMemberAssignmentValue):
        member.member_epoch = current.member_epoch
        member.previous_member_epoch = current.previous_member_epoch
        member.state = _STATES_BY_VALUE.get(current.state, MemberState.STABLE)
        member.assigned = _assignment(current.assigned_partitions)
        member.pending_revocation = _assignment(current.partitions_pending_revocation)
    return member


def now_ms() -> int:
    return time.time_ns() // 1_000_000
