"""What the console shows, read from the broker's own state as JSON-ready dicts.

Every function here only reads: the cluster's topics and partitions, the group coordinator,
the transaction coordinator, the producer state and the share-partition state. Pages render
these dicts as HTML; the API answers them as JSON.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from minibroker.cluster.describe_configs import topic_config_entries
from minibroker.cluster.state import Partition, Topic
from minibroker.console.errors import NOT_FOUND, ConsoleError
from minibroker.groups.consumer.protocol import MalformedConsumerProtocol, parse_assignment
from minibroker.groups.group import Group, GroupState
from minibroker.groups.streams.model import StreamsGroup
from minibroker.handlers.describe_share_group_offsets import share_lag
from minibroker.log.lazy import is_created
from minibroker.server.broker import Broker
from minibroker.txn.state import TxnState

CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"
OPEN_TXN_STATES = frozenset(
    {
        TxnState.ONGOING,
        TxnState.PREPARE_COMMIT,
        TxnState.PREPARE_ABORT,
        TxnState.PREPARE_EPOCH_FENCE,
    }
)
Json = dict[str, Any]


def minibroker_version() -> str:
    try:
        return version("minibroker")
    except PackageNotFoundError:
        return "unknown"


def directory_bytes(directory: Path | None) -> int | None:
    """The size of every file under `directory` (None for in-memory storage)."""
    if directory is None:
        return None
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking (a segment deleted by retention)
                continue
    return total


def partition_size(partition: Partition) -> int:
    return partition.log.size_bytes if is_created(partition.log) else 0


def partition_start(partition: Partition) -> int:
    return partition.log.log_start_offset if is_created(partition.log) else 0


def partition_end(partition: Partition) -> int:
    """The high watermark; 0 for a lazy log never used (reading it would create it)."""
    return partition.high_watermark if is_created(partition.log) else 0


def partition_stable_end(partition: Partition) -> int:
    return partition.last_stable_offset if is_created(partition.log) else 0


# ---- overview ---------------------------------------------------------------------------------


def nodes_view(broker: Broker) -> list[Json]:
    nodes = broker.nodes
    return [
        {
            "id": node_id,
            "live": node_id in nodes.live,
            "controller": node_id == nodes.controller_id(),
            "listeners": [
                {
                    "name": bound.listener.name,
                    "address": f"{bound.host}:{bound.port}",
                    "protocol": node.security[bound.listener.name].protocol,
                }
                for bound in node.bound
            ],
        }
        for node_id, node in sorted(nodes.brokers.items())
    ]


def overview(broker: Broker, started_s: float) -> Json:
    topics = [topic for topic in broker.cluster.topics.values() if not topic.internal]
    return {
        "version": minibroker_version(),
        "cluster_id": broker.cluster_id,
        "nodes": nodes_view(broker),
        "uptime_s": round(time.monotonic() - started_s, 1),
        "data_dir": None if broker.data_dir is None else str(broker.data_dir),
        "data_dir_bytes": directory_bytes(broker.data_dir),
        "topics": len(topics),
        "partitions": sum(len(topic.partitions) for topic in topics),
        "groups": len(broker.groups.listed_groups()),
        "open_transactions": len(open_transactions(broker)),
    }


# ---- topics -----------------------------------------------------------------------------------


def existing_topic(broker: Broker, name: str) -> Topic:
    topic = broker.cluster.topics.get(name)
    if topic is None:
        raise ConsoleError(NOT_FOUND, f"UNKNOWN_TOPIC_OR_PARTITION: no topic named {name!r}")
    return topic


def partition_view(broker: Broker, partition: Partition) -> Json:
    replicas = broker.nodes.replica_view(partition)
    return {
        "partition": partition.index,
        "leader": replicas.leader,
        "replicas": replicas.replicas,
        "isr": replicas.isr,
        "log_start_offset": partition_start(partition),
        "high_watermark": partition_end(partition),
        "last_stable_offset": partition_stable_end(partition),
        "size_bytes": partition_size(partition),
    }


def topic_summary(broker: Broker, topic: Topic, rates: dict[str, float]) -> Json:
    return {
        "name": topic.name,
        "internal": topic.internal,
        "partitions": len(topic.partitions),
        "replication_factor": topic.replication_factor,
        "size_bytes": sum(partition_size(p) for p in topic.partitions),
        "messages": sum(partition_end(p) - partition_start(p) for p in topic.partitions),
        "end_offsets": sum(partition_end(p) for p in topic.partitions),
        "messages_per_s": round(rates.get(topic.name, 0.0), 1),
        "configs": dict(sorted(topic.configs.items())),
    }


def topics_view(broker: Broker, rates: dict[str, float]) -> list[Json]:
    return [
        topic_summary(broker, topic, rates)
        for _name, topic in sorted(broker.cluster.topics.items())
    ]


def topic_view(broker: Broker, name: str, rates: dict[str, float]) -> Json:
    topic = existing_topic(broker, name)
    entries = topic_config_entries(broker.config, topic.configs)
    return {
        **topic_summary(broker, topic, rates),
        "topic_id": str(topic.topic_id),
        "partition_details": [partition_view(broker, p) for p in topic.partitions],
        "all_configs": [
            {"name": entry.name, "value": entry.value, "source": entry.source.name}
            for entry in entries
        ],
    }


# ---- groups -----------------------------------------------------------------------------------


def group_type(group: Group) -> str:
    if group.consumer is not None:
        return CONSUMER
    if group.share is not None:
        return SHARE
    if group.streams is not None:
        return STREAMS
    return CLASSIC


def group_state(group: Group) -> str:
    if group.consumer is not None:
        return group.consumer.state.value
    if group.share is not None:
        return group.share.state.value
    if group.streams is not None:
        return group.streams.state.value
    return group.state.value


def group_members(broker: Broker, group: Group) -> list[Json]:
    names = broker.cluster.topics_by_id

    def by_name(assignment: dict[Any, set[int]]) -> dict[str, list[int]]:
        return {
            names[topic_id].name if topic_id in names else str(topic_id): sorted(partitions)
            for topic_id, partitions in assignment.items()
            if partitions
        }

    if group.consumer is not None:
        return [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "instance_id": m.instance_id,
                "member_epoch": m.member_epoch,
                "assignment": by_name(m.assigned),
            }
            for m in group.consumer.members.values()
        ]
    if group.share is not None:
        return [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "instance_id": None,
                "member_epoch": m.member_epoch,
                "assignment": by_name(m.assigned),
            }
            for m in group.share.members.values()
        ]
    if group.streams is not None:
        return _streams_members(broker, group.streams)
    return [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "instance_id": m.group_instance_id,
            "member_epoch": group.generation_id,
            "assignment": _classic_assignment(group, m.assignment),
        }
        for m in group.members.values()
    ]


def _streams_members(broker: Broker, streams: StreamsGroup) -> list[Json]:
    """A streams group's members; the assignment is the partitions their active tasks read."""

    def partition_count(name: str) -> int | None:
        topic = broker.cluster.topics.get(name)
        return None if topic is None else len(topic.partitions)

    return [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "instance_id": m.instance_id,
            "member_epoch": m.member_epoch,
            "assignment": streams.task_partitions(m.assigned.active, partition_count),
        }
        for m in streams.members.values()
    ]


