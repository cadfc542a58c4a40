"""TxnOffsetCommit (key 28), versions 0-5.

Behaviour (Kafka's `GroupCoordinator.handleTxnCommitOffsets`): offsets committed inside a
transaction. They are written to the group's `__consumer_offsets` partition in a
transactional batch of the producer and count as the group's committed offsets only once
EndTxn writes the COMMIT marker there (ABORT drops them). Checks, in order:
- authorization, as Kafka's `handleTxnOffsetCommitRequest`: WRITE on the transactional id
  (else every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else
  GROUP_AUTHORIZATION_FAILED), then READ on each topic: the partitions of a topic without it
  answer TOPIC_AUTHORIZATION_FAILED (first) and are not committed; with nothing left to
  commit the transaction is not touched.
- INVALID_GROUP_ID for an empty group id; partitions of unknown topics get
  UNKNOWN_TOPIC_OR_PARTITION (the others are committed).
- the transaction (Kafka's verification): INVALID_PRODUCER_ID_MAPPING for an unknown
  transactional or producer id, INVALID_PRODUCER_EPOCH for an older epoch (this API has no
  PRODUCER_FENCED), INVALID_TXN_STATE when the transaction does not hold the group's offsets
  partition (no AddOffsetsToTxn first).
- v3+ group metadata (KIP-447): with a member id, generation or instance id, the member must
  be in the group (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) at that generation
  (ILLEGAL_GENERATION), so a zombie of a rebalanced consumer cannot commit.
  The group is created if it does not exist. For a KIP-848 consumer group the generation
  is the member epoch (Kafka's `ConsumerGroup.validateOffsetCommit`): epoch -1 passes only
  while the group has no members; otherwise UNKNOWN_MEMBER_ID, or STALE_MEMBER_EPOCH for
  another epoch than the member's (exactly-once with `group.protocol=consumer`).

Version notes: v2+ carry the committed leader epoch; v3 is flexible and adds generation id,
member id and group instance id; v4 adds only TRANSACTION_ABORTABLE (never answered here).
v5 is the transactions V2 form (KIP-890 part 2): while `transaction.version` 2 is finalized it
also does what AddOffsetsToTxn did, adding the group's `__consumer_offsets` partition to the
producer's transaction before the checks above (CONCURRENT_TRANSACTIONS while the previous
transaction's markers are written is answered COORDINATOR_NOT_AVAILABLE, retriable).
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.coordinator import OffsetCommit
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.txn.coordinator import OFFSETS_TOPIC, TRANSACTION_VERSION_2

FIRST_IMPLICIT_ADD_VERSION = 5

_Topic = struct_type(ApiKey.TxnOffsetCommit, "response", "TxnOffsetCommitResponseTopic")
_Partition = struct_type(
    ApiKey.TxnOffsetCommit,
    "response",
    "TxnOffsetCommitResponseTopic",
    "TxnOffsetCommitResponsePartition",
)


def _commits(request: Any) -> list[OffsetCommit]:
    return [
        OffsetCommit(
            topic=topic.name,
            partition=partition.partition_index,
            offset=partition.committed_offset,
            leader_epoch=partition.committed_leader_epoch,
            metadata=partition.committed_metadata,
        )
        for topic in request.topics
        for partition in topic.partitions
    ]


def _errors(ctx: RequestContext, request: Any, commits: list[OffsetCommit]) -> list[ErrorCode]:
    if not request.group_id:
        return [ErrorCode.INVALID_GROUP_ID] * len(commits)
    groups = ctx.broker.groups
    offsets_partition = groups.offsets_partition_for(request.group_id)
    error = _implicit_add_error(ctx, request, offsets_partition)
    if error == ErrorCode.NO_ERROR:
        error = ctx.broker.transactions.txn_offset_commit_error(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            offsets_partition,
        )
    if error == ErrorCode.PRODUCER_FENCED:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    if error != ErrorCode.NO_ERROR:
        return [error] * len(commits)
    outcome = groups.commit_txn_offsets(
        request.group_id,
        (request.producer_id, request.producer_epoch),
        request.member_id,
        request.group_instance_id,
        request.generation_id,
        commits,
    )
    return [outcome] * len(commits) if isinstance(outcome, ErrorCode) else outcome


def _implicit_add_error(ctx: RequestContext, request: Any, offsets_partition: int) -> ErrorCode:
    """v5 under TV2: the group's offsets partition joins the transaction (no AddOffsetsToTxn)."""
    coordinator = ctx.broker.transactions
    if (
        ctx.api_version < FIRST_IMPLICIT_ADD_VERSION
        or coordinator.transaction_version < TRANSACTION_VERSION_2
    ):
        return ErrorCode.NO_ERROR
    error = coordinator.add_partitions(
        request.transactional_id,
        request.producer_id,
        request.producer_epoch,
        [(OFFSETS_TOPIC, offsets_partition)],
        client_transaction_version=TRANSACTION_VERSION_2,
    )
    if error == ErrorCode.CONCURRENT_TRANSACTIONS:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return error


def _request_error(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if not ctx.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None


def _outcomes(ctx: RequestContext, request: Any) -> list[tuple[OffsetCommit, ErrorCode]]:
    """Each partition's answer: refused ones first, then the committed ones."""
    commits = _commits(request)
    error = _request_error(ctx, request)
    if error is not None:
        return [(commit, error) for commit in commits]
    readable = ctx.authorized_names(
        AclOperation.READ, ResourceType.TOPIC, {commit.topic for commit in commits}
    )
    refused = [
        (c, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for c in commits if c.topic not in readable
    ]
    allowed = [commit for commit in commits if commit.topic in readable]
    if not allowed:
        return refused
    return refused + list(zip(allowed, _errors(ctx, request, allowed), strict=True))


@handles(ApiKey.TxnOffsetCommit, 0, 5)
async def handle_txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    topics: dict[str, list[Any]] = {}
    outcomes = _outcomes(ctx, request)
    if any(error == ErrorCode.NO_ERROR for _, error in outcomes):
        waited = await ctx.replicated_write(request.group_id)
        outcomes = [(c, waited if e == ErrorCode.NO_ERROR else e) for c, e in outcomes]
    for commit, error in outcomes:
        topics.setdefault(commit.topic, []).append(
            _Partition(partition_index=commit.partition, error_code=error)
        )
    return new_response(
        ApiKey.TxnOffsetCommit,
        ctx.api_version,
        throttle_time_ms=0,
        topics=[_Topic(name=name, partitions=partitions) for name, partitions in topics.items()],
    )
