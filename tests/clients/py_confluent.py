"""confluent-kafka (librdkafka) job program.

Usage: python py_confluent.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import jobio
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    AcknowledgeType,
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    ShareConsumer,
    ThrottleEvent,
    TopicPartition,
)

# confluent_kafka.admin re-exports these without marking them as exported.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
)
from jobio import Deadline, Job, Result, b64, headers_in, headers_out, unb64

TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


class DeliveryFailed(Exception):
    def __init__(self, error: KafkaError) -> None:
        super().__init__(error.str())
        self.error = error


def error_name(exc: BaseException) -> str | None:
    if isinstance(exc, DeliveryFailed):
        return str(exc.error.name())
    if isinstance(exc, KafkaException) and isinstance(exc.args[0], KafkaError):
        return str(exc.args[0].name())
    return None


def producer_config(job: Job, deadline: Deadline, throttle: ThrottleWatch) -> dict[str, Any]:
    """A produce job's producer settings, `config` last (it may override them)."""
    config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "acks": job.get("acks", "all"),
        "compression.type": job.get("compression", "none"),
        "message.timeout.ms": deadline.remaining_ms(),
        "throttle_cb": throttle,
    }
    if job.get("idempotent") is not None:
        config["enable.idempotence"] = job["idempotent"]
    config.update(transactional_config(job))
    return config | (job.get("config") or {})


class ThrottleWatch:
    """librdkafka's throttle_cb: the largest throttle time a broker's answers asked for."""

    def __init__(self) -> None:
        self.max_ms = 0.0

    def __call__(self, event: ThrottleEvent) -> None:
        self.max_ms = max(self.max_ms, event.throttle_time * 1000)


def send(producer: Producer, job: Job, index: int, delivered: dict[int, Message]) -> None:
    """Hand the job's record `index` to the producer; its delivery report goes to `delivered`."""
    record = job["records"][index]
    headers: list[tuple[str, str | bytes | None]] = [*headers_in(record)]
    optional = {k: record[k] for k in ("partition", "timestamp") if record.get(k) is not None}
    producer.produce(
        job["topic"],
        key=unb64(record.get("key")),
        value=unb64(record.get("value")),
        headers=headers,
        on_delivery=lambda _error, message: delivered.__setitem__(index, message),
        **optional,
    )


def acknowledged(
    producer: Producer, job: Job, deadline: Deadline, delivered: dict[int, Message]
) -> list[dict[str, Any]]:
    """Flush, then each record's acknowledgement in job order (the first failure raises)."""
    producer.flush(deadline.remaining_ms() / 1000)
    if len(delivered) < len(job["records"]):
        raise TimeoutError(f"{len(delivered)} of {len(job['records'])} records acknowledged")
    results = []
    for index in range(len(job["records"])):
        message = delivered[index]
        error = message.error()
        if error is not None:
            raise DeliveryFailed(error)
        timestamp = message.timestamp()[1]
        results.append(
            {"partition": message.partition(), "offset": message.offset(), "timestamp": timestamp}
        )
    return results


def produce(job: Job) -> Result:
    deadline = Deadline(job)
    throttle = ThrottleWatch()
    producer = Producer(producer_config(job, deadline, throttle))
    delivered: dict[int, Message] = {}
    if job.get("transactional_id") is not None:
        producer.init_transactions(deadline.remaining_ms() / 1000)
        producer.begin_transaction()
    for index in range(len(job["records"])):
        send(producer, job, index, delivered)
    results = acknowledged(producer, job, deadline, delivered)
    ending = end_transaction(producer, job, deadline)
    return {"ok": True, "results": results, "throttle_time_ms_max": throttle.max_ms, **ending}


# --- transactions ---


def transactional_config(job: Job) -> dict[str, Any]:
    if job.get("transactional_id") is None:
        return {}
    config: dict[str, Any] = {"transactional.id": job["transactional_id"]}
    if job.get("transaction_timeout_ms") is not None:
        config["transaction.timeout.ms"] = job["transaction_timeout_ms"]
    return config


