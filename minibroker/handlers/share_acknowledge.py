"""ShareAcknowledge (key 79), versions 1-2 (KIP-932).

Behaviour, as Kafka 4.3's share-partition leader: a share-group member settles records it
acquired through ShareFetch, per partition and offset range: ACCEPT (done), RELEASE (available
again, or archived at the delivery count limit), REJECT (archived), GAP (archived: no record
there), RENEW (v2 with IsRenewAck: the lock starts again). Each partition's acknowledgements
apply entirely or not at all (`groups/share/partition.py`): malformed batches (first offset
after last, overlapping or unordered, a types list of the wrong size, an unknown type) are
INVALID_REQUEST, records the member does not hold INVALID_RECORD_STATE.

The request belongs to the member's share session: it carries the session's next epoch
(advancing it) or -1 (acknowledge, then close the session and release what the member still
holds). Epoch 0 is INVALID_SHARE_SESSION_EPOCH (acknowledgements need an open session), no
session SHARE_SESSION_NOT_FOUND, another epoch INVALID_SHARE_SESSION_EPOCH; UNSUPPORTED_VERSION
while the `share.version` feature is below 1.

Authorization, as Kafka's `handleShareAcknowledgeRequest`, after the feature check: READ on the
group (else GROUP_AUTHORIZATION_FAILED at the top level); READ on each topic: the partitions of
a topic without it answer TOPIC_AUTHORIZATION_FAILED and their acknowledgements are not applied.

Quotas: the handler's time counts against `request_percentage` (Kafka's sendMaybeThrottle):
over it the answer carries the throttle time and the connection is muted for it
(`auth/throttle.py`).

Version notes: v2 adds IsRenewAck, and AcquisitionLockTimeoutMs in the response.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.share.delivery import acknowledgements_of, now_ms
from minibroker.groups.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SharePartitionKey,
    ShareSessionError,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Topic = struct_type(ApiKey.ShareAcknowledge, "response", "ShareAcknowledgeTopicResponse")
_Partition = struct_type(
    ApiKey.ShareAcknowledge, "response", "ShareAcknowledgeTopicResponse", "PartitionData"
)
_Leader = struct_type(
    ApiKey.ShareAcknowledge,
    "response",
    "ShareAcknowledgeTopicResponse",
    "PartitionData",
    "LeaderIdAndEpoch",
)


def _response(
    ctx: RequestContext,
    error: ErrorCode,
    message: str | None,
    results: dict[SharePartitionKey, tuple[ErrorCode, str | None]],
    lock_timeout_ms: int,
) -> Any:
    by_topic: dict[Any, list[Any]] = {}
    for (topic_id, index), (code, text) in results.items():
        topic = ctx.broker.cluster.topics_by_id.get(topic_id)
        epoch = (
            topic.partitions[index].leader_epoch if topic and index < len(topic.partitions) else -1
        )
        by_topic.setdefault(topic_id, []).append(
            _Partition(
                partition_index=index,
                error_code=code,
                error_message=text,
                current_leader=_Leader(
                    leader_id=ctx.broker.node_id if epoch >= 0 else -1, leader_epoch=epoch
                ),
            )
        )
    return new_response(
        ApiKey.ShareAcknowledge,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        acquisition_lock_timeout_ms=lock_timeout_ms,
        responses=[
            _Topic(topic_id=topic_id, partitions=parts) for topic_id, parts in by_topic.items()
        ],
        node_endpoints=[],
    )


@handles(ApiKey.ShareAcknowledge, 1, 2)
async def handle_share_acknowledge(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.features.share_groups_enabled:
        return _response(ctx, ErrorCode.UNSUPPORTED_VERSION, None, {}, 0)
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _response(ctx, ErrorCode.GROUP_AUTHORIZATION_FAILED, None, {}, 0)
    if not request.group_id or not request.member_id:
        return _response(
            ctx, ErrorCode.INVALID_REQUEST, "Group id and member id are required.", {}, 0
        )
    epoch = request.share_session_epoch
    try:
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                "Acknowledge requests cannot open a share session (epoch 0).",
            )
        session = ctx.broker.share_sessions.existing(request.group_id, request.member_id, epoch)
    except ShareSessionError as exc:
        return _response(ctx, exc.error, exc.message, {}, 0)
    renew = ctx.api_version >= 2 and request.is_renew_ack
    deliveries = ctx.broker.share_deliveries
    acknowledgements = acknowledgements_of(request.topics)
    denied = ctx.denied_topic_ids(AclOperation.READ, [topic.topic_id for topic in request.topics])
    results = deliveries.acknowledge_all(
        session.group_id,
        session.member_id,
        {key: acks for key, acks in acknowledgements.items() if key[0] not in denied},
        renew,
        now_ms(),
    )
    refused = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
    results.update({key: refused for key in acknowledgements if key[0] in denied})
    if epoch == FINAL_EPOCH:
        ctx.broker.share_sessions.close(session)
        deliveries.release(session)
    else:
        session.advance()
    settings = ctx.broker.group_configs.effective(session.group_id, ctx.broker.config)
    return _response(ctx, ErrorCode.NO_ERROR, None, results, settings.share_record_lock_duration_ms)
