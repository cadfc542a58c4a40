"""InitializeShareGroupState (key 83), version 0 (KIP-932): a share partition's state
initialized with a state epoch and a start offset (-1: not started; the next ShareFetch starts
it from `share.auto.offset.reset`), as Kafka 4.3's share coordinator answers it.

Behaviour: `share_state_rpc.py` (CLUSTER_ACTION, empty requests, NOT_COORDINATOR) and
`groups/share/coordinator.py` (the checks: a negative partition is INVALID_REQUEST, a state
epoch below the stored one FENCED_STATE_EPOCH, a topic or partition that does not exist
UNKNOWN_TOPIC_OR_PARTITION). An initialized share partition starts afresh: nothing in flight,
leader epoch 0, and a share consumer then reads from the start offset.
"""

from __future__ import annotations

from typing import Any

from minibroker.groups.share.state_records import ShareStateKey
from minibroker.handlers.registry import handles
from minibroker.handlers.share_state_rpc import share_state_results
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.InitializeShareGroupState, "response", "InitializeStateResult")
_Partition = struct_type(
    ApiKey.InitializeShareGroupState, "response", "InitializeStateResult", "PartitionResult"
)


def _error(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(partition=index, error_code=error, error_message=message)


@handles(ApiKey.InitializeShareGroupState, 0, 0)
async def handle_initialize_share_group_state(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.broker.share_coordinator

    def answer(key: ShareStateKey, partition: Any) -> Any:
        coordinator.initialize(key, partition.state_epoch, partition.start_offset)
        return _error(key.partition, ErrorCode.NO_ERROR, None)

    results = share_state_results(
        ctx, request, "initialize share group state", answer, _error, _Result
    )
    return new_response(ApiKey.InitializeShareGroupState, ctx.api_version, results=results)