def end_transaction(producer: Producer, job: Job, deadline: Deadline) -> dict[str, Any]:
    """Commit, abort or (`open`) leave the job's transaction as a crash would: the result
    then asks jobio to exit at once."""
    if job.get("transactional_id") is None:
        return {}
    ending = job.get("transaction", "commit")
    if ending == "commit":
        producer.commit_transaction(deadline.remaining_ms() / 1000)
    elif ending == "abort":
        producer.abort_transaction(deadline.remaining_ms() / 1000)
    elif ending == "open":
        return {"crash": True}
    else:
        raise ValueError(f"unknown transaction ending {ending!r}")
    return {}


def transform(job: Job) -> Result:
    """Consume-transform-produce, exactly once (README.md, `transform`)."""
    deadline = Deadline(job)
    consumer_config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "group.id": job["group"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    if job.get("group_protocol", "classic") == "consumer":
        consumer_config["group.protocol"] = "consumer"  # the broker's session timeout
    else:
        consumer_config["session.timeout.ms"] = 6000
    if job.get("instance_id") is not None:
        consumer_config["group.instance.id"] = job["instance_id"]
    consumer = Consumer(consumer_config)
    producer = Producer({"bootstrap.servers": job["bootstrap"], **transactional_config(job)})
    producer.init_transactions(deadline.remaining_ms() / 1000)
    consumer.subscribe([job["input"]])
    processed = committed = 0
    crash_after = job.get("crash_after")
    while committed < job["count"] and not deadline.expired():
        batch = consumer.consume(
            min(job.get("batch", 10), job["count"] - committed),
            timeout=min(deadline.remaining_ms(), 500) / 1000,
        )
        if not batch:
            continue
        producer.begin_transaction()
        for message in batch:
            if message.error() is not None:
                raise KafkaException(message.error())
            producer.produce(
                job["output"],
                key=message.key(),
                value=message.value(),
                partition=message.partition(),
                headers=[("source", f"{message.partition()}:{message.offset()}")],
            )
            processed += 1
            if processed == crash_after:
                producer.flush(deadline.remaining_ms() / 1000)
                return {
                    "ok": True,
                    "processed": processed,
                    "committed": committed,
                    "crashed": True,
                    "crash": True,
                }
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(
            positions, consumer.consumer_group_metadata(), deadline.remaining_ms() / 1000
        )
        producer.commit_transaction(deadline.remaining_ms() / 1000)
        committed += len(batch)
    consumer.close()
    return {"ok": True, "processed": processed, "committed": committed, "crashed": False}


def start_offset(start: Any) -> int:
    if start == "earliest":
        return OFFSET_BEGINNING
    if start == "latest":
        return OFFSET_END
    return int(start)


def assign_partitions(consumer: Consumer, job: Job, deadline: Deadline) -> None:
    wanted = job.get("partitions")
    if not wanted:
        metadata = consumer.list_topics(job["topic"], timeout=deadline.remaining_ms() / 1000)
        topic = metadata.topics[job["topic"]]
        if topic.error is not None:
            raise KafkaException(topic.error)
        wanted = sorted(topic.partitions)
    offset = start_offset(job.get("from", "earliest"))
    consumer.assign([TopicPartition(job["topic"], p, offset) for p in wanted])


def record_out(message: Message) -> dict[str, Any]:
    timestamp_type, timestamp = message.timestamp()
    return {
        "partition": message.partition(),
        "offset": message.offset(),
        "key": b64(message.key()),
        "value": b64(message.value()),
        "headers": headers_out(message.headers()),
        "timestamp": timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(timestamp_type),
    }


def consume(job: Job) -> Result:
    deadline = Deadline(job)
    group = job.get("group")
    config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "enable.auto.commit": False,
        "auto.offset.reset": "latest" if job.get("from") == "latest" else "earliest",
        "isolation.level": job.get("isolation", "read_uncommitted"),
        # librdkafka insists on a group id even for assign(); without subscribe() it never joins.
        "group.id": group or "minibroker-clients-assign",
    }
    config.update(job.get("config") or {})
    consumer = Consumer(config)
    records: list[dict[str, Any]] = []
    try:
        if group is None:
            assign_partitions(consumer, job, deadline)
        else:
            consumer.subscribe([job["topic"]])
        while len(records) < job["count"] and not deadline.expired():
            batch = consumer.consume(
                job["count"] - len(records), timeout=min(deadline.remaining_ms(), 500) / 1000
            )
            for message in batch:
                if message.error() is not None:
                    raise KafkaException(message.error())
                records.append(record_out(message))
        if group is not None and records:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return {"ok": True, "records": records, "timed_out": len(records) < job["count"]}


