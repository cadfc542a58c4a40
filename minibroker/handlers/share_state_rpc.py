"""What the five share-coordinator RPCs (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary, keys 83-87) have in common, as Kafka 4.3's `KafkaApis` handlers
and `ShareCoordinatorService` answer them:

- CLUSTER_ACTION on the cluster is needed: without it every partition of the request answers
  CLUSTER_AUTHORIZATION_FAILED ("Cluster authorization failed.").
- A request without topics, with a topic without partitions, or with an empty group id is
  answered with no results at all.
- Each partition is one key, `groupId:topicId:partition` (FindCoordinator's SHARE key type);
  a node that does not coordinate it answers NOT_COORDINATOR ("Unable to <action>: This is not
  the correct coordinator.").
- Each partition is then answered by the share coordinator (`groups/share/coordinator.py`):
  its errors carry their own message; a state that cannot be written is "Unable to <action>:
  " and the error's message.
- The results are one per topic id, in the order the request first names each, with one entry
  per partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from minibroker.auth.acls import AclOperation
from minibroker.groups.share.coordinator import ShareStateError, ShareStateStoreError
from minibroker.groups.share.state_records import ShareStateKey, coordinator_key
from minibroker.protocol.errors import ErrorCode
from minibroker.server.context import RequestContext

SHARE_KEY_TYPE = 2
CLUSTER_AUTHORIZATION_FAILED_MESSAGE = "Cluster authorization failed."
NOT_COORDINATOR_MESSAGE = "This is not the correct coordinator."

# One partition answered: its key and its request entry; raises ShareStateError.
PartitionAnswer = Callable[[ShareStateKey, Any], Any]
# A partition's error entry: partition index, error, message.
PartitionError = Callable[[int, ErrorCode, str | None], Any]


def share_state_results(
    ctx: RequestContext,
    request: Any,
    action: str,
    answer: PartitionAnswer,
    error: PartitionError,
    topic_result: Callable[..., Any],
) -> list[Any]:
    """The response's results; `action` names the operation in Kafka's messages ("write share
    group state")."""
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        failed = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED_MESSAGE
        return [
            topic_result(
                topic_id=topic.topic_id,
                partitions=[error(p.partition, *failed) for p in topic.partitions],
            )
            for topic in request.topics
        ]
    if not request.topics or any(not t.partitions for t in request.topics) or not request.group_id:
        return []
    by_topic: dict[uuid.UUID, dict[int, Any]] = {}
    for topic in request.topics:
        answered = by_topic.setdefault(topic.topic_id, {})
        for partition in topic.partitions:
            key = ShareStateKey(request.group_id, topic.topic_id, partition.partition)
            answered[partition.partition] = _answer_one(ctx, key, partition, action, answer, error)
    return [
        topic_result(topic_id=topic_id, partitions=list(partitions.values()))
        for topic_id, partitions in by_topic.items()
    ]


def _answer_one(
    ctx: RequestContext,
    key: ShareStateKey,
    partition: Any,
    action: str,
    answer: PartitionAnswer,
    error: PartitionError,
) -> Any:
    node_id = ctx.broker.node_id
    if ctx.broker.nodes.coordinator_error(SHARE_KEY_TYPE, coordinator_key(key), node_id):
        message = f"Unable to {action}: {NOT_COORDINATOR_MESSAGE}"
        return error(key.partition, ErrorCode.NOT_COORDINATOR, message)
    try:
        return answer(key, partition)
    except ShareStateStoreError as exc:
        return error(key.partition, exc.error, f"Unable to {action}: {exc.message}")
    except ShareStateError as exc:
        return error(key.partition, exc.error, exc.message)
