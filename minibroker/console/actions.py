"""The console's writes, through the functions the Kafka request handlers use, with Kafka's
checks and messages (a refusal is a ConsoleError naming Kafka's error code).

- create a topic (CreateTopics: name, count, replication factor, configs; more than 10000
  partitions POLICY_VIOLATION), delete one (DeleteTopics: `delete.topic.enable`, committed
  offsets and producer state go with it; internal topics are refused here, a console click
  must not take the group or transaction coordinator's log away);
- add partitions (CreatePartitions), alter configs (IncrementalAlterConfigs SET and DELETE);
- delete records (DeleteRecords: up to an offset, -1 the high watermark);
- produce one record (`cluster.append.append_record`, validated as a Produce);
- reset a group's offsets (earliest, latest, timestamp, offset; only while the group is
  Empty, as kafka-consumer-groups.sh: else an error naming its state) and delete a group
  (DeleteGroups).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from minibroker.cluster.alter_configs import (
    ConfigChangeError,
    ConfigOp,
    OpType,
    ResourceType,
    alter_resource,
)
from minibroker.cluster.append import append_record
from minibroker.cluster.assignments import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_OPERATION,
    placed_replicas,
)
from minibroker.cluster.state import Cluster, Partition, TopicError
from minibroker.console.errors import BAD_REQUEST, CONFLICT, ConsoleError, kafka_error
from minibroker.console.messages import parse_timestamp
from minibroker.console.views import (
    existing_group,
    existing_topic,
    group_state,
    partition_end,
    partition_start,
)
from minibroker.groups.coordinator import OffsetCommit
from minibroker.groups.group import Group
from minibroker.groups.share.offsets_admin import check_empty_share_group
from minibroker.handlers.list_offsets import offset_for
from minibroker.protocol.errors import ErrorCode
from minibroker.records.validate import InvalidRecords
from minibroker.server.broker import Broker

METADATA_TOPIC = "__cluster_metadata"
RESET_TARGETS = ("earliest", "latest", "timestamp", "offset")
HIGH_WATERMARK = -1


# ---- topics -----------------------------------------------------------------------------------


def create_topic(
    broker: Broker,
    name: str,
    partitions: int | None,
    replication_factor: int | None,
    configs: Mapping[str, str],
) -> None:
    config = broker.config
    count = config.get_int("num.partitions") if partitions is None else partitions
    factor = (
        config.get_int("default.replication.factor")
        if replication_factor is None
        else (replication_factor)
    )
    try:
        if name == METADATA_TOPIC:
            raise TopicError(
                ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited."
            )
        broker.cluster.check_new_topic(name, count, configs)
        if factor < 1:
            raise TopicError(
                ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
            )
        if 1 + len(configs) + count > MAX_RECORDS_PER_USER_OP:
            raise TopicError(ErrorCode.POLICY_VIOLATION, TOO_LARGE_OPERATION)
        placed = placed_replicas(broker.nodes.reachable(), count, factor) if factor > 1 else None
        broker.cluster.create_topic(name, count, dict(configs), placed)
    except TopicError as exc:
        raise kafka_error(exc.error_code, exc.message) from exc


def delete_topic(broker: Broker, name: str) -> None:
    topic = existing_topic(broker, name)
    if not broker.config.get_bool("delete.topic.enable"):
        raise kafka_error(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
    if topic.internal:
        raise kafka_error(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"the console does not delete internal topic {name}"
        )
    deleted = broker.cluster.delete_topic(name)
    for partition in deleted.partitions:
        broker.producers.forget(partition)
    broker.groups.delete_topic_offsets([name])


def add_partitions(broker: Broker, name: str, total: int) -> None:
    topic = existing_topic(broker, name)
    try:
        Cluster.check_partition_increase(topic, total)
        additional = total - len(topic.partitions)
        if additional > MAX_RECORDS_PER_USER_OP:
            raise TopicError(ErrorCode.POLICY_VIOLATION, TOO_LARGE_OPERATION)
        factor = topic.replication_factor
        replicas = None
        if factor > 1:
            replicas = placed_replicas(broker.nodes.reachable(), additional, factor)
        broker.cluster.add_partitions(name, total, replicas)
    except TopicError as exc:
        raise kafka_error(exc.error_code, exc.message) from exc


def alter_configs(
    broker: Broker, name: str, updates: Mapping[str, str], deletions: Iterable[str]
) -> None:
    """IncrementalAlterConfigs on the topic: SET each update, DELETE each deletion."""
    existing_topic(broker, name)
    ops = [ConfigOp(key, OpType.SET, value) for key, value in updates.items()]
    ops += [ConfigOp(key, OpType.DELETE, None) for key in deletions]
    if not ops:
        raise ConsoleError(BAD_REQUEST, "no config to set or delete")
    targets = broker.config_targets()
    try:
        alter_resource(
            targets, ResourceType.TOPIC, name, ops, incremental=True, validate_only=False
        )
    except ConfigChangeError as exc:
        raise kafka_error(exc.error_code, exc.message) from exc


def _delete_records_error(broker: Broker, partition: Partition, offset: int) -> ErrorCode | None:
    topic = broker.cluster.topics[partition.topic]
    if topic.internal:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if "delete" not in broker.cluster.topic_value(topic, "cleanup.policy").split(","):
        return ErrorCode.POLICY_VIOLATION
    if offset < 0 or offset > partition_end(partition):
        return ErrorCode.OFFSET_OUT_OF_RANGE
    return None


def delete_records(broker: Broker, name: str, index: int | None, offset: int) -> dict[int, int]:
    """DeleteRecords up to `offset` (-1: the high watermark) on one partition or (None) every
    one; returns each partition's new log start offset."""
    topic = existing_topic(broker, name)
    partitions = topic.partitions if index is None else [_partition(broker, name, index)]
    starts = {}
    for partition in partitions:
        target = partition_end(partition) if offset == HIGH_WATERMARK else offset
        error = _delete_records_error(broker, partition, target)
        if error is not None:
            raise kafka_error(error, _delete_records_message(error, partition, target))
        starts[partition.index] = partition.delete_records_before(target)
    return starts