# --- admin ---


def admin_for(job: Job) -> AdminClient:
    config = {"bootstrap.servers": job["bootstrap"], "allow.auto.create.topics": False}
    return AdminClient({**config, **(job.get("config") or {})})


def request_timeout(job: Job) -> float:
    return float(job.get("timeout_ms", jobio.DEFAULT_TIMEOUT_MS)) / 1000


def outcome(item: dict[str, Any], future: Any) -> Any:
    """Fill the item's error fields from its future; return the future's value or None."""
    try:
        value = future.result()
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        item.update(error=error.str(), error_name=error.name())
        return None
    item.update(error=None, error_name=None)
    return value


def metadata(job: Job) -> Result:
    names = job.get("topics")
    admin = admin_for(job)
    cluster = admin.list_topics(timeout=request_timeout(job))
    if names:  # asking for named topics, one at a time, shows their errors
        topics = [
            admin.list_topics(name, timeout=request_timeout(job)).topics[name] for name in names
        ]
    else:
        topics = list(cluster.topics.values())
    return {
        "ok": True,
        "cluster_id": cluster.cluster_id,
        "controller": cluster.controller_id,
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in cluster.brokers.values()],
        "topics": [
            {
                "name": t.topic,
                "error": None if t.error is None else t.error.str(),
                "error_name": None if t.error is None else t.error.name(),
                "partitions": [
                    {"partition": p.id, "leader": p.leader} for p in t.partitions.values()
                ],
            }
            for t in topics
        ],
    }


def named_items(names: list[str], futures: dict[str, Any]) -> list[dict[str, Any]]:
    items = []
    for name in names:
        item: dict[str, Any] = {"name": name}
        outcome(item, futures[name])
        items.append(item)
    return items


def create_topics(job: Job) -> Result:
    new_topics = [
        NewTopic(
            spec["name"],
            num_partitions=spec.get("partitions") or -1,
            replication_factor=spec.get("replication_factor") or -1,
            config=spec.get("configs") or {},
        )
        for spec in job["topics"]
    ]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.create_topics(new_topics, request_timeout=request_timeout(job))
    return {"ok": True, "topics": named_items([t.topic for t in new_topics], futures)}


def delete_topics(job: Job) -> Result:
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.delete_topics(job["topics"], request_timeout=request_timeout(job))
    return {"ok": True, "topics": named_items(job["topics"], futures)}


def create_partitions(job: Job) -> Result:
    new = [NewPartitions(spec["name"], spec["count"]) for spec in job["topics"]]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.create_partitions(new, request_timeout=request_timeout(job))
    return {"ok": True, "topics": named_items([spec["name"] for spec in job["topics"]], futures)}


RESOURCE_TYPES = {
    "topic": ResourceType.TOPIC,
    "broker": ResourceType.BROKER,
    "group": ResourceType.GROUP,  # librdkafka sends Kafka's GROUP config resource (32)
}


def describe_configs(job: Job) -> Result:
    resources = [ConfigResource(RESOURCE_TYPES[r["type"]], r["name"]) for r in job["resources"]]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.describe_configs(resources, request_timeout=request_timeout(job))
    items = []
    for spec, resource in zip(job["resources"], resources, strict=True):
        item: dict[str, Any] = {"type": spec["type"], "name": spec["name"]}
        entries = outcome(item, futures[resource]) or {}
        item["configs"] = {
            name: {
                "value": entry.value,
                "source": ConfigSource(entry.source).name,
                "read_only": entry.is_read_only,
                "sensitive": entry.is_sensitive,
            }
            for name, entry in entries.items()
        }
        items.append(item)
    return {"ok": True, "resources": items}


