"""WriteShareGroupState (key 85), versions 0-1 (KIP-932): a share partition leader's write of
its state, as Kafka 4.3's share coordinator answers it.

Behaviour: `share_state_rpc.py` (CLUSTER_ACTION, empty requests, NOT_COORDINATOR) and
`groups/share/coordinator.py`: a negative partition is INVALID_REQUEST, a share partition
without state INVALID_REQUEST ("Write operation on uninitialized share partition not
allowed."), a leader or state epoch (not -1) below the highest seen FENCED_LEADER_EPOCH or
FENCED_STATE_EPOCH, a topic or partition that does not exist UNKNOWN_TOPIC_OR_PARTITION.
Otherwise the start offset and leader epoch (each unless -1) are taken and the state batches
combined with the stored ones as Kafka's `PersisterStateBatchCombiner` combines them.

What is written is what share consumers then get: the share partition ShareFetch works on is
rebuilt from the new state (nothing acquired; a batch other than acknowledged or archived is
available again, its delivery count kept).

Version notes: v1 (KIP-1226) adds DeliveryCompleteCount (v0: -1, unknown), which
ReadShareGroupStateSummary v1 answers.
"""

from __future__ import annotations

from typing import Any

from minibroker.groups.share.coordinator import StateWrite
from minibroker.groups.share.state_records import ShareStateKey, StateBatch
from minibroker.handlers.registry import handles
from minibroker.handlers.share_state_rpc import share_state_results
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import new_response, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

_Result = struct_type(ApiKey.WriteShareGroupState, "response", "WriteStateResult")
_Partition = struct_type(
    ApiKey.WriteShareGroupState, "response", "WriteStateResult", "PartitionResult"
)


def _error(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(partition=index, error_code=error, error_message=message)


def _write(partition: Any) -> StateWrite:
    return StateWrite(
        state_epoch=partition.state_epoch,
        leader_epoch=partition.leader_epoch,
        start_offset=partition.start_offset,
        delivery_complete_count=partition.delivery_complete_count,
        batches=tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in partition.state_batches
        ),
    )


@handles(ApiKey.WriteShareGroupState, 0, 1)
async def handle_write_share_group_state(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.broker.share_coordinator

    def answer(key: ShareStateKey, partition: Any) -> Any:
        coordinator.write(key, _write(partition))
        return _error(key.partition, ErrorCode.NO_ERROR, None)

    results = share_state_results(ctx, request, "write share group state", answer, _error, _Result)
    return new_response(ApiKey.WriteShareGroupState, ctx.api_version, results=results)
