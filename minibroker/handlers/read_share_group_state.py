"""ReadShareGroupState (key 84), version 0 (KIP-932): a share partition's state as its leader
reads it (state epoch, start offset, state batches), as Kafka 4.3's share coordinator answers
it.

Behaviour: `share_state_rpc.py` (CLUSTER_ACTION, empty requests, NOT_COORDINATOR) and
`groups/share/coordinator.py`: a negative partition is INVALID_REQUEST, a share partition
without state INVALID_REQUEST ("Read operation on uninitialized share partition not
allowed."), a leader epoch below the highest seen FENCED_LEADER_EPOCH (-1 is never fenced), a
topic or partition that does not exist UNKNOWN_TOPIC_OR_PARTITION; a higher leader epoch is
recorded. An error entry has Kafka's defaults: state epoch 0, start offset 0, no batches.

The state is the one ShareFetch and ShareAcknowledge keep: what the share group's members
acquired and acknowledged (an acquired record reads as available).
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

_Result = struct_type(ApiKey.ReadShareGroupState, "response", "ReadStateResult")
_Partition = struct_type(
    ApiKey.ReadShareGroupState, "response", "ReadStateResult", "PartitionResult"
)
_Batch = struct_type(
    ApiKey.ReadShareGroupState, "response", "ReadStateResult", "PartitionResult", "StateBatch"
)


def _error(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(
        partition=index,
        error_code=error,
        error_message=message,
        state_epoch=0,
        start_offset=0,
        state_batches=[],
    )


@handles(ApiKey.ReadShareGroupState, 0, 0)
async def handle_read_share_group_state(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.broker.share_coordinator

    def answer(key: ShareStateKey, partition: Any) -> Any:
        state = coordinator.read(key, partition.leader_epoch)
        return _Partition(
            partition=key.partition,
            error_code=ErrorCode.NO_ERROR,
            error_message=None,
            state_epoch=state.state_epoch,
            start_offset=state.start_offset,
            state_batches=[
                _Batch(
                    first_offset=b.first_offset,
                    last_offset=b.last_offset,
                    delivery_state=b.delivery_state,
                    delivery_count=b.delivery_count,
                )
                for b in state.batches
            ],
        )

    results = share_state_results(ctx, request, "read share group state", answer, _error, _Result)
    return new_response(ApiKey.ReadShareGroupState, ctx.api_version, results=results)