def alter_configs(job: Job) -> Result:
    resources = []
    for spec in job["resources"]:
        changes = [
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in (spec.get("set") or {}).items()
        ] + [
            ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
            for name in spec.get("delete") or []
        ]
        resources.append(
            ConfigResource(RESOURCE_TYPES[spec["type"]], spec["name"], incremental_configs=changes)
        )
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.incremental_alter_configs(resources, request_timeout=request_timeout(job))
    items = []
    for spec, resource in zip(job["resources"], resources, strict=True):
        item: dict[str, Any] = {"type": spec["type"], "name": spec["name"]}
        outcome(item, futures[resource])
        items.append(item)
    return {"ok": True, "resources": items}


NAMED_OFFSET_SPECS: dict[str, Callable[[], Any]] = {
    "earliest": OffsetSpec.earliest,
    "latest": OffsetSpec.latest,
    "max_timestamp": OffsetSpec.max_timestamp,
}
OFFSET_FOR_TIMESTAMP: Callable[[int], Any] = OffsetSpec.for_timestamp


def offset_spec(spec: Any) -> Any:
    return NAMED_OFFSET_SPECS[spec]() if isinstance(spec, str) else OFFSET_FOR_TIMESTAMP(int(spec))


def job_partitions(admin: AdminClient, job: Job) -> list[int]:
    if job.get("partitions"):
        return list(job["partitions"])
    topic = admin.list_topics(job["topic"], timeout=request_timeout(job)).topics[job["topic"]]
    if topic.error is not None:
        raise KafkaException(topic.error)
    return sorted(topic.partitions)


def list_offsets(job: Job) -> Result:
    admin = admin_for(job)
    isolation = IsolationLevel[job.get("isolation", "read_uncommitted").upper()]
    partitions = [TopicPartition(job["topic"], p) for p in job_partitions(admin, job)]
    futures = admin.list_offsets(
        {tp: offset_spec(job["spec"]) for tp in partitions},
        isolation_level=isolation,
        request_timeout=request_timeout(job),
    )
    offsets = []
    for tp in partitions:
        item: dict[str, Any] = {"partition": tp.partition}
        info = outcome(item, futures[tp])
        item["offset"] = -1 if info is None else info.offset
        item["timestamp"] = -1 if info is None else info.timestamp
        offsets.append(item)
    return {"ok": True, "offsets": offsets}


def delete_records(job: Job) -> Result:
    partitions = [
        TopicPartition(job["topic"], int(p), int(offset)) for p, offset in job["offsets"].items()
    ]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.delete_records(partitions, request_timeout=request_timeout(job))
    items = []
    for tp in partitions:
        item: dict[str, Any] = {"partition": tp.partition}
        deleted = outcome(item, futures[tp])
        item["low_watermark"] = -1 if deleted is None else deleted.low_watermark
        items.append(item)
    return {"ok": True, "partitions": items}


def fence(job: Job) -> Result:
    """Two producers with one transactional id: the newer one commits, the older is fenced."""
    deadline = Deadline(job)
    config = {"bootstrap.servers": job["bootstrap"], **transactional_config(job)}
    older, newer = Producer(config), Producer(config)
    older.init_transactions(deadline.remaining_ms() / 1000)
    older.begin_transaction()
    older.produce(job["topic"], value=b"older", partition=0)
    older.flush(deadline.remaining_ms() / 1000)
    newer.init_transactions(deadline.remaining_ms() / 1000)
    newer.begin_transaction()
    newer.produce(job["topic"], value=b"newer", partition=0)
    newer.commit_transaction(deadline.remaining_ms() / 1000)
    try:
        older.commit_transaction(deadline.remaining_ms() / 1000)
    except KafkaException as exc:
        return {"ok": True, "older_error": str(exc), "older_error_name": error_name(exc)}
    return {"ok": True, "older_error": None, "older_error_name": None}


# --- produce_paced: one record at a time, for a broker restart while a producer sends ---


def produce_paced(job: Job) -> Result:
    deadline = Deadline(job)
    throttle = ThrottleWatch()
    producer = Producer(producer_config(job, deadline, throttle))
    delivered: dict[int, Message] = {}
    for index in range(len(job["records"])):
        send(producer, job, index, delivered)
        producer.poll(0)
        time.sleep(job.get("interval_ms", 50) / 1000)
    results = acknowledged(producer, job, deadline, delivered)
    return {"ok": True, "results": results, "throttle_time_ms_max": throttle.max_ms}


