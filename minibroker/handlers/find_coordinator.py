"""FindCoordinator (key 10), versions 0-6.

Behaviour: a single broker coordinates every group and every transactional id; in an
in-process cluster, as in Kafka, the leader of the key's internal partition (`hash(key) %
partitions` of `__consumer_offsets`, `__transaction_state` or `__share_group_state`,
`Nodes.coordinator_for`); COORDINATOR_NOT_AVAILABLE while that partition is offline. A group lookup
creates `__consumer_offsets` and a transaction lookup `__transaction_state` if it does not
exist yet, as Kafka does; while it cannot be created (fewer live nodes than its replication
factor) the key gets COORDINATOR_NOT_AVAILABLE, which clients retry. A SHARE key (2, v6+) is
a share partition's share-coordinator key, `groupId:topicId:partition` (the topic id as Kafka
writes it), and its lookup creates `__share_group_state`; a key not of that form
(`SharePartitionKey.validate`) is INVALID_REQUEST. Other key types, and SHARE below v6, get
INVALID_REQUEST.

Authorization, per key, as Kafka's `KafkaApis.getCoordinator`: DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED) or on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
the key gets node -1, host "" and port -1, with the error's default message below v4 and
none in v4+'s per-key entries, as Kafka answers. A SHARE key (2, v6) needs CLUSTER_ACTION on
the cluster: without it the whole request fails with CLUSTER_AUTHORIZATION_FAILED ("Cluster
authorization failed." for every key).

Version notes: v0 has no key type (always a group); v4+ (KIP-699) batches the keys in
`coordinator_keys` and answers one `coordinators` entry per key instead of the top-level
node fields.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.cluster.state import TopicError
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Coordinator = struct_type(ApiKey.FindCoordinator, "response", "Coordinator")
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2
BATCHED_FROM_VERSION = 4
SHARE_FROM_VERSION = 6
# Kafka's default messages (`Errors.message()`) of the errors a key is answered with.
_DEFAULT_MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
}
_KEY_RESOURCES = {
    GROUP_KEY_TYPE: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    TRANSACTION_KEY_TYPE: (
        ResourceType.TRANSACTIONAL_ID,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ),
}


def _lookup(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    """(error, node id, host, port) for one key."""
    resource = _KEY_RESOURCES.get(key_type)
    if resource is not None and not ctx.authorize(AclOperation.DESCRIBE, resource[0], key):
        return resource[1], -1, "", -1
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    if key_type == SHARE_KEY_TYPE and (
        ctx.api_version < SHARE_FROM_VERSION or not valid_share_key(key)
    ):
        return ErrorCode.INVALID_REQUEST, -1, "", -1
    try:
        if key_type == GROUP_KEY_TYPE:
            ctx.broker.groups.ensure_offsets_topic()
        elif key_type == TRANSACTION_KEY_TYPE:
            ctx.broker.transactions.ensure_log()
        else:
            ctx.broker.share_coordinator.ensure_topic()
    except TopicError:  # e.g. fewer live nodes than its replication factor
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    coordinator_id = ctx.broker.nodes.coordinator_for(key_type, key)
    if coordinator_id < 0:  # its internal partition is offline
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    coordinator = ctx.broker.nodes.broker(coordinator_id)
    host, port = coordinator.advertised_endpoint(ctx.listener)
    return ErrorCode.NO_ERROR, coordinator.node_id, host, port


def valid_share_key(key: str) -> bool:
    """Kafka's `SharePartitionKey.validate`: `groupId:topicId:partition`, a group id not blank,
    a topic id Kafka's `Uuid.fromString` reads and an int32 partition."""
    tokens = key.split(":")
    while tokens and not tokens[-1]:  # Java's split drops trailing empty strings
        tokens.pop()
    if len(tokens) != 3 or not tokens[0].strip():
        return False
    return _kafka_uuid(tokens[1]) and _int32(tokens[2])


def _kafka_uuid(text: str) -> bool:
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        return False
    try:
        return len(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))) == 16
    except ValueError:
        return False


def _int32(text: str) -> bool:
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None and -(2**31) <= int(text) < 2**31


def _message(error: ErrorCode) -> str | None:
    if error == ErrorCode.NO_ERROR:
        return None
    return _DEFAULT_MESSAGES.get(error, error.name)


def _key_message(error: ErrorCode) -> str | None:
    """A v4+ key's message: Kafka leaves it null for the authorization errors."""
    return None if error in _DEFAULT_MESSAGES else _message(error)


def _share_denied(ctx: RequestContext, key_type: int) -> bool:
    return (
        key_type == SHARE_KEY_TYPE
        and ctx.api_version >= SHARE_FROM_VERSION
        and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION)
    )


def _failed(ctx: RequestContext, request: Any, error: ErrorCode) -> Any:
    """The whole request failed (Kafka's `getErrorResponse`)."""
    keys = request.coordinator_keys if ctx.api_version >= BATCHED_FROM_VERSION else []
    return new_response(
        ApiKey.FindCoordinator,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=_message(error),
        node_id=-1,
        host="",
        port=-1,
        coordinators=[
            _Coordinator(
                key=key,
                node_id=-1,
                host="",
                port=-1,
                error_code=error,
                error_message=_message(error),
            )
            for key in keys
        ],
    )


@handles(ApiKey.FindCoordinator, 0, 6)
async def handle_find_coordinator(ctx: RequestContext, request: Any) -> Any:
    key_type = request.key_type  # v0 decodes with the default, GROUP
    if _share_denied(ctx, key_type):
        return _failed(ctx, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if ctx.api_version >= BATCHED_FROM_VERSION:
        coordinators = []
        for key in request.coordinator_keys:
            error, node_id, host, port = _lookup(ctx, key_type, key)
            coordinators.append(
                _Coordinator(
                    key=key,
                    node_id=node_id,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message=_key_message(error),
                )
            )
        return new_response(
            ApiKey.FindCoordinator, ctx.api_version, throttle_time_ms=0, coordinators=coordinators
        )
    error, node_id, host, port = _lookup(ctx, key_type, request.key)
    return new_response(
        ApiKey.FindCoordinator,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        error_message=_message(error),
        node_id=node_id,
        host=host,
        port=port,
    )