def _classic_assignment(group: Group, data: bytes) -> dict[str, list[int]]:
    """A classic consumer's assignment (another protocol's bytes are not decoded)."""
    if group.protocol_type != CONSUMER:
        return {}
    try:
        return {topic: sorted(parts) for topic, parts in parse_assignment(data).items()}
    except MalformedConsumerProtocol:
        return {}


def _owners(members: list[Json]) -> dict[tuple[str, int], str]:
    return {
        (topic, partition): member["member_id"]
        for member in members
        for topic, partitions in member["assignment"].items()
        for partition in partitions
    }


def committed_lags(broker: Broker, group: Group) -> Iterator[Json]:
    """Each committed offset of a classic or consumer group with its lag (high watermark minus
    the committed offset; none for a partition that no longer exists)."""
    for (topic, index), value in sorted(group.offsets.items()):
        partition = broker.cluster.partition(topic, index)
        end = None if partition is None else partition_end(partition)
        yield {
            "topic": topic,
            "partition": index,
            "committed_offset": value.offset,
            "log_end_offset": end,
            "lag": None if end is None else max(0, end - value.offset),
            "metadata": value.metadata,
        }


def share_lags(broker: Broker, group: Group) -> Iterator[Json]:
    """A share group's share partitions: start offset (SPSO) and Kafka's share lag."""
    shares = broker.share_deliveries.partitions_of(group.group_id)
    for (topic_id, index), share in sorted(shares.items(), key=lambda item: str(item[0])):
        topic = broker.cluster.topics_by_id.get(topic_id)
        partition = None if topic is None else broker.cluster.partition(topic.name, index)
        yield {
            "topic": str(topic_id) if topic is None else topic.name,
            "partition": index,
            "committed_offset": share.start_offset,
            "log_end_offset": None if partition is None else partition_end(partition),
            "lag": None if partition is None else max(0, share_lag(share, partition)),
            "metadata": "",
        }


