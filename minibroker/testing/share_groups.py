"""Snapshots of share groups (KIP-932) for tests: `KafkaBroker.share_group(group_id)` and
`KafkaBroker.share_partition(group_id, topic, partition)`."""

from __future__ import annotations

from dataclasses import dataclass

from minibroker.groups.consumer.model import Assignment
from minibroker.groups.share.model import ShareGroup
from minibroker.groups.share.partition import SharePartition
from minibroker.server.broker import Broker


@dataclass(frozen=True)
class ShareMemberView:
    member_id: str
    member_epoch: int
    client_id: str
    subscribed_topics: list[str]
    assigned: dict[str, list[int]]  # partitions by topic name, as the member has them now
    target: dict[str, list[int]]  # its target assignment (taken at its next heartbeat)


@dataclass(frozen=True)
class ShareGroupView:
    group_id: str
    state: str  # Empty, Stable
    group_epoch: int
    assignment_epoch: int
    members: dict[str, ShareMemberView]


def by_topic_name(broker: Broker, assignment: Assignment) -> dict[str, list[int]]:
    """An assignment's partitions by topic name (the id where the topic is gone)."""
    names = broker.cluster.topics_by_id
    return {
        names[topic_id].name if topic_id in names else str(topic_id): sorted(partitions)
        for topic_id, partitions in assignment.items()
        if partitions
    }


def share_group_view(broker: Broker, group: ShareGroup) -> ShareGroupView:
    return ShareGroupView(
        group_id=group.group_id,
        state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        members={
            member.member_id: ShareMemberView(
                member_id=member.member_id,
                member_epoch=member.member_epoch,
                client_id=member.client_id,
                subscribed_topics=sorted(member.subscribed_topic_names),
                assigned=by_topic_name(broker, member.assigned),
                target=by_topic_name(broker, group.target.get(member.member_id, {})),
            )
            for member in group.members.values()
        },
    )


@dataclass(frozen=True)
class InFlightRecordView:
    state: str  # AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED
    delivery_count: int
    member_id: str | None  # the member holding it (ACQUIRED only)


@dataclass(frozen=True)
class SharePartitionView:
    start_offset: int  # SPSO: every record below is settled
    end_offset: int  # one past the last record ever acquired
    records: dict[int, InFlightRecordView]  # every offset in [start_offset, end_offset)


def share_partition_view(share: SharePartition) -> SharePartitionView:
    return SharePartitionView(
        start_offset=share.start_offset,
        end_offset=share.end_offset,
        records={
            offset: InFlightRecordView(record.state.name, record.delivery_count, record.member_id)
            for offset, record in share.records()
        },
    )