# --- group_member: a long-running group consumer (README.md) ---


# A rebalance refused the commit: the record is not reported, and is read again (here, if
# the partition stays assigned; else by its new owner, from the committed offset).
COMMIT_REFUSED_BY_REBALANCE = {
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.STALE_MEMBER_EPOCH,  # the consumer protocol's (KIP-848) refusals
    KafkaError.FENCED_MEMBER_EPOCH,
}


def rewind(consumer: Consumer, message: Message) -> None:
    with contextlib.suppress(KafkaException):  # raised if no longer assigned
        consumer.seek(TopicPartition(message.topic(), message.partition(), message.offset()))


def group_protocol_config(job: Job) -> dict[str, Any]:
    """The classic protocol (default): the job's session timeout, heartbeat interval and
    client-side assignor. KIP-848's `consumer` protocol: the broker's session timeout,
    heartbeat interval and assignor (librdkafka refuses the classic settings with it);
    `remote_assignor` picks a server-side assignor by name."""
    if job.get("group_protocol", "classic") == "consumer":
        config: dict[str, Any] = {"group.protocol": "consumer"}
        if job.get("remote_assignor") is not None:
            config["group.remote.assignor"] = job["remote_assignor"]
        return config
    session_ms = job.get("session_timeout_ms", 10_000)
    return {
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(session_ms // 5, 10),
        "partition.assignment.strategy": job.get("assignor", "range"),
    }


def assigned_event(owned: set[tuple[str, int]], with_topics: bool) -> None:
    """An `assigned` event; `with_topics` (a pattern subscription) also names the topics."""
    extra = {"topic_partitions": sorted([t, p] for t, p in owned)} if with_topics else {}
    jobio.assigned({p for _, p in owned}, **extra)


def group_member(job: Job) -> Result:
    config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "group.id": job["group"],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        **group_protocol_config(job),
        "topic.metadata.refresh.interval.ms": 500,
    }
    if job.get("instance_id"):
        config["group.instance.id"] = job["instance_id"]
    config.update(job.get("config") or {})
    # librdkafka reads a subscribed name that starts with "^" as a regular expression.
    pattern = job.get("pattern")
    with_topics = pattern is not None
    owned: set[tuple[str, int]] = set()

    def on_assign(consumer: Any, partitions: list[TopicPartition]) -> None:
        owned.update((p.topic, p.partition) for p in partitions)
        assigned_event(owned, with_topics)

    def on_revoke(consumer: Any, partitions: list[TopicPartition]) -> None:
        owned.difference_update((p.topic, p.partition) for p in partitions)
        assigned_event(owned, with_topics)

    stop = jobio.StopOnSigterm()
    consumer = Consumer(config)
    try:
        consumer.subscribe(
            [pattern if with_topics else job["topic"]],
            on_assign=on_assign,
            on_revoke=on_revoke,
            on_lost=on_revoke,
        )
        while not stop.requested:
            message = consumer.poll(0.05)
            if message is None or message.error():
                continue
            try:
                consumer.commit(message=message, asynchronous=False)
            except KafkaException as exc:
                if exc.args[0].code() not in COMMIT_REFUSED_BY_REBALANCE:
                    raise
                rewind(consumer, message)
                continue
            topic = {"topic": message.topic()} if with_topics else {}
            jobio.consumed(message.partition(), message.offset(), message.value(), **topic)
    finally:
        consumer.close()
    return {"ok": True}


# --- group admin (confluent-kafka has no DeleteConsumerGroupOffsets) ---

# Kafka's names for the group states librdkafka enumerates.
GROUP_STATES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}


# Kafka's names for the group types (ListGroups' GroupType, Java's GroupType.toString()).
GROUP_TYPES = {
    ConsumerGroupType.UNKNOWN: None,
    ConsumerGroupType.CONSUMER: "consumer",
    ConsumerGroupType.CLASSIC: "classic",
}


def list_groups(job: Job) -> Result:
    admin = admin_for(job)  # alive until its future resolves
    groups = admin.list_consumer_groups(request_timeout=request_timeout(job)).result()
    if groups.errors:
        raise KafkaException(groups.errors[0])
    return {
        "ok": True,
        "groups": [
            {"group": g.group_id, "state": GROUP_STATES[g.state], "type": GROUP_TYPES[g.type]}
            for g in groups.valid
        ],
    }


