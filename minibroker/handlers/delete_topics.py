"""DeleteTopics (key 20), versions 0-6 (v0 only under an emulated Kafka 2.8-3.9).

Behaviour: deletes topics by name, or (v6) by topic id, as Kafka's ControllerApis does:
a name or id given twice is INVALID_REQUEST ("Duplicate topic name." / "Duplicate topic
id."), an entry with both a name and an id or with neither INVALID_REQUEST, an unknown
name UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID. With
`delete.topic.enable=false` every topic gets TOPIC_DELETION_DISABLED (INVALID_REQUEST
before v3). Deletion is immediate (logs, directories and producer state go at once; the
directories of one request renamed away, synced together and removed, the checkpoints
written once: log/syncs.py), so the timeout is not used. Groups' committed offsets of a
deleted topic go too, tombstoned in `__consumer_offsets`, and Empty groups left without
offsets are dropped (Kafka's GroupMetadataManager cleanup), so OffsetFetch shows no offset
for it.

Authorization, as Kafka's ControllerApis (after the checks above; DELETE on the cluster
allows every topic): a topic named needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED whether it
exists or not, then (existing) DELETE, else TOPIC_AUTHORIZATION_FAILED (zero topic id); a
known topic id needs DELETE, else TOPIC_AUTHORIZATION_FAILED with its name only when the
principal may DESCRIBE it (an unknown id stays UNKNOWN_TOPIC_ID). Message: "Topic
authorization failed.".

Version notes: v0 has no throttle time (v1+); v0-5 carry names only (`topic_names`); v6
carries `topics` entries with a name or an id, and the answer gives both; error messages are
v5+.

With a `controller_mutation_rate` quota (minibroker/auth/quotas.py), a deleted topic's partitions
count against the client's token bucket: from v5 a topic is refused THROTTLING_QUOTA_EXCEEDED
once it is exhausted (strict, as Kafka), before v5 only the throttle time is answered.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.auth.quota_stats import MutationQuota
from minibroker.auth.throttle import (
    THROTTLING_QUOTA_EXCEEDED_MESSAGE as THROTTLING_QUOTA_EXCEEDED,
)
from minibroker.auth.throttle import (
    mutation_quota,
    mutation_throttle,
)
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.DeleteTopics, "response", "DeletableTopicResult")
_NULL_TOPIC_ID = uuid.UUID(int=0)
FIRST_VERSION_WITH_DELETION_DISABLED_ERROR = 3
# Kafka's default messages for these errors (`Errors.java`).
UNKNOWN_TOPIC = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID = "This server does not host this topic ID."
_DENIED = "Topic authorization failed."
STRICT_QUOTA_VERSION = 5  # THROTTLING_QUOTA_EXCEEDED per topic from v5; older: throttle only


def _result(name: str | None, topic_id: uuid.UUID, error: ErrorCode, message: str | None) -> Any:
    return _Result(name=name, topic_id=topic_id, error_code=error, error_message=message)


def _requested(ctx: RequestContext, request: Any) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version < 6:
        return [(name, _NULL_TOPIC_ID) for name in request.topic_names]
    return [(topic.name, topic.topic_id or _NULL_TOPIC_ID) for topic in request.topics]


@dataclass(frozen=True)
class _Access:
    """What the principal may do to topics: everything with DELETE on the cluster."""

    ctx: RequestContext
    cluster_delete: bool
    quota: MutationQuota | None = None

    def may(self, operation: AclOperation, name: str) -> bool:
        return self.cluster_delete or self.ctx.authorize(operation, ResourceType.TOPIC, name)


def _denied(name: str | None, topic_id: uuid.UUID) -> Any:
    return _result(name, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _DENIED)


def _delete_by_name(ctx: RequestContext, access: _Access, name: str) -> Any:
    if not access.may(AclOperation.DESCRIBE, name):  # whether it exists is not disclosed
        return _denied(name, _NULL_TOPIC_ID)
    if name not in ctx.broker.cluster.topics:
        return _result(name, _NULL_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC)
    if not access.may(AclOperation.DELETE, name):
        return _denied(name, _NULL_TOPIC_ID)
    return _delete(ctx, access, name)


def _delete(ctx: RequestContext, access: _Access, name: str) -> Any:
    quota = access.quota
    if quota is not None:
        topic_id = ctx.broker.cluster.topics[name].topic_id
        if not quota.record(len(ctx.broker.cluster.topics[name].partitions)):
            return _result(
                name, topic_id, ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLING_QUOTA_EXCEEDED
            )
    topic = ctx.broker.cluster.delete_topic(name)
    for partition in topic.partitions:
        ctx.broker.producers.forget(partition)
    ctx.broker.groups.delete_topic_offsets([name])
    return _result(name, topic.topic_id, ErrorCode.NO_ERROR, None)


def _delete_by_id(ctx: RequestContext, access: _Access, topic_id: uuid.UUID) -> Any:
    topic = ctx.broker.cluster.topics_by_id.get(topic_id)
    if topic is None:
        return _result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID)
    if not access.may(AclOperation.DELETE, topic.name):
        describable = access.may(AclOperation.DESCRIBE, topic.name)
        return _denied(topic.name if describable else None, topic_id)
    return _delete(ctx, access, topic.name)


def _disabled(ctx: RequestContext, requested: list[tuple[str | None, uuid.UUID]]) -> list[Any]:
    if ctx.api_version < FIRST_VERSION_WITH_DELETION_DISABLED_ERROR:
        error, message = ErrorCode.INVALID_REQUEST, "Topic deletion is disabled."
    else:
        error, message = ErrorCode.TOPIC_DELETION_DISABLED, None
    return [_result(name, topic_id, error, message) for name, topic_id in requested]


def _delete_all(
    ctx: RequestContext,
    requested: list[tuple[str | None, uuid.UUID]],
    quota: MutationQuota | None,
) -> list[Any]:
    names = Counter(name for name, topic_id in requested if topic_id == _NULL_TOPIC_ID)
    ids = Counter(topic_id for name, topic_id in requested if name is None)
    access = _Access(ctx, ctx.authorize_cluster(AclOperation.DELETE), quota)
    results = []
    for name, topic_id in requested:
        if name is None and topic_id == _NULL_TOPIC_ID:
            results.append(
                _result(
                    None,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "Neither topic name nor id were specified.",
                )
            )
        elif name is not None and topic_id != _NULL_TOPIC_ID:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
        elif name is not None and names[name] == 1:
            results.append(_delete_by_name(ctx, access, name))
        elif name is None and ids[topic_id] == 1:
            results.append(_delete_by_id(ctx, access, topic_id))
    for name, count in names.items():
        if count > 1 and name is not None:
            results.append(
                _result(name, _NULL_TOPIC_ID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            )
    for topic_id, count in ids.items():
        if count > 1 and topic_id != _NULL_TOPIC_ID:
            results.append(
                _result(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
            )
    return results


@handles(ApiKey.DeleteTopics, 0, 6)
async def handle_delete_topics(ctx: RequestContext, request: Any) -> Any:
    requested = _requested(ctx, request)
    quota = mutation_quota(ctx, STRICT_QUOTA_VERSION)
    if ctx.broker.config.get_bool("delete.topic.enable"):
        with ctx.broker.cluster.grouped_writes():
            results = _delete_all(ctx, requested, quota)
    else:
        results = _disabled(ctx, requested)
    throttle = mutation_throttle(ctx, quota)
    return new_response(
        ApiKey.DeleteTopics, ctx.api_version, throttle_time_ms=throttle, responses=results
    )
