"""The share groups' `simple` assignor, as Kafka 4.3's `SimpleAssignor` (KIP-932).

Partitions are shared: when a topic has fewer partitions than members, each partition goes to
several members. With P partitions and M members, each partition is wanted by
`ceil(M / P)` members (the desired sharing) and member i (in the group's member order) gets
`ceil(x * (i + 1)) - ceil(x * i)` partitions, x = sharing * P / M: balance first (counts differ
by at most one), then stickiness (members keep what they had up to their count). So two
members of a group reading a one-partition topic both get partition 0; with four partitions
each gets two.

Kafka's steps, for one pool of partitions and the members eligible for it: drop from each
member what it had beyond its count; drop members from partitions shared more than desired;
then hand the partitions still under-shared to the members still under their count, cycling
through those members. When every member subscribes to the same topics (homogeneous) the
pool is all their partitions; otherwise (heterogeneous) each topic is balanced on its own
among the members subscribed to it. Partitions of topics a member no longer subscribes to
are dropped. Orders Kafka leaves to hash maps are fixed here: members in join order,
partitions by topic name and index.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from minibroker.groups.consumer.model import Assignment, TopicInfo

TopicPartition = tuple[uuid.UUID, int]


@dataclass(frozen=True, slots=True)
class ShareMemberSpec:
    subscribed: frozenset[str]  # topic names
    current: Assignment  # the member's current target assignment


def assign(
    members: Mapping[str, ShareMemberSpec], topics: Mapping[str, TopicInfo]
) -> dict[str, Assignment]:
    """The target assignment of every member (ordered as `members`), given the existing
    subscribed topics by name."""
    order = list(members)
    if not order:
        return {}
    current = {member_id: _partitions(spec.current) for member_id, spec in members.items()}
    chosen: dict[str, set[TopicPartition]] = {member_id: set() for member_id in order}
    subscriptions = {spec.subscribed for spec in members.values()}
    if len(subscriptions) <= 1:
        names = sorted(name for name in subscriptions.pop() if name in topics)
        _merge(chosen, _balance(order, _pool(topics, names), current))
    else:
        for name in sorted(topics):
            eligible = [m for m in order if name in members[m].subscribed]
            if eligible:
                _merge(chosen, _balance(eligible, _pool(topics, [name]), current))
    return {member_id: _assignment(parts) for member_id, parts in chosen.items()}


def _partitions(assignment: Assignment) -> set[TopicPartition]:
    return {(topic_id, p) for topic_id, parts in assignment.items() for p in parts}


def _assignment(partitions: set[TopicPartition]) -> Assignment:
    result: Assignment = {}
    for topic_id, partition in partitions:
        result.setdefault(topic_id, set()).add(partition)
    return result


def _merge(into: dict[str, set[TopicPartition]], more: dict[str, set[TopicPartition]]) -> None:
    for member_id, partitions in more.items():
        into[member_id] |= partitions


def _pool(topics: Mapping[str, TopicInfo], names: Sequence[str]) -> list[TopicPartition]:
    return [(topics[n].topic_id, p) for n in names for p in range(topics[n].partitions)]


def _desired_counts(members: int, partitions: int, sharing: int) -> list[int]:
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


def _balance(
    members: list[str],
    pool: list[TopicPartition],
    current: Mapping[str, set[TopicPartition]],
) -> dict[str, set[TopicPartition]]:
    """One pool's partitions among `members`, keeping what they had where balance allows."""
    sharing = -(-len(members) // len(pool)) if pool else 0
    desired = dict(zip(members, _desired_counts(len(members), len(pool), sharing), strict=True))
    in_pool = set(pool)
    held = {m: sorted(current.get(m, set()) & in_pool)[: desired[m]] for m in members}
    by_partition: dict[TopicPartition, list[str]] = {tp: [] for tp in pool}
    for member_id in members:
        for tp in held[member_id]:
            by_partition[tp].append(member_id)
    for tp, holders in by_partition.items():
        for member_id in holders[sharing:]:
            held[member_id].remove(tp)
        del holders[sharing:]
    result = {m: set(parts) for m, parts in held.items()}
    _hand_out(members, pool, by_partition, result, desired, sharing)
    return result


def _hand_out(
    members: list[str],
    pool: list[TopicPartition],
    by_partition: dict[TopicPartition, list[str]],
    result: dict[str, set[TopicPartition]],
    desired: dict[str, int],
    sharing: int,
) -> None:
    """Kafka's assignRemainingPartitions: one pass over the partitions, cycling through the
    members under their count; a partition no such member can take stays under-shared."""
    unfilled = [m for m in members if len(result[m]) < desired[m]]
    position = 0
    assigned_this_cycle = False
    for tp in pool:
        if not unfilled:
            return
        wanted = sharing - len(by_partition[tp])
        while wanted > 0:
            if position >= len(unfilled):
                if not assigned_this_cycle:
                    break
                position, assigned_this_cycle = 0, False
                continue
            member_id = unfilled[position]
            if member_id in by_partition[tp]:
                position += 1
                continue
            by_partition[tp].append(member_id)
            result[member_id].add(tp)
            wanted -= 1
            assigned_this_cycle = True
            if len(result[member_id]) >= desired[member_id]:
                unfilled.pop(position)
            else:
                position += 1