def describe_groups(job: Job) -> Result:
    admin = admin_for(job)
    futures = admin.describe_consumer_groups(job["groups"], request_timeout=request_timeout(job))
    items = []
    for name in job["groups"]:
        item: dict[str, Any] = {"group": name, "members": []}
        described = outcome(item, futures[name])
        if described is not None:
            item["state"] = GROUP_STATES[described.state]
            item["protocol"] = described.partition_assignor
            item["type"] = GROUP_TYPES[described.type]
            item["members"] = [
                {
                    "member_id": m.member_id,
                    "client_id": m.client_id,
                    "instance_id": m.group_instance_id,
                    "partitions": [[p.topic, p.partition] for p in m.assignment.topic_partitions],
                }
                for m in described.members
            ]
        items.append(item)
    return {"ok": True, "groups": items}


def delete_groups(job: Job) -> Result:
    admin = admin_for(job)
    futures = admin.delete_consumer_groups(job["groups"], request_timeout=request_timeout(job))
    items = []
    for name in job["groups"]:
        item = {"group": name}
        outcome(item, futures[name])
        items.append(item)
    return {"ok": True, "groups": items}


def list_group_offsets(job: Job) -> Result:
    admin = admin_for(job)
    request = [ConsumerGroupTopicPartitions(job["group"])]
    futures = admin.list_consumer_group_offsets(request, request_timeout=request_timeout(job))
    listed = futures[job["group"]].result()
    items = [
        {"topic": p.topic, "partition": p.partition, "offset": p.offset, "metadata": p.metadata}
        for p in listed.topic_partitions
    ]
    return {"ok": True, "offsets": items}


def partition_error_fields(partition: TopicPartition) -> dict[str, str | None]:
    if partition.error is None:
        return {"error": None, "error_name": None}
    return {"error": partition.error.str(), "error_name": partition.error.name()}


def alter_group_offsets(job: Job) -> Result:
    admin = admin_for(job)
    partitions = [
        TopicPartition(o["topic"], o["partition"], o["offset"], o.get("metadata", ""))
        for o in job["offsets"]
    ]
    request = [ConsumerGroupTopicPartitions(job["group"], partitions)]
    futures = admin.alter_consumer_group_offsets(request, request_timeout=request_timeout(job))
    item: dict[str, Any] = {}
    altered = outcome(item, futures[job["group"]])
    if altered is None:  # a group-level error: it is every partition's
        return {
            "ok": True,
            "offsets": [{"topic": p.topic, "partition": p.partition, **item} for p in partitions],
        }
    return {
        "ok": True,
        "offsets": [
            {"topic": p.topic, "partition": p.partition, **partition_error_fields(p)}
            for p in altered.topic_partitions
        ],
    }


# --- ACLs (README.md); librdkafka calls Kafka's CLUSTER resource type BROKER (same code) ---


def acl_binding(spec: dict[str, Any], kind: type = AclBinding) -> Any:
    defaults = jobio.ACL_BINDING_DEFAULTS if kind is AclBinding else jobio.ACL_FILTER_DEFAULTS
    fields = jobio.acl_codes(spec, defaults)
    return kind(
        ResourceType(fields["resource_type"]),
        fields["resource_name"],
        ResourcePatternType(fields["pattern_type"]),
        fields["principal"],
        fields["host"],
        AclOperation(fields["operation"]),
        AclPermissionType(fields["permission_type"]),
    )


def binding_out(binding: Any) -> dict[str, Any]:
    return jobio.acl_names(
        binding.restype.value,
        binding.name,
        binding.resource_pattern_type.value,
        binding.principal,
        binding.host,
        binding.operation.value,
        binding.permission_type.value,
    )


def create_acls(job: Job) -> Result:
    bindings = [acl_binding(spec) for spec in job["acls"]]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.create_acls(bindings, request_timeout=request_timeout(job))
    items = []
    for binding in bindings:
        item = binding_out(binding)
        outcome(item, futures[binding])
        items.append(item)
    return {"ok": True, "acls": items}


