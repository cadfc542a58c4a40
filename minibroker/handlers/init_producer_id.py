"""InitProducerId (key 22), versions 0-5.

Behaviour (Kafka's `KafkaApis.handleInitProducerIdRequest` and
`TransactionCoordinator.handleInitProducerId`, implemented in `txn/producers.py`):
- A producer id given without an epoch, or an epoch without a producer id: INVALID_REQUEST.
- Null transactional id (idempotent producer): always a new producer id with epoch 0, unique
  across restarts (ids are reserved in blocks of 1000 in the data directory). Kafka ignores
  the producer id and epoch such a request carries (v3+); idempotent clients bump the epoch
  themselves and only ask for a new id when it runs out.
- Transactional ids belong to the transaction coordinator, which minibroker does not have yet:
  an empty id is INVALID_REQUEST, a timeout outside (0, `transaction.max.timeout.ms`] is
  INVALID_TRANSACTION_TIMEOUT, and otherwise COORDINATOR_NOT_AVAILABLE, what Kafka answers
  while its coordinator is not active. Clients treat it as retriable: they look the
  coordinator up again and retry until their own timeout (Java: `max.block.ms` in
  `initTransactions`).

Errors carry producer id -1 and epoch -1. Version notes: `producer_id` / `producer_epoch` exist
from v3 (KIP-360); the codec fills -1 for older versions. v2+ is flexible.
"""

from __future__ import annotations

from typing import Any

from minibroker.handlers.registry import handles
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response
from minibroker.server.context import RequestContext


@handles(ApiKey.InitProducerId, 0, 5)
async def handle_init_producer_id(ctx: RequestContext, request: Any) -> Any:
    error, producer_id, producer_epoch = ctx.broker.producers.init_producer_id(
        request.transactional_id,
        request.transaction_timeout_ms,
        request.producer_id,
        request.producer_epoch,
    )
    return new_response(
        ApiKey.InitProducerId,
        ctx.api_version,
        throttle_time_ms=0,
        error_code=error,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
