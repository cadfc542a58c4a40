"""DeleteShareGroupState (key 86), version 0 (KIP-932): share partitions' state deleted (a
tombstone in `__share_group_state`), as Kafka 4.3's share coordinator answers it.

Behaviour: `share_state_rpc.py` (CLUSTER_ACTION, empty requests, NOT_COORDINATOR) and
`groups/share/coordinator.py`: a negative partition is INVALID_REQUEST, a topic or partition
that does not exist UNKNOWN_TOPIC_OR_PARTITION; deleting a share partition without state
succeeds and writes nothing. The share partition is then uninitialized: ReadShareGroupState
answers INVALID_REQUEST, and the next ShareFetch starts it from `share.auto.offset.reset`.
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

_Result = struct_type(ApiKey.DeleteShareGroupState, "response", "DeleteStateResult")
_Partition = struct_type(
    ApiKey.DeleteShareGroupState, "response", "DeleteStateResult", "PartitionResult"
)


def _error(index: int, error: ErrorCode, message: str | None) -> Any:
    return _Partition(partition=index, error_code=error, error_message=message)


@handles(ApiKey.DeleteShareGroupState, 0, 0)
async def handle_delete_share_group_state(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.broker.share_coordinator

    def answer(key: ShareStateKey, partition: Any) -> Any:
        coordinator.delete(key)
        return _error(key.partition, ErrorCode.NO_ERROR, None)

    results = share_state_results(ctx, request, "delete share group state", answer, _error, _Result)
    return new_response(ApiKey.DeleteShareGroupState, ctx.api_version, results=results)
