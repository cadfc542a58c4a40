"""Incremental reconciliation, as Kafka's `CurrentAssignmentBuilder`.

A member moves towards its target assignment one step per heartbeat: partitions it must give
up are revoked first (it keeps its epoch and stays in UNREVOKED_PARTITIONS until a heartbeat
reports them no longer owned); then it moves to the target assignment epoch and gets the new
partitions that no other member still owns; the ones still owned elsewhere stay pending
(UNRELEASED_PARTITIONS) until their owner revokes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from minibroker.groups.consumer.model import Assignment, ConsumerMember, MemberState

PartitionEpoch = Callable[[uuid.UUID, int], int]


@dataclass(frozen=True, slots=True)
class NextAssignment:
    state: MemberState
    epoch: int
    assigned: Assignment
    pending_revocation: Assignment


def owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member's reported partitions include any of these (unknown: it does)."""
    if owned is None:
        return True
    return any(owned.get(topic_id, set()) & parts for topic_id, parts in partitions.items())


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> NextAssignment | None:
    """The member's next current assignment, or None when it stays as it is."""
    if member.state == MemberState.STABLE and member.member_epoch == target_epoch:
        return None
    if member.state == MemberState.UNREVOKED_PARTITIONS and owns_any(
        owned, member.pending_revocation
    ):
        return None
    return _next(member, target_epoch, target, partition_epoch, owned)


def _next(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    partition_epoch: PartitionEpoch,
    owned: Assignment | None,
) -> NextAssignment:
    assigned: Assignment = {}
    revoke: Assignment = {}
    to_assign: Assignment = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, set())
        current = member.assigned.get(topic_id, set())
        kept = current & wanted
        free = {p for p in wanted - kept if partition_epoch(topic_id, p) == -1}
        unreleased = unreleased or len(free) < len(wanted - kept)
        if kept:
            assigned[topic_id] = kept
        if current - kept:
            revoke[topic_id] = current - kept
        if free:
            to_assign[topic_id] = free
    if revoke and owns_any(owned, revoke):
        return NextAssignment(
            MemberState.UNREVOKED_PARTITIONS, member.member_epoch, assigned, revoke
        )
    for topic_id, partitions in to_assign.items():
        assigned.setdefault(topic_id, set()).update(partitions)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return NextAssignment(state, target_epoch, assigned, {})