def partition_lags(broker: Broker, group: Group) -> list[Json]:
    if group.share is not None:
        return list(share_lags(broker, group))
    return list(committed_lags(broker, group))


def total_lag(broker: Broker, group: Group) -> int:
    return sum(entry["lag"] or 0 for entry in partition_lags(broker, group))


def existing_group(broker: Broker, group_id: str) -> Group:
    group = broker.groups.groups.get(group_id)
    if group is None or group.is_in(GroupState.DEAD):
        raise ConsoleError(NOT_FOUND, f"GROUP_ID_NOT_FOUND: no group named {group_id!r}")
    return group


def groups_view(broker: Broker) -> list[Json]:
    return [
        {
            "group_id": group.group_id,
            "type": group_type(group),
            "state": group_state(group),
            "members": len(group_members(broker, group)),
            "lag": total_lag(broker, group),
        }
        for group in sorted(broker.groups.listed_groups(), key=lambda g: g.group_id)
    ]


def group_view(broker: Broker, group_id: str, history: list[tuple[float, int]]) -> Json:
    group = existing_group(broker, group_id)
    members = group_members(broker, group)
    owners = _owners(members)
    offsets = partition_lags(broker, group)
    for entry in offsets:
        entry["member_id"] = owners.get((entry["topic"], entry["partition"]))
    return {
        "group_id": group.group_id,
        "type": group_type(group),
        "state": group_state(group),
        "protocol": group.protocol_name,
        "members": members,
        "offsets": offsets,
        "lag": sum(entry["lag"] or 0 for entry in offsets),
        "lag_history": [{"time": t, "lag": lag} for t, lag in history],
    }


# ---- transactions -----------------------------------------------------------------------------


def open_transactions(broker: Broker) -> list[Json]:
    return [
        {
            "transactional_id": txn.transactional_id,
            "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
            "state": txn.state.display_name,
            "timeout_ms": txn.timeout_ms,
            "start_ms": txn.start_ms,
            "partitions": [f"{topic}-{index}" for topic, index in sorted(txn.partitions)],
        }
        for txn in sorted(broker.transactions.transactions.values(), key=lambda t: t.start_ms)
        if txn.state in OPEN_TXN_STATES
    ]


def transactions_view(broker: Broker) -> Json:
    partitions = []
    for topic in sorted(broker.cluster.topics.values(), key=lambda t: t.name):
        if topic.internal:
            continue
        for partition in topic.partitions:
            if not is_created(partition.log):
                continue
            producers = broker.producers.active_producers(partition)
            partitions.append(
                {
                    "topic": topic.name,
                    "partition": partition.index,
                    "high_watermark": partition.high_watermark,
                    "last_stable_offset": partition.last_stable_offset,
                    "producers": [
                        {
                            "producer_id": entry.producer_id,
                            "producer_epoch": entry.producer_epoch,
                            "last_sequence": entry.last_seq,
                            "last_timestamp": entry.last_timestamp,
                            "current_txn_start_offset": entry.current_txn_first_offset,
                        }
                        for entry in producers.values()
                    ],
                }
            )
    return {"transactions": open_transactions(broker), "partitions": partitions}
