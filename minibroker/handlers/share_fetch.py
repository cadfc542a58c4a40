"""ShareFetch (key 78), versions 1-2 (KIP-932).

Behaviour, as Kafka 4.3's share-partition leader: a share-group member acquires records from
the partitions of its share session (`groups/share/delivery.py`: released or expired records
first, then new batches), each locked to it for `share.record.lock.duration.ms` (answered as
AcquisitionLockTimeoutMs), and may acknowledge earlier ones in the same request
(AcknowledgeErrorCode per partition). The response carries the stored batches holding the
acquired records and their ranges with delivery counts (AcquiredRecords); the records fetched
stay within `MaxRecords` and the in-flight limit except to keep a batch whole (record-limit
mode splits it instead). With nothing to acquire the request
waits up to `MaxWaitMs`, woken by appends to its partitions.

Share sessions (`groups/share/sessions.py`): epoch 0 opens the member's session with the
partitions named (acknowledgements there are INVALID_REQUEST), later epochs add partitions
and drop `ForgottenTopicsData`, and answer only partitions with records, an error or an
acknowledgement result; -1 only acknowledges, then closes the session and releases what the
member still holds. Top-level errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
SHARE_SESSION_LIMIT_REACHED, INVALID_REQUEST (no group or member id), UNSUPPORTED_VERSION
while the `share.version` feature is below 1. Per partition: UNKNOWN_TOPIC_ID,
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (in a cluster), KAFKA_STORAGE_ERROR.

Authorization, as Kafka's `handleShareFetchRequest`, after the feature check: READ on the group
(else GROUP_AUTHORIZATION_FAILED at the top level, nothing else done); READ on each topic of the
request and of the session: a partition of a topic without it answers
TOPIC_AUTHORIZATION_FAILED (after UNKNOWN_TOPIC_ID, before the partition's existence) and
acquires nothing, and its acknowledgements are not applied (AcknowledgeErrorCode
TOPIC_AUTHORIZATION_FAILED).

Quotas, as Kafka's ShareFetch: `MaxBytes` is capped at what one `consumer_byte_rate` window
allows; an answer over that rate goes out with no partitions and its throttle time, and the
connection is muted for it (as Fetch); `request_percentage` counts the handler's time
(`auth/throttle.py`, as every request).

Version notes: v2 adds IsRenewAck (RENEW acknowledgements; such a request fetches nothing)
and ShareAcquireMode: record-limit mode acquires exactly `min(MaxRecords, room left under
share.partition.max.record.locks)` records, splitting batches, as Kafka's SharePartition.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.auth.throttle import consumer_max_bytes, consumer_throttle
from minibroker.cluster.state import Partition, wait_for_append
from minibroker.groups.share.delivery import (
    Delivered,
    FetchLimits,
    acknowledgements_of,
    now_ms,
)
from minibroker.groups.share.partition import AcknowledgementBatch
from minibroker.groups.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SharePartitionKey,
    ShareSession,
    ShareSessionError,
)
from minibroker.handlers.registry import handles
from minibroker.log.base import LogOfflineError
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.ShareFetch, "response", "ShareFetchableTopicResponse")
_Partition = struct_type(
    ApiKey.ShareFetch, "response", "ShareFetchableTopicResponse", "PartitionData"
)
_Leader = struct_type(
    ApiKey.ShareFetch,
    "response",
    "ShareFetchableTopicResponse",
    "PartitionData",
    "LeaderIdAndEpoch",
)
RENEW_FROM_VERSION = 2  # also ShareAcquireMode
RECORD_LIMIT = 1  # ShareAcquireMode: 0 batch-optimized, 1 record-limit
_Acquired = struct_type(
    ApiKey.ShareFetch, "response", "ShareFetchableTopicResponse", "PartitionData", "AcquiredRecords"
)


@dataclass(slots=True)
class PartitionAnswer:
    error: ErrorCode = ErrorCode.NO_ERROR
    delivered: Delivered = field(default_factory=lambda: Delivered(b"", []))
    acknowledged: tuple[ErrorCode, str | None] | None = None
    leader_epoch: int = -1


def _error(ctx: RequestContext, error: ErrorCode, message: str | None) -> Any:
    return new_response(
        ApiKey.ShareFetch,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        acquisition_lock_timeout_ms=0,
        responses=[],
        node_endpoints=[],
    )


def _requested(request: Any) -> list[SharePartitionKey]:
    return [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]


def _forgotten(request: Any) -> list[SharePartitionKey]:
    return [(t.topic_id, index) for t in request.forgotten_topics_data for index in t.partitions]


def _session(ctx: RequestContext, request: Any, has_acks: bool) -> ShareSession:
    sessions = ctx.broker.share_sessions
    if request.share_session_epoch != INITIAL_EPOCH:
        return sessions.existing(request.group_id, request.member_id, request.share_session_epoch)
    if has_acks:
        raise ShareSessionError(
            ErrorCode.INVALID_REQUEST, "Acknowledge data present on initial ShareFetch request."
        )
    session, replaced = sessions.open(request.group_id, request.member_id)
    if replaced is not None:
        ctx.broker.share_deliveries.release(replaced)
    return session


def _partition(
    ctx: RequestContext, key: SharePartitionKey, denied: Set[uuid.UUID]
) -> Partition | ErrorCode:
    topic = ctx.broker.cluster.topics_by_id.get(key[0])
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if key[0] in denied:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= key[1] < len(topic.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    partition = topic.partitions[key[1]]
    return ctx.leader_error(partition) or partition


def _acquire_all(
    ctx: RequestContext,
    request: Any,
    session: ShareSession,
    answers: dict[SharePartitionKey, PartitionAnswer],
    denied: Set[uuid.UUID],
) -> bool:
    """One pass over the session's partitions; whether anything was acquired."""
    records_left = max(request.max_records, 1)
    bytes_left = _max_bytes(ctx, request)
    acquired = False
    for key in session.partitions:
        answer = answers.setdefault(key, PartitionAnswer())
        found = _partition(ctx, key, denied)
        if isinstance(found, ErrorCode):
            answer.error = found
            continue
        answer.leader_epoch = found.leader_epoch
        if records_left <= 0 or bytes_left <= 0:
            continue
        try:
            delivered = ctx.broker.share_deliveries.acquire(
                session.group_id,
                session.member_id,
                found,
                key[0],
                FetchLimits(records_left, bytes_left, _record_limit(ctx, request)),
                now_ms(),
            )
        except LogOfflineError:
            answer.error = ErrorCode.KAFKA_STORAGE_ERROR
            continue
        if delivered.acquired:
            answer.delivered = delivered
            acquired = True
            records_left -= sum(r.last_offset - r.first_offset + 1 for r in delivered.acquired)
            bytes_left -= len(delivered.records)
    return acquired


