"""ReadShareGroupStateSummary (key 87), versions 0-1 (KIP-932): a share partition's start
offset, epochs and delivery complete count, as Kafka 4.3's share coordinator answers it (the
group coordinator's source for DescribeShareGroupOffsets).

Behaviour: `share_state_rpc.py` (CLUSTER_ACTION, empty requests, NOT_COORDINATOR) and
`groups/share/coordinator.py`: a negative partition is INVALID_REQUEST, a topic or partition
that does not exist UNKNOWN_TOPIC_OR_PARTITION; the leader epoch is not checked. A share
partition without state is no error: start offset -1, delivery complete count -1, epochs 0.
An error entry has Kafka's defaults (start offset 0, delivery complete count -1).

The delivery complete count is the offsets at or above the start offset whose delivery is
complete (acknowledged or archived), as the share partition's leader last wrote it: for share
partitions ShareFetch and ShareAcknowledge drive, counted from their state; for one written by
WriteShareGroupState, the count it sent (-1 from v0).

Version notes: v1 (KIP-1226) adds DeliveryCompleteCount.
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

_Result = struct_type(ApiKey.ReadShareGroupStateSummary, "response", "ReadStateSummaryResult")
_Partition = struct_type(
    ApiKey.ReadShareGroupStateSummary, "response", "ReadStateSummaryResult", "PartitionResult"
)


def _error(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(
        partition=index,
        error_code=error,
        error_message=message,
        state_epoch=0,
        leader_epoch=0,
        start_offset=0,
        delivery_complete_count=-1,
    )


@handles(ApiKey.ReadShareGroupStateSummary, 0, 1)
async def handle_read_share_group_state_summary(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.broker.share_coordinator

    def answer(key: ShareStateKey, partition: Any) -> Any:
        state = coordinator.summary(key)
        return _Partition(
            partition=key.partition,
            error_code=ErrorCode.NO_ERROR,
            error_message=None,
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            delivery_complete_count=state.delivery_complete_count,
        )

    results = share_state_results(
        ctx, request, "read share group state summary", answer, _error, _Result
    )
    return new_response(ApiKey.ReadShareGroupStateSummary, ctx.api_version, results=results)
