"""InitProducerId (key 22), versions 0-5.

Behaviour (Kafka's `KafkaApis.handleInitProducerIdRequest` and
`TransactionCoordinator.handleInitProducerId`):
- A producer id given without an epoch, or an epoch without a producer id: INVALID_REQUEST.
- Null transactional id (idempotent producer): always a new producer id with epoch 0, unique
  across restarts (`txn/producers.py`; ids are reserved in blocks of 1000 in the data
  directory). Kafka ignores the producer id and epoch such a request carries (v3+).
- A transactional id goes to the transaction coordinator (`txn/coordinator.py`): an empty id is
  INVALID_REQUEST, a timeout outside (0, `transaction.max.timeout.ms`] is
  INVALID_TRANSACTION_TIMEOUT. A new id gets a new producer id with epoch 0; a known one the
  same producer id with the epoch bumped, which fences its older producers (a new producer id
  once the epoch is exhausted). If the id has a transaction open, it is aborted under a
  bumped epoch and the answer is CONCURRENT_TRANSACTIONS (also while a transaction is being
  committed or aborted): the client retries. v3+ may carry the producer's current id and
  epoch (KIP-360, resuming after an abortable error): a stale one is PRODUCER_FENCED.

Authorization first, as Kafka: a transactional id needs WRITE on it
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs IDEMPOTENT_WRITE on the
cluster or WRITE on some topic (`authorize_by_resource_type`), else
CLUSTER_AUTHORIZATION_FAILED. (Kafka's TWO_PHASE_COMMIT check belongs to v6, not served.)

Under transactions V2 (`transaction.version` 2) the coordinator behaves the same here; the
per-transaction epoch bump happens in EndTxn v5. Errors carry producer id -1 and epoch -1.
v6 (KIP-939 two-phase commit: Enable2Pc, KeepPreparedTxn) is marked unstable in Kafka 4.3 and
is not served. Version notes: `producer_id` / `producer_epoch` exist
from v3 (KIP-360); the codec fills -1 for older versions. v2+ is flexible. PRODUCER_FENCED
exists from v4; older versions get INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from minibroker.auth.acls import AclOperation, ResourceType
from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext
from minibroker.server.nodes import TRANSACTION_KEY_TYPE
from minibroker.txn.coordinator import error_for_version

PRODUCER_FENCED_FROM_VERSION = 4


def _refused(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        if ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE) or ctx.authorize_by_resource_type(
        AclOperation.WRITE, ResourceType.TOPIC
    ):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _init(ctx: RequestContext, request: Any) -> tuple[ErrorCode, int, int]:
    refused = _refused(ctx, request.transactional_id)
    if refused is not None:
        return refused, -1, -1
    if (request.producer_id == -1) != (request.producer_epoch == -1):
        return ErrorCode.INVALID_REQUEST, -1, -1
    if request.transactional_id is None:
        return ErrorCode.NO_ERROR, ctx.broker.producers.new_producer_id(), 0
    result = ctx.broker.transactions.init_producer_id(
        request.transactional_id,
        request.transaction_timeout_ms,
        request.producer_id,
        request.producer_epoch,
    )
    error = error_for_version(result.error, ctx.api_version, PRODUCER_FENCED_FROM_VERSION)
    return error, result.producer_id, result.producer_epoch


@handles(ApiKey.InitProducerId, 0, 5)
async def handle_init_producer_id(ctx: RequestContext, request: Any) -> Any:
    error, producer_id, producer_epoch = _init(ctx, request)
    if request.transactional_id is not None:
        key = request.transactional_id
        error = await ctx.replicated_write(key, TRANSACTION_KEY_TYPE, error)
    return new_response(
        ApiKey.InitProducerId,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