async def _long_poll(
    ctx: RequestContext,
    request: Any,
    session: ShareSession,
    answers: dict[SharePartitionKey, PartitionAnswer],
    denied: Set[uuid.UUID],
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    while not _acquire_all(ctx, request, session, answers, denied):
        remaining = deadline - loop.time()
        if remaining <= 0 or any(a.error != ErrorCode.NO_ERROR for a in answers.values()):
            return
        expiry = ctx.broker.share_deliveries.next_lock_expiry_ms(session.group_id)
        if expiry is not None:
            remaining = min(remaining, max(expiry - now_ms(), 0) / 1000 + 0.001)
        partitions = [
            p
            for key in session.partitions
            if isinstance(p := _partition(ctx, key, denied), Partition)
        ]
        await wait_for_append(partitions, remaining)


def _max_bytes(ctx: RequestContext, request: Any) -> int:
    if not ctx.broker.client_quotas.enabled:
        return int(request.max_bytes)
    return consumer_max_bytes(ctx, int(request.max_bytes))


def _throttled(ctx: RequestContext, response: Any) -> Any:
    """The response, or, over the consumer's byte rate, Kafka's throttled ShareFetch answer:
    no partitions, the throttle time (what was acquired stays locked to the member until its
    lock expires, as in Kafka)."""
    if not ctx.broker.client_quotas.enabled:
        return response
    throttle = consumer_throttle(ctx, len(response.encode(version=ctx.api_version)))
    if throttle > 0:
        response.responses = []
        response.throttle_time_ms = throttle
    return response


def _partition_data(ctx: RequestContext, index: int, answer: PartitionAnswer) -> Any:
    ack_error, ack_message = answer.acknowledged or (ErrorCode.NO_ERROR, None)
    return _Partition(
        partition_index=index,
        error_code=answer.error,
        error_message=None,
        acknowledge_error_code=ack_error,
        acknowledge_error_message=ack_message,
        current_leader=_Leader(
            leader_id=ctx.broker.node_id if answer.leader_epoch >= 0 else -1,
            leader_epoch=answer.leader_epoch,
        ),
        records=answer.delivered.records,
        acquired_records=[
            _Acquired(
                first_offset=r.first_offset,
                last_offset=r.last_offset,
                delivery_count=r.delivery_count,
            )
            for r in answer.delivered.acquired
        ],
    )


def _shown(answer: PartitionAnswer, full: bool) -> bool:
    return (
        full
        or answer.error != ErrorCode.NO_ERROR
        or answer.acknowledged is not None
        or bool(answer.delivered.acquired)
    )


def _response(
    ctx: RequestContext,
    group_id: str,
    answers: dict[SharePartitionKey, PartitionAnswer],
    full: bool,
) -> Any:
    by_topic: dict[Any, list[Any]] = {}
    for (topic_id, index), answer in answers.items():
        if _shown(answer, full):
            by_topic.setdefault(topic_id, []).append(_partition_data(ctx, index, answer))
    settings = ctx.broker.group_configs.effective(group_id, ctx.broker.config)
    return new_response(
        ApiKey.ShareFetch,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        acquisition_lock_timeout_ms=settings.share_record_lock_duration_ms,
        responses=[
            _Topic(topic_id=topic_id, partitions=parts) for topic_id, parts in by_topic.items()
        ],
        node_endpoints=[],
    )


def _record_limit(ctx: RequestContext, request: Any) -> bool:
    return ctx.api_version >= RENEW_FROM_VERSION and request.share_acquire_mode == RECORD_LIMIT


def _renews(ctx: RequestContext, request: Any) -> bool:
    return ctx.api_version >= RENEW_FROM_VERSION and bool(request.is_renew_ack)


def _acknowledged(
    ctx: RequestContext,
    request: Any,
    session: ShareSession,
    acknowledgements: dict[SharePartitionKey, list[AcknowledgementBatch]],
    denied: Set[uuid.UUID],
) -> dict[SharePartitionKey, PartitionAnswer]:
    """The acknowledgements applied (those of unreadable topics refused), as answers."""
    allowed = {key: acks for key, acks in acknowledgements.items() if key[0] not in denied}
    acked = ctx.broker.share_deliveries.acknowledge_all(
        session.group_id, session.member_id, allowed, _renews(ctx, request), now_ms()
    )
    refused = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    acked.update({key: refused for key in acknowledgements if key[0] in denied})
    return {key: PartitionAnswer(acknowledged=result) for key, result in acked.items()}


@handles(ApiKey.ShareFetch, 1, 2)
async def handle_share_fetch(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.features.share_groups_enabled:
        return _error(ctx, ErrorCode.UNSUPPORTED_VERSION, None)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _error(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    if not request.group_id or not request.member_id:
        return _error(ctx, ErrorCode.INVALID_REQUEST, "Group id and member id are required.")
    acknowledgements = acknowledgements_of(request.topics)
    try:
        session = _session(ctx, request, bool(acknowledgements))
    except ShareSessionError as exc:
        return _error(ctx, exc.error, exc.message)
    topic_ids = [key[0] for key in session.partitions] + [t.topic_id for t in request.topics]
    denied = ctx.denied_topic_ids(AclOperation.READ, topic_ids)
    answers = _acknowledged(ctx, request, session, acknowledgements, denied)
    if request.share_session_epoch == FINAL_EPOCH:
        ctx.broker.share_sessions.close(session)
        ctx.broker.share_deliveries.release(session)
        return _throttled(ctx, _response(ctx, session.group_id, answers, full=False))
    session.update(_requested(request), _forgotten(request))
    if request.share_session_epoch != INITIAL_EPOCH:
        session.advance()
    if not _renews(ctx, request):
        await _long_poll(ctx, request, session, answers, denied)
    full = request.share_session_epoch == INITIAL_EPOCH
    return _throttled(ctx, _response(ctx, session.group_id, answers, full))
