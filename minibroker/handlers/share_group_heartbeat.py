"""ShareGroupHeartbeat (key 76), version 1 (KIP-932).

Behaviour, as Kafka 4.3's group coordinator (`minibroker/groups/share/`): a member joins a
share group with epoch 0, its client-generated member id and its subscribed topic names,
then heartbeats with its member epoch every `HeartbeatIntervalMs`; epoch -1 leaves. The
answer carries the member epoch and, on a join, a request with topic names (a full request)
or when it changed, the member's assignment: the partitions it may fetch from, computed by the
simple assignor. Partitions are shared between members, and a member takes its new
assignment at once (no revocation). `HeartbeatIntervalMs` and the session timeout are the
group's `share.heartbeat.interval.ms` and `share.session.timeout.ms` (GROUP configs over the
broker's `group.share.*`). What changed is written to `__consumer_offsets` as Kafka's
share-group records; in a cluster the answer waits until the ISR of the group's partition has
everything written to it, as Kafka's coordinator runtime answers a write operation (one that
wrote nothing is not refused under min ISR).

UNSUPPORTED_VERSION (no message) while the `share.version` feature is finalized below 1, as
Kafka answers when share groups are not enabled.

Errors, each with Kafka's message: INVALID_REQUEST (empty member/group/rack id, a first
request without topic names, an epoch below -1), GROUP_ID_NOT_FOUND (no such share group when
the epoch is not 0, or a group id used by a classic or consumer group), UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (`group.share.max.size`).

Authorization, as Kafka 4.3's `KafkaApis`, after the feature check: READ on the group
(GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed topic name
(TOPIC_AUTHORIZATION_FAILED if one is missing); both answers carry member epoch 0 and no
message.

Version notes: v0 (Kafka 4.0's early access) is not served, as Kafka 4.1+; v1 is the first
stable version.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.share.manager import ShareGroupError, ShareHeartbeatRequest
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_answers import heartbeat_assignment, heartbeat_error
from minibroker.server.context import RequestContext


def _heartbeat_request(ctx: RequestContext, request: Any) -> ShareHeartbeatRequest:
    group_config = ctx.broker.group_configs.effective(request.group_id, ctx.broker.config)
    return ShareHeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        rack_id=request.rack_id,
        subscribed_topic_names=request.subscribed_topic_names,
        client_id=ctx.header.client_id or "",
        client_host=ctx.client_host,
        session_timeout_ms=group_config.share_session_timeout_ms,
        heartbeat_interval_ms=group_config.share_heartbeat_interval_ms,
    )


def _refused(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = set(request.subscribed_topic_names or ())
    if ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


@handles(ApiKey.ShareGroupHeartbeat, 1, 1)
async def handle_share_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.features.share_groups_enabled:
        return heartbeat_error(
            ApiKey.ShareGroupHeartbeat, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION, None
        )
    refused = _refused(ctx, request)
    if refused is not None:
        return new_response(
            ApiKey.ShareGroupHeartbeat, ctx.api_version, throttle_time_ms=0, error_code=refused
        )
    writes = ctx.internal_writes()
    try:
        result = ctx.broker.groups.share.heartbeat(_heartbeat_request(ctx, request))
    except ShareGroupError as exc:
        return heartbeat_error(ApiKey.ShareGroupHeartbeat, ctx.api_version, exc.error, exc.message)
    waited = await ctx.replicated_write(request.group_id, since=writes)
    if waited != ErrorCode.NO_ERROR:
        return heartbeat_error(ApiKey.ShareGroupHeartbeat, ctx.api_version, waited, None)
    return new_response(
        ApiKey.ShareGroupHeartbeat,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=heartbeat_assignment(ApiKey.ShareGroupHeartbeat, result.assignment),
    )
