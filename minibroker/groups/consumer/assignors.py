"""The server-side assignors of KIP-848: `uniform` (the default) and `range`.

Both take each member's subscribed topics and its current target assignment and return a
new target assignment for every member.

`uniform` (Kafka's `UniformAssignor`): every partition of a subscribed topic goes to one of
the members subscribed to it, as evenly as the subscriptions allow, moving as few
partitions as possible: a member keeps the partitions it had (while it stays subscribed)
up to its fair share, the rest go to the least loaded eligible members, and partitions then
move from the most to the least loaded eligible members until no move evens things out.

`range` (Kafka's server-side `RangeAssignor`): per topic, the members subscribed to it,
sorted by member id, get consecutive ranges of partitions; the first `partitions % members`
get one extra. Members with the same subscriptions get the same partition indexes of
co-partitioned topics, as the classic range assignor.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from minibroker.groups.consumer.model import Assignment


@dataclass(frozen=True, slots=True)
class MemberSpec:
    subscribed: frozenset[uuid.UUID]
    current: Assignment = field(default_factory=dict)


# members by id, partition counts by topic id -> the target assignment of every member.
Assignor = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], dict[str, Assignment]]


def _empty_targets(members: Mapping[str, MemberSpec]) -> dict[str, Assignment]:
    return {member_id: {} for member_id in members}


def range_assign(
    members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    targets = _empty_targets(members)
    for topic_id, count in topics.items():
        subscribed = sorted(m for m, spec in members.items() if topic_id in spec.subscribed)
        if not subscribed:
            continue
        quota, extra = divmod(count, len(subscribed))
        start = 0
        for index, member_id in enumerate(subscribed):
            size = quota + (1 if index < extra else 0)
            if size:
                targets[member_id][topic_id] = set(range(start, start + size))
            start += size
    return targets


def uniform_assign(
    members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    eligible = {
        (topic_id, partition): sorted(m for m, s in members.items() if topic_id in s.subscribed)
        for topic_id, count in topics.items()
        for partition in range(count)
    }
    eligible = {tp: ms for tp, ms in eligible.items() if ms}
    owner = _sticky_owners(members, eligible)
    load = {member_id: 0 for member_id in members}
    for member_id in owner.values():
        load[member_id] += 1
    for tp in sorted(tp for tp in eligible if tp not in owner):
        chosen = min(eligible[tp], key=lambda m: (load[m], m))
        owner[tp] = chosen
        load[chosen] += 1
    _rebalance(owner, eligible, load)
    targets = _empty_targets(members)
    for (topic_id, partition), member_id in owner.items():
        targets[member_id].setdefault(topic_id, set()).add(partition)
    return targets


def _sticky_owners(
    members: Mapping[str, MemberSpec], eligible: Mapping[tuple[uuid.UUID, int], list[str]]
) -> dict[tuple[uuid.UUID, int], str]:
    """Partitions members keep from their current assignment, at most their fair share."""
    total = len(eligible)
    share = -(-total // len(members)) if members else 0
    owner: dict[tuple[uuid.UUID, int], str] = {}
    for member_id in sorted(members):
        kept = 0
        for topic_id, partitions in sorted(members[member_id].current.items()):
            for partition in sorted(partitions):
                tp = (topic_id, partition)
                if kept < share and tp not in owner and member_id in eligible.get(tp, ()):
                    owner[tp] = member_id
                    kept += 1
    return owner


def _rebalance(
    owner: dict[tuple[uuid.UUID, int], str],
    eligible: Mapping[tuple[uuid.UUID, int], list[str]],
    load: dict[str, int],
) -> None:
    """Move partitions from more to less loaded eligible members while it evens loads."""
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner):
            current = owner[tp]
            target = min(eligible[tp], key=lambda m: (load[m], m))
            if load[target] + 1 < load[current]:
                owner[tp] = target
                load[current] -= 1
                load[target] += 1
                moved = True


# By name, as settings.CONSUMER_ASSIGNORS lists them for `group.consumer.assignors`.
ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assign, "range": range_assign}