def describe_acls(job: Job) -> Result:
    acl_filter = acl_binding(job.get("filter") or {}, AclBindingFilter)
    admin = admin_for(job)  # alive until its future resolves
    result: Result = {"ok": True}
    found = outcome(result, admin.describe_acls(acl_filter, request_timeout=request_timeout(job)))
    return result | {"acls": [binding_out(binding) for binding in found or []]}


def delete_acls(job: Job) -> Result:
    """librdkafka gives the bindings each filter deleted, without per-binding errors."""
    filters = [acl_binding(spec, AclBindingFilter) for spec in job["filters"]]
    admin = admin_for(job)  # alive until its futures resolve
    futures = admin.delete_acls(filters, request_timeout=request_timeout(job))
    items = []
    for acl_filter in filters:
        item: dict[str, Any] = {}
        deleted = outcome(item, futures[acl_filter]) or []
        item["acls"] = [binding_out(b) | {"error": None, "error_name": None} for b in deleted]
        items.append(item)
    return {"ok": True, "filters": items}


# --- share groups (KIP-932) ---

SHARE_ACKS = {
    "ACCEPT": AcknowledgeType.ACCEPT,
    "RELEASE": AcknowledgeType.RELEASE,
    "REJECT": AcknowledgeType.REJECT,
}


def share_consume(job: Job) -> Result:
    """A ShareConsumer reads until it has accepted `count` records, the deadline passes or
    (`idle_ms`) no record came for that long (README.md, `share_consume`): explicit mode
    acknowledges each record with the type `acks` names for its value and commits after each
    poll; `polls` stops after that many polls that returned records; `hold` stops at the
    first records without acknowledging (the test then kills it);
    implicit mode accepts what each poll returned."""
    deadline = Deadline(job)
    explicit = job.get("mode", "explicit") == "explicit"
    config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "group.id": job["group"],
        "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        **(job.get("config") or {}),
    }
    count = job.get("count", 1 << 31)
    idle_s = job.get("idle_ms", 0) / 1000
    records: list[dict[str, Any]] = []
    accepted = polls_with_records = 0
    last_record = time.monotonic()
    with ShareConsumer(config) as consumer:
        consumer.subscribe([job["topic"]])
        while accepted < count and not deadline.expired():
            if idle_s and time.monotonic() - last_record > idle_s:
                break
            batch = consumer.poll(min(deadline.remaining_ms(), 500) / 1000)
            for message in batch:
                last_record = time.monotonic()
                if message.error() is not None:
                    raise KafkaException(message.error())
                value = message.value()
                kind = job.get("acks", {}).get(value.decode() if value else "", "ACCEPT")
                if explicit and not job.get("hold"):
                    consumer.acknowledge(message, SHARE_ACKS[kind])
                accepted += kind == "ACCEPT"
                records.append(
                    {
                        "partition": message.partition(),
                        "offset": message.offset(),
                        "value": b64(value),
                        "delivery_count": message.delivery_count(),
                        "ack": kind,
                    }
                )
            if len(batch) and job.get("hold"):
                jobio.event("holding")
                time.sleep(3600)  # killed by the test while holding its records
            if len(batch) and explicit:
                consumer.commit_sync()
            polls_with_records += bool(len(batch))
            if len(batch) and polls_with_records == job.get("polls"):
                break
        if not explicit:
            consumer.commit_sync()
    return {"ok": True, "records": records, "timed_out": accepted < count}


OPS = {
    "produce": produce,
    "produce_paced": produce_paced,
    "consume": consume,
    "group_member": group_member,
    "metadata": metadata,
    "create_topics": create_topics,
    "delete_topics": delete_topics,
    "create_partitions": create_partitions,
    "describe_configs": describe_configs,
    "alter_configs": alter_configs,
    "list_offsets": list_offsets,
    "delete_records": delete_records,
    "transform": transform,
    "fence": fence,
    "list_groups": list_groups,
    "describe_groups": describe_groups,
    "delete_groups": delete_groups,
    "list_group_offsets": list_group_offsets,
    "alter_group_offsets": alter_group_offsets,
    "share_consume": share_consume,
    "create_acls": create_acls,
    "describe_acls": describe_acls,
    "delete_acls": delete_acls,
}

if __name__ == "__main__":
    jobio.serve(OPS, error_name)
