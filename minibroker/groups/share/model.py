"""A share group and its members (KIP-932), as Kafka 4.3's `ShareGroup` and
`ShareGroupMember`.

A share group has a group epoch (bumped whenever a member joins, leaves or changes its
subscription, or the subscribed topics change), a target assignment computed at an assignment
epoch by the simple assignor, and members each with a member epoch and the partitions assigned
to them. Partitions are shared: several members may have the same partition, and a member
takes its target assignment at once (share groups have no revocation protocol). The group is
Empty without members, else Stable.

Written to `__consumer_offsets` as Kafka's share-group records (records.py) and loaded back
with the group's coordinator partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from minibroker.groups.consumer.model import Assignment, TopicInfo
from minibroker.groups.timers import Deadline

LEAVE_GROUP_MEMBER_EPOCH = -1
SHARE_PROTOCOL_TYPE = "share"


class ShareGroupState(StrEnum):
    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass(eq=False)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    session: Deadline = field(default_factory=Deadline)

    def take(self, epoch: int, assignment: Assignment) -> None:
        """The member moves to the target assignment `assignment` of epoch `epoch`."""
        if epoch != self.member_epoch:
            self.previous_member_epoch = self.member_epoch
            self.member_epoch = epoch
        self.assigned = assignment


@dataclass(eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # The existing topics the members subscribe to, by name.
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)
    # The records last written for the group (records.py), by key.
    written: dict[bytes, bytes | None] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def remove(self, member_id: str) -> ShareMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            member.session.cancel()
            self.target.pop(member_id, None)
        return member

    def subscribed_topic_names(self) -> set[str]:
        names: set[str] = set()
        for member in self.members.values():
            names |= member.subscribed_topic_names
        return names

    def stop_timers(self) -> None:
        for member in self.members.values():
            member.session.cancel()