def _delete_records_message(error: ErrorCode, partition: Partition, offset: int) -> str:
    if error == ErrorCode.OFFSET_OUT_OF_RANGE:
        return (
            f"offset {offset} is outside partition {partition.topic}-{partition.index}'s range "
            f"[{partition_start(partition)}, {partition_end(partition)}]"
        )
    if error == ErrorCode.POLICY_VIOLATION:
        return "the topic's cleanup.policy does not include delete"
    return f"records of internal topic {partition.topic} cannot be deleted"


def _partition(broker: Broker, name: str, index: int) -> Partition:
    partition = broker.cluster.partition(name, index)
    if partition is None:
        raise kafka_error(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name} has no partition {index}"
        )
    return partition


# ---- produce ----------------------------------------------------------------------------------


def parse_headers(text: str) -> list[tuple[str, bytes | None]]:
    """A JSON object of header name -> string (or null) value."""
    if not text.strip():
        return []
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ConsoleError(BAD_REQUEST, f"headers are not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise ConsoleError(BAD_REQUEST, "headers must be a JSON object of name -> string")
    headers: list[tuple[str, bytes | None]] = []
    for name, value in parsed.items():
        if value is not None and not isinstance(value, str):
            raise ConsoleError(
                BAD_REQUEST, f"header {name!r} must have a string or null value, not {value!r}"
            )
        headers.append((name, None if value is None else value.encode()))
    return headers


def produce(
    broker: Broker,
    name: str,
    index: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
) -> int:
    """Append one record as a Produce would; returns its offset."""
    existing_topic(broker, name)
    _partition(broker, name, index)
    try:
        return append_record(broker.cluster, name, index, key, value, headers)
    except InvalidRecords as exc:
        raise kafka_error(exc.error_code, exc.message) from exc
    except TopicError as exc:
        raise kafka_error(exc.error_code, exc.message) from exc


# ---- groups -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetSpec:
    target: str  # earliest, latest, timestamp, offset
    value: str = ""
    topic: str | None = None  # None: every partition the group has offsets for
    partition: int | None = None  # None: every partition of `topic`


def _reset_offset(partition: Partition, spec: ResetSpec) -> int:
    first, end = partition_start(partition), partition_end(partition)
    if spec.target == "earliest":
        return first
    if spec.target == "latest":
        return end
    if spec.target == "timestamp":
        found, _ = offset_for(partition, parse_timestamp(spec.value), read_committed=False)
        return end if found < 0 else found
    try:
        wanted = int(spec.value)
    except ValueError:
        raise ConsoleError(BAD_REQUEST, f"offset must be an integer, not {spec.value!r}") from None
    # As kafka-consumer-groups.sh --to-offset: an offset past either end is moved to it.
    return min(max(wanted, first), end)


def _reset_partitions(broker: Broker, group: Group, spec: ResetSpec) -> list[Partition]:
    if spec.topic:
        topic = existing_topic(broker, spec.topic)
        if spec.partition is None:
            return list(topic.partitions)
        return [_partition(broker, spec.topic, spec.partition)]
    if group.share is not None:
        names = broker.cluster.topics_by_id
        keys = [
            (names[topic_id].name, index)
            for topic_id, index in broker.share_deliveries.partitions_of(group.group_id)
            if topic_id in names
        ]
    else:
        keys = list(group.offsets)
    partitions = [broker.cluster.partition(topic, index) for topic, index in sorted(keys)]
    found = [partition for partition in partitions if partition is not None]
    if not found:
        raise ConsoleError(
            BAD_REQUEST, f"group {group.group_id} has no offsets: name a topic to reset"
        )
    return found


def _not_inactive(group: Group) -> ConsoleError:
    return ConsoleError(
        CONFLICT,
        f"NON_EMPTY_GROUP: Assignments can only be reset if the group '{group.group_id}' is "
        f"inactive, but the current state is {group_state(group)}.",
    )


def reset_offsets(broker: Broker, group_id: str, spec: ResetSpec) -> dict[str, int]:
    """Set the group's offsets (a share group's start offsets); returns `topic-partition` ->
    the new offset."""
    if spec.target not in RESET_TARGETS:
        raise ConsoleError(
            BAD_REQUEST, f"reset to one of {', '.join(RESET_TARGETS)}, not {spec.target!r}"
        )
    group = existing_group(broker, group_id)
    if group_state(group) != "Empty":
        raise _not_inactive(group)
    targets = {p: _reset_offset(p, spec) for p in _reset_partitions(broker, group, spec)}
    if group.share is not None:
        _reset_share_group(broker, group, targets)
    else:
        _commit(broker, group, targets)
    return {f"{p.topic}-{p.index}": offset for p, offset in targets.items()}


def _reset_share_group(broker: Broker, group: Group, targets: dict[Partition, int]) -> None:
    enabled = broker.features.share_groups_enabled
    error, message = check_empty_share_group(broker.groups, group.group_id, enabled, False)
    if error != ErrorCode.NO_ERROR:
        raise kafka_error(error, message)
    for partition, offset in targets.items():
        topic_id = broker.cluster.topics[partition.topic].topic_id
        broker.share_deliveries.reset_start(group.group_id, topic_id, partition.index, offset)


def _commit(broker: Broker, group: Group, targets: dict[Partition, int]) -> None:
    commits = [OffsetCommit(p.topic, p.index, offset, -1, "") for p, offset in targets.items()]
    result = broker.groups.commit_offsets(group.group_id, "", None, -1, commits)
    errors = [result] if isinstance(result, ErrorCode) else result
    failed = next((error for error in errors if error != ErrorCode.NO_ERROR), None)
    if failed is not None:
        raise kafka_error(failed, f"committing the offsets of group {group.group_id} failed")


def delete_group(broker: Broker, group_id: str) -> None:
    group = existing_group(broker, group_id)
    state = group_state(group)
    [(_, error)] = broker.groups.delete_groups([group_id])
    if error == ErrorCode.NON_EMPTY_GROUP:
        raise ConsoleError(
            CONFLICT, f"NON_EMPTY_GROUP: group {group_id} has members (state {state})"
        )
    if error != ErrorCode.NO_ERROR:
        raise kafka_error(error)
    broker.share_deliveries.forget_group(group_id)
