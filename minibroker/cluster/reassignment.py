"""Leader elections and replica reassignments that admin clients ask the controller for
(ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments), decided as Kafka's
controller decides them (`ReplicationControlManager`, `PartitionReassignmentReplicas`,
`PartitionReassignmentRevert`, `PartitionChangeBuilder`).

Elections: a preferred election makes the first replica of the assignment leader when it is
live and in the ISR (else, if the leader itself is not, another live ISR member); an unclean
one gives a partition without a leader its first live in-sync replica, or else its first live
replica. A partition of a topic created with one replica (no `ReplicaSet`: one log shared by
the nodes) always has its single replica as leader.

Reassignments: the partition's replicas become the target followed by the replicas being
removed; the new replicas start empty on their nodes and catch up as followers. Once every
replica of the target is in the ISR (checked when the ISR grows), the removed replicas leave
the ISR and are deleted, and the leader is re-elected if it was removed (else its leader epoch
is bumped, fencing the removed replicas). Cancelling reverts to the original replicas and
deletes the added ones. A one-replica partition can only be "reassigned" to one live node: its
leadership moves there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from enum import IntEnum
from typing import TYPE_CHECKING

from minibroker.cluster.assignments import assignment_error, check_manual_replicas
from minibroker.cluster.replicas import Reassignment, ReplicaSet
from minibroker.cluster.state import Partition, TopicError
from minibroker.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from minibroker.server.broker import Broker

ELECTION_NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."
PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE = "The preferred leader was not available."
ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE = "Eligible topic partition leaders are not available."
NO_REASSIGNMENT_IN_PROGRESS_MESSAGE = "No partition reassignment is in progress."


class ElectionType(IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


ElectionOutcome = tuple[ErrorCode, str | None]
ELECTED: ElectionOutcome = (ErrorCode.NO_ERROR, None)
NOT_NEEDED: ElectionOutcome = (ErrorCode.ELECTION_NOT_NEEDED, ELECTION_NOT_NEEDED_MESSAGE)


# ---- elections ---------------------------------------------------------------------------


def elect(broker: Broker, partition: Partition, election_type: ElectionType) -> ElectionOutcome:
    """Kafka's `ReplicationControlManager.electLeader` for one partition."""
    replica_set = partition.replication
    if replica_set is None:
        return NOT_NEEDED
    if election_type == ElectionType.PREFERRED:
        return _elect_preferred(broker, partition, replica_set)
    return _elect_unclean(broker, partition, replica_set)


def _electable(broker: Broker, replica_set: ReplicaSet) -> list[int]:
    """The replicas that may lead cleanly: live, unfenced and in the ISR (or, the ISR empty,
    in the ELR: Kafka's `isValidNewLeader`), in assignment order."""
    reachable = broker.nodes.reachable()
    isr = replica_set.isr or replica_set.elr
    return [node for node in replica_set.assignment if node in reachable and node in isr]


def _elect_preferred(
    broker: Broker, partition: Partition, replica_set: ReplicaSet
) -> ElectionOutcome:
    """The preferred replica if it may lead; else the leader stays if it may; else another
    replica that may (Kafka's `PartitionChangeBuilder.electPreferredLeader`)."""
    preferred = replica_set.assignment[0]
    if replica_set.leader == preferred:
        return NOT_NEEDED
    electable = _electable(broker, replica_set)
    leader_stays = preferred not in electable and replica_set.leader in electable
    if leader_stays or not electable:
        return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE
    broker.nodes.elect(partition, force=electable[0])
    return ELECTED


def _elect_unclean(
    broker: Broker, partition: Partition, replica_set: ReplicaSet
) -> ElectionOutcome:
    """Only for a partition without a leader: an ISR member if one is live, else any live
    replica (Kafka's `electAnyLeader` with an unclean election)."""
    if not replica_set.offline:
        return NOT_NEEDED
    reachable = broker.nodes.reachable()
    live = [node for node in replica_set.assignment if node in reachable]
    candidates = _electable(broker, replica_set) or live
    if not candidates:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE
    broker.nodes.elect(partition, force=candidates[0])
    return ELECTED


# ---- reassignments -----------------------------------------------------------------------


