"""Raw StreamsGroupHeartbeat / StreamsGroupDescribe requests for the streams-group tests, as a
Kafka Streams 4.3 client (`StreamsGroupHeartbeatRequestManager`) sends them: a join at epoch
0 carries the topology, the process id and empty task lists; later heartbeats carry the member
epoch and the tasks the member owns."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from tests.wire import WireClient

E = ErrorCode
Tasks = dict[str, list[int]]

# Short timeouts (Kafka lets the bounds be lowered) keep the tests quick; no initial delay and
# no assignment interval unless a test asks for them.
STREAMS_SETTINGS = {
    "offsets.topic.num.partitions": "3",
    "group.streams.min.session.timeout.ms": "100",
    "group.streams.session.timeout.ms": "1000",
    "group.streams.min.heartbeat.interval.ms": "10",
    "group.streams.heartbeat.interval.ms": "50",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
}


def create_topic(client: WireClient, name: str, partitions: int) -> None:
    response = client.call(
        ApiKey.CreateTopics,
        7,
        topics=[
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        timeout_ms=5000,
        validate_only=False,
    )
    assert response.topics[0].error_code == E.NO_ERROR


def partition_count(client: WireClient, name: str) -> int | None:
    response = client.call(
        ApiKey.Metadata, 12, topics=[{"name": name}], allow_auto_topic_creation=False
    )
    topic = response.topics[0]
    return None if topic.error_code else len(topic.partitions)


def topic_info(
    name: str, partitions: int = 0, configs: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "partitions": partitions,
        "replication_factor": 0,
        "topic_configs": [{"key": k, "value": v} for k, v in (configs or {}).items()],
    }


def subtopology(
    sub_id: str,
    sources: list[str],
    *,
    changelogs: list[str] | None = None,
    repartition_sinks: list[str] | None = None,
    repartition_sources: list[dict[str, Any]] | None = None,
    copartition: list[dict[str, Any]] | None = None,
    regex: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "subtopology_id": sub_id,
        "source_topics": sources,
        "source_topic_regex": regex or [],
        "state_changelog_topics": [topic_info(name) for name in changelogs or []],
        "repartition_sink_topics": repartition_sinks or [],
        "repartition_source_topics": repartition_sources or [],
        "copartition_groups": copartition or [],
    }


def topology(*subtopologies: dict[str, Any], epoch: int = 1) -> dict[str, Any]:
    return {"epoch": epoch, "subtopologies": list(subtopologies)}


def _task_ids(tasks: Tasks | None) -> list[dict[str, Any]] | None:
    if tasks is None:
        return None
    return [{"subtopology_id": sub, "partitions": parts} for sub, parts in sorted(tasks.items())]


def heartbeat(
    client: WireClient,
    group: str,
    member_id: str,
    epoch: int,
    *,
    topo: dict[str, Any] | None = None,
    active: Tasks | None = None,
    standby: Tasks | None = None,
    warmup: Tasks | None = None,
    process_id: str | None = None,
    endpoint: tuple[str, int] | None = None,
    endpoint_epoch: int = 0,
    rebalance_timeout_ms: int = -1,
    instance_id: str | None = None,
    rack_id: str | None = None,
    client_tags: dict[str, str] | None = None,
    shutdown: bool = False,
    task_offsets: list[tuple[str, int, int]] | None = None,
) -> Any:
    return client.call(
        ApiKey.StreamsGroupHeartbeat,
        0,
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        endpoint_information_epoch=endpoint_epoch,
        instance_id=instance_id,
        rack_id=rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        topology=topo,
        active_tasks=_task_ids(active),
        standby_tasks=_task_ids(standby),
        warmup_tasks=_task_ids(warmup),
        process_id=process_id,
        user_endpoint=None if endpoint is None else {"host": endpoint[0], "port": endpoint[1]},
        client_tags=None
        if client_tags is None
        else [{"key": k, "value": v} for k, v in client_tags.items()],
        task_offsets=None
        if task_offsets is None
        else [{"subtopology_id": s, "partition": p, "offset": o} for s, p, o in task_offsets],
        task_end_offsets=None,
        shutdown_application=shutdown,
    )


def join(
    client: WireClient,
    group: str,
    topo: dict[str, Any],
    *,
    member_id: str | None = None,
    process_id: str | None = None,
    **kwargs: Any,
) -> Any:
    member = member_id or uuid.uuid4().hex
    return heartbeat(
        client,
        group,
        member,
        0,
        topo=topo,
        active={},
        standby={},
        warmup={},
        process_id=process_id or uuid.uuid4().hex,
        rebalance_timeout_ms=kwargs.pop("rebalance_timeout_ms", 5000),
        **kwargs,
    )


def tasks(entries: Any) -> Tasks | None:
    if entries is None:
        return None
    return {entry.subtopology_id: sorted(entry.partitions) for entry in entries if entry.partitions}


def ok(response: Any) -> Any:
    assert response.error_code == E.NO_ERROR, response.error_message
    return response


def statuses(response: Any) -> list[tuple[int, str]]:
    return [(s.status_code, s.status_detail) for s in response.status or ()]


def describe(client: WireClient, *groups: str, operations: bool = False) -> list[Any]:
    response = client.call(
        ApiKey.StreamsGroupDescribe,
        0,
        group_ids=list(groups),
        include_authorized_operations=operations,
    )
    return list(response.groups)


class Member:
    """One streams member that heartbeats with the tasks it owns, as a client would: it
    reports its tasks, drops the ones the coordinator no longer gives it and takes new ones."""

    def __init__(
        self,
        client: WireClient,
        group: str,
        topo: dict[str, Any],
        process_id: str | None = None,
        **join_kwargs: Any,
    ) -> None:
        self.client = client
        self.group = group
        self.member_id = uuid.uuid4().hex
        self.process_id = process_id or uuid.uuid4().hex
        self.active: Tasks = {}
        self.standby: Tasks = {}
        self.warmup: Tasks = {}
        self.last = ok(
            join(
                client,
                group,
                topo,
                member_id=self.member_id,
                process_id=self.process_id,
                **join_kwargs,
            )
        )
        self.epoch = self.last.member_epoch
        self._take(self.last)

    def _take(self, response: Any) -> None:
        if response.active_tasks is not None:
            self.active = tasks(response.active_tasks) or {}
            self.standby = tasks(response.standby_tasks) or {}
            self.warmup = tasks(response.warmup_tasks) or {}

    def beat(self, **kwargs: Any) -> Any:
        response = ok(
            heartbeat(
                self.client,
                self.group,
                self.member_id,
                self.epoch,
                active=self.active,
                standby=self.standby,
                warmup=self.warmup,
                **kwargs,
            )
        )
        self.last = response
        self.epoch = response.member_epoch
        self._take(response)
        return response

    def leave(self) -> Any:
        return ok(heartbeat(self.client, self.group, self.member_id, -1))


def settle(members: list[Member], rounds: int = 8) -> None:
    """Heartbeat every member in turn until the group is reconciled (nothing changes)."""
    for _ in range(rounds):
        before = [(m.epoch, m.active, m.standby, m.warmup) for m in members]
        for member in members:
            member.beat()
        if before == [(m.epoch, m.active, m.standby, m.warmup) for m in members]:
            return


def wait_for(check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)
