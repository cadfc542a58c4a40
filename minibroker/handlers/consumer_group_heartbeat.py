"""ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848).

Behaviour, as Kafka 4.3's group coordinator (`minibroker/groups/consumer/`): a member joins
a consumer group with epoch 0 and its subscription (topic names or an RE2 regex), then
heartbeats with its member epoch every `HeartbeatIntervalMs`; the answer carries its member
epoch and, when it changed (or on a full request), its assignment: the partitions it may
consume now. Partitions move between members by incremental reconciliation: the owner
revokes (reports them no longer owned) before another member gets them. Epoch -1 leaves,
-2 is a static member leaving for now (its assignment kept until its session times out).
In a cluster the answer waits until the ISR of the group's `__consumer_offsets` partition has
everything written to it (the heartbeat's records and those before), as Kafka's coordinator
runtime answers a write operation; one that wrote nothing is not refused under min ISR.

UNSUPPORTED_VERSION (no message) while the `group.version` feature is finalized below 1, as
Kafka answers when the consumer rebalance protocol is not enabled.

Errors, each with Kafka's message: INVALID_REQUEST (empty group/member/instance/rack id,
a first request without rebalance timeout, subscription, or empty owned partitions, an
epoch below -2), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_ID_NOT_FOUND (no
such group when the epoch is not 0, or a classic group with members), UNKNOWN_MEMBER_ID,
FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED.

Authorization, as Kafka 4.3's `KafkaApis` and group coordinator, after the feature check: READ
on the group (GROUP_AUTHORIZATION_FAILED), then DESCRIBE on every subscribed topic name
(TOPIC_AUTHORIZATION_FAILED if one is missing; both answers carry member epoch 0 and no
message). A subscription regex resolves only to the topics the principal of the heartbeat that
resolves it may DESCRIBE (Kafka's `filterTopicDescribeAuthorizedTopics`).

Version notes: v0 lets the coordinator generate the member id when the request's is empty;
v1 (KIP-1082) requires the client to generate it, and adds `SubscribedTopicRegex`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.groups.consumer.manager import ConsumerGroupError, HeartbeatRequest
from minibroker.groups.consumer.model import Assignment
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.protocol.group_answers import heartbeat_assignment, heartbeat_error
from minibroker.server.context import RequestContext


def _owned(request: Any) -> Assignment | None:
    if request.topic_partitions is None:
        return None
    owned: Assignment = {}
    for topic in request.topic_partitions:
        owned.setdefault(topic.topic_id, set()).update(topic.partitions)
    return owned


def _heartbeat_request(ctx: RequestContext, request: Any) -> HeartbeatRequest:
    return HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=_owned(request),
        client_id=ctx.header.client_id or "",
        client_host=ctx.client_host,
        api_version=ctx.api_version,
        describable=_describable(ctx),
    )


def _describable(ctx: RequestContext) -> Callable[[Iterable[str]], set[str]] | None:
    if ctx.broker.authorizer is None:
        return None
    return lambda names: ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _refused(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = set(request.subscribed_topic_names or ())
    if ctx.authorized_names(AclOperation.DESCRIBE, ResourceType.TOPIC, names) != names:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return None


@handles(ApiKey.ConsumerGroupHeartbeat, 0, 1)
async def handle_consumer_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    if not ctx.broker.features.consumer_groups_enabled:
        return heartbeat_error(
            ApiKey.ConsumerGroupHeartbeat, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION, None
        )
    refused = _refused(ctx, request)
    if refused is not None:
        return new_response(
            ApiKey.ConsumerGroupHeartbeat, ctx.api_version, throttle_time_ms=0, error_code=refused
        )
    writes = ctx.internal_writes()
    try:
        result = ctx.broker.groups.consumer.heartbeat(_heartbeat_request(ctx, request))
    except ConsumerGroupError as exc:
        return heartbeat_error(
            ApiKey.ConsumerGroupHeartbeat, ctx.api_version, exc.error, exc.message
        )
    waited = await ctx.replicated_write(request.group_id, since=writes)
    if waited != ErrorCode.NO_ERROR:
        return heartbeat_error(ApiKey.ConsumerGroupHeartbeat, ctx.api_version, waited, None)
    return new_response(
        ApiKey.ConsumerGroupHeartbeat,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        error_message=None,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=heartbeat_assignment(ApiKey.ConsumerGroupHeartbeat, result.assignment),
    )