def reassign(
    broker: Broker, partition: Partition, target: list[int], *, allow_rf_change: bool = True
) -> None:
    """Start moving `partition` to the replicas `target` (completed at once when the ISR
    allows it already, as when only the order changes); TopicError as Kafka's controller
    refuses it."""
    check_manual_replicas(target, broker.nodes.brokers, None)
    current = current_replication_factor(partition)
    if not allow_rf_change and current != len(target):
        raise TopicError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {current} to {len(target)}",
        )
    replica_set = partition.replication
    if replica_set is None:
        _move_single_replica(broker, partition, target)
        return
    removing = sorted(set(replica_set.assignment) - set(target))
    adding = sorted(set(target) - set(replica_set.assignment))
    for node in adding:
        broker.cluster.add_replica(partition, node)
    replica_set.assignment = [*target, *removing]
    in_progress = bool(adding or removing)
    replica_set.reassignment = Reassignment(list(target), adding, removing) if in_progress else None
    if not complete_reassignment(broker, partition):
        broker.cluster.write_replication_state()


def current_replication_factor(partition: Partition) -> int:
    """The replica count a reassignment starts from: an ongoing reassignment's target's."""
    replica_set = partition.replication
    if replica_set is None:
        return 1
    if replica_set.reassignment is not None:
        return len(replica_set.reassignment.target)
    return len(replica_set.assignment)


def _move_single_replica(broker: Broker, partition: Partition, target: list[int]) -> None:
    """A one-replica partition's log is shared by the nodes: moving it moves its leader."""
    name = f"{partition.topic}-{partition.index}"
    if len(target) != 1:
        raise assignment_error(
            f"The partition {name} has a single replica (its topic was created with "
            "replication factor 1): it can only be reassigned to one node."
        )
    if target[0] not in broker.nodes.live:
        raise assignment_error(
            f"The partition {name} has a single replica: it can only be reassigned to a "
            f"live node, and node {target[0]} is stopped."
        )
    broker.nodes.move_leader(partition, target[0])


def complete_reassignment(broker: Broker, partition: Partition) -> bool:
    """Finish the partition's reassignment if every target replica is in the ISR (Kafka's
    `PartitionReassignmentReplicas.maybeCompleteReassignment`); True when finished."""
    replica_set = partition.replication
    if replica_set is None or replica_set.reassignment is None:
        return False
    removing = replica_set.reassignment.removing
    isr = [node for node in replica_set.isr if node not in removing]
    replicas = [node for node in replica_set.assignment if node not in removing]
    if not isr or not replicas or not set(replicas) <= set(isr):
        return False
    replica_set.shrink_isr(removing)
    replica_set.assignment = replicas
    replica_set.reassignment = None
    _settle(broker, partition, removing)
    return True


def cancel_reassignment(broker: Broker, partition: Partition) -> None:
    """Revert to the replicas the partition had (Kafka's `PartitionReassignmentRevert`): the
    added ones go; NO_REASSIGNMENT_IN_PROGRESS when there is nothing to cancel."""
    replica_set = partition.replication
    if replica_set is None or replica_set.reassignment is None:
        raise TopicError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT_IN_PROGRESS_MESSAGE)
    adding = replica_set.reassignment.adding
    original = [node for node in replica_set.assignment if node not in adding]
    if any(node not in adding for node in replica_set.isr):
        replica_set.shrink_isr(adding)
    elif _unclean_election_enabled(broker, partition):
        replica_set.isr = [original[0]]
    else:
        raise assignment_error(
            f"Unable to revert partition assignment for {partition.topic}:{partition.index} "
            "because it would require an unclean leader election."
        )
    replica_set.assignment = original
    replica_set.reassignment = None
    _settle(broker, partition, adding)


def _unclean_election_enabled(broker: Broker, partition: Partition) -> bool:
    topic = broker.cluster.topics[partition.topic]
    return broker.cluster.topic_value(topic, "unclean.leader.election.enable") == "true"


def _settle(broker: Broker, partition: Partition, dropped: list[int]) -> None:
    """After the replicas changed: a leader that may no longer lead is replaced (else its
    leader epoch goes up when replicas were dropped, fencing them, as Kafka's controller
    bumps it), then the dropped replicas' logs are deleted."""
    replica_set = partition.replication
    assert replica_set is not None
    leader = replica_set.leader
    if leader not in _electable(broker, replica_set):
        broker.nodes.elect(partition)
    elif dropped:
        partition.leader_epoch += 1
        replica_set.install_leader(leader, partition.leader_epoch)
    for node in dropped:
        broker.cluster.drop_replica(partition, node)
    broker.cluster.write_replication_state()


def ongoing(
    partitions: Iterable[Partition],
) -> Iterator[tuple[Partition, ReplicaSet, Reassignment]]:
    """The partitions among `partitions` being reassigned, with their replicas and
    reassignment."""
    for partition in partitions:
        replica_set = partition.replication
        if replica_set is not None and replica_set.reassignment is not None:
            yield partition, replica_set, replica_set.reassignment
