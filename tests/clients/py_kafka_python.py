"""kafka-python job program (3.x in the project venv, 2.x in its own venv).

Usage: python py_kafka_python.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import jobio
import kafka
from jobio import Deadline, Job, Result, b64, headers_in, headers_out, unb64
from kafka import KafkaConsumer, KafkaProducer, TopicPartition, errors
from kafka.errors import KafkaError

# kafka-python 2's KafkaAdminClient takes NewTopic/NewPartitions objects, raises on per-topic
# errors, returns protocol responses, only has the legacy AlterConfigs and no ListOffsets.
KAFKA_PYTHON_2 = kafka.__version__.startswith("2.")

ACKS: dict[str, Any] = {"all": "all", "1": 1, "0": 0}
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def error_name(exc: BaseException) -> str | None:
    if isinstance(exc, KafkaError) and getattr(exc, "errno", None) is not None:
        return str(exc.message)
    return None


def extra_config(job: Job) -> dict[str, Any]:
    """The job's client properties; JSON lists become the tuples kafka-python expects."""
    config = job.get("config") or {}
    return {k: tuple(v) if isinstance(v, list) else v for k, v in config.items()}


def producer_config(job: Job) -> dict[str, Any]:
    """A produce job's producer settings, `config` last (it may override them)."""
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "acks": ACKS[job.get("acks", "all")],
        "compression_type": None
        if job.get("compression", "none") == "none"
        else job["compression"],
    }
    if job.get("idempotent") is not None:
        config["enable_idempotence"] = job["idempotent"]
    config.update(transactional_config(job))
    return config | extra_config(job)


def send(producer: Any, job: Job, record: dict[str, Any]) -> Any:
    return producer.send(
        job["topic"],
        key=unb64(record.get("key")),
        value=unb64(record.get("value")),
        headers=headers_in(record),
        partition=record.get("partition"),
        timestamp_ms=record.get("timestamp"),
    )


def acknowledged(producer: Any, futures: list[Any], deadline: Deadline) -> Result:
    """Flush; the produce result: each record's acknowledgement and the throttle time."""
    producer.flush(timeout=deadline.remaining_ms() / 1000)
    sent = [future.get(timeout=deadline.remaining_ms() / 1000) for future in futures]
    results = [
        {"partition": m.partition, "offset": m.offset, "timestamp": m.timestamp} for m in sent
    ]
    return {"ok": True, "results": results, "throttle_time_ms_max": throttle_time_ms_max(producer)}


def throttle_time_ms_max(producer: Any) -> float | None:
    """The producer-metrics `throttle-time-max` (the largest throttle_time_ms the broker's
    answers carried in the metrics window; -inf before any answer), None without metrics."""
    found = (producer.metrics() or {}).get("producer-metrics", {}).get("throttle-time-max")
    if found is None:
        return None
    return max(float(found), 0.0)


def produce(job: Job) -> Result:
    deadline = Deadline(job)
    producer = KafkaProducer(**producer_config(job))
    crash = False
    try:
        if job.get("transactional_id") is not None:
            producer.init_transactions()
            producer.begin_transaction()
        futures = [send(producer, job, record) for record in job["records"]]
        result = acknowledged(producer, futures, deadline)
        crash = end_transaction(producer, job)
    finally:
        if not crash:  # a closing producer would abort the transaction left open
            producer.close(timeout=5)
    return result | {"crash": crash}


# --- transactions ---


def transactional_config(job: Job) -> dict[str, Any]:
    if job.get("transactional_id") is None:
        return {}
    config: dict[str, Any] = {"transactional_id": job["transactional_id"]}
    if job.get("transaction_timeout_ms") is not None:
        config["transaction_timeout_ms"] = job["transaction_timeout_ms"]
    return config


def end_transaction(producer: Any, job: Job) -> bool:
    """Commit or abort the job's transaction; True for `open` (then exit as a crash)."""
    if job.get("transactional_id") is None:
        return False
    ending = job.get("transaction", "commit")
    if ending == "commit":
        producer.commit_transaction()
    elif ending == "abort":
        producer.abort_transaction()
    elif ending != "open":
        raise ValueError(f"unknown transaction ending {ending!r}")
    return ending == "open"


def start_position(consumer: Any, partitions: list[TopicPartition], start: Any) -> None:
    if start == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif start == "latest":
        consumer.seek_to_end(*partitions)
    else:
        for partition in partitions:
            consumer.seek(partition, int(start))


def assign_partitions(consumer: Any, job: Job, deadline: Deadline) -> None:
    found = topic_partitions(consumer, job["topic"], deadline)
    partitions = [TopicPartition(job["topic"], p) for p in sorted(job.get("partitions") or found)]
    consumer.assign(partitions)
    start_position(consumer, partitions, job.get("from", "earliest"))


def record_out(message: Any) -> dict[str, Any]:
    return {
        "partition": message.partition,
        "offset": message.offset,
        "key": b64(message.key),
        "value": b64(message.value),
        "headers": headers_out(message.headers),
        "timestamp": message.timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(message.timestamp_type),
    }


def consume(job: Job) -> Result:
    deadline = Deadline(job)
    group = job.get("group")
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "group_id": group,
        "auto_offset_reset": "latest" if job.get("from") == "latest" else "earliest",
        "enable_auto_commit": False,
        "isolation_level": job.get("isolation", "read_uncommitted"),
    }
    config.update(extra_config(job))
    consumer = KafkaConsumer(**config)
    records: list[dict[str, Any]] = []
    try:
        if group is None:
            assign_partitions(consumer, job, deadline)
        else:
            consumer.subscribe([job["topic"]])
        while len(records) < job["count"] and not deadline.expired():
            polled = consumer.poll(
                timeout_ms=min(deadline.remaining_ms(), 500),
                max_records=job["count"] - len(records),
            )
            for messages in polled.values():
                records.extend(record_out(m) for m in messages)
        if group is not None and records:
            consumer.commit()
    finally:
        consumer.close(autocommit=False)
    return {"ok": True, "records": records, "timed_out": len(records) < job["count"]}


# --- group_member: a long-running group consumer (README.md) ---

# A rebalance refused the commit: the rest of the batch is not reported, and is read again
# (here, if the partition stays assigned; else by its new owner, from the committed offset).
COMMIT_REFUSED_BY_REBALANCE = (
    errors.CommitFailedError,
    errors.RebalanceInProgressError,
    errors.IllegalGenerationError,
    errors.UnknownMemberIdError,
)


def rewind(consumer: Any, positions: dict[TopicPartition, int]) -> None:
    assigned = consumer.assignment()
    for tp, offset in positions.items():
        if tp in assigned:
            consumer.seek(tp, offset)


def wait_for_partitions(consumer: Any, topic: str) -> None:
    """Know the topic's partitions before joining. kafka-python 3.0.12 loses a rejoin that the
    first metadata for a subscribed topic triggers when its SyncGroup answer arrives after a
    poll() has returned: the join task is never collected, the member stops heartbeating and
    never gets its assignment (seen under load; the broker answered every request). Joining
    with the topic's metadata already known avoids that rejoin."""
    deadline = time.monotonic() + 30
    while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
        time.sleep(0.05)


# Long enough that a join usually completes within the poll that started it: kafka-python
# 3.0.12 does not collect a join that completes after its poll() returned (the next poll sends
# a new JoinGroup instead), which under load left a member out of the group in a CI run. A poll
# returns as soon as records arrive, so this only delays noticing a stop request.
GROUP_POLL_MS = 1000


def group_member(job: Job) -> Result:
    from kafka import OffsetAndMetadata
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    session_ms = job.get("session_timeout_ms", 10_000)
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "group_id": job["group"],
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": session_ms,
        "heartbeat_interval_ms": max(session_ms // 5, 10),
        "partition_assignment_strategy": [assignors[job.get("assignor", "range")]],
        "metadata_max_age_ms": 500,
    }
    if job.get("instance_id"):
        config["group_instance_id"] = job["instance_id"]
    config.update(extra_config(job))
    stop = jobio.StopOnSigterm()
    consumer = KafkaConsumer(**config)
    try:
        assigned: set[int] = set()
        wait_for_partitions(consumer, job["topic"])
        consumer.subscribe([job["topic"]])
        while not stop.requested:
            batches = consumer.poll(timeout_ms=GROUP_POLL_MS)
            now_assigned = {tp.partition for tp in consumer.assignment()}
            if now_assigned != assigned:
                assigned = now_assigned
                jobio.assigned(assigned)
            unreported = {tp: messages[0].offset for tp, messages in batches.items()}
            try:
                for tp, messages in batches.items():
                    for message in messages:
                        consumer.commit({tp: OffsetAndMetadata(message.offset + 1, "", -1)})
                        jobio.consumed(tp.partition, message.offset, message.value)
                        unreported[tp] = message.offset + 1
            except COMMIT_REFUSED_BY_REBALANCE:
                rewind(consumer, unreported)
    finally:
        consumer.close(autocommit=False)
    return {"ok": True}


# --- admin (KafkaAdminClient; where 2.x's calls differ from 3.x's, the 2.x branch is named) ---


def admin_for(job: Job) -> Any:
    from kafka.admin import KafkaAdminClient

    timeout_ms = min(job.get("timeout_ms", jobio.DEFAULT_TIMEOUT_MS), 30_000)
    config = {"bootstrap_servers": job["bootstrap"], "request_timeout_ms": timeout_ms}
    return KafkaAdminClient(**{**config, **extra_config(job)})


def error_fields(code: int) -> dict[str, str | None]:
    from kafka.errors import for_code

    if code == 0:
        return {"error": None, "error_name": None}
    error_type = for_code(code)
    return {
        "error": f"{error_type.__name__}: {error_type.description}",
        "error_name": error_type.message,
    }


def exception_fields(exc: Exception) -> dict[str, str | None]:
    return {"error": f"{type(exc).__name__}: {exc}", "error_name": error_name(exc)}


def metadata(job: Job) -> Result:
    admin = admin_for(job)
    try:
        cluster = admin.describe_cluster()
        topics = admin.describe_topics(job.get("topics"))
    finally:
        admin.close()
    return {
        "ok": True,
        "cluster_id": cluster["cluster_id"],
        "controller": cluster["controller_id"],
        "brokers": [
            {"id": either(b, "broker_id", "node_id"), "host": b["host"], "port": b["port"]}
            for b in cluster["brokers"]
        ],
        "topics": [
            {
                "name": either(t, "name", "topic"),
                **error_fields(t["error_code"]),
                "partitions": [
                    {
                        "partition": either(p, "partition_index", "partition"),
                        "leader": either(p, "leader_id", "leader"),
                    }
                    for p in t["partitions"]
                ],
            }
            for t in topics
        ],
    }


def either(entry: dict[str, Any], name_3x: str, name_2x: str) -> Any:
    """A field of an admin answer: kafka-python 3 names it as Kafka's JSON schemas do, 2.x
    (Metadata-based describe_cluster/describe_topics) by its older protocol names."""
    return entry[name_3x] if name_3x in entry else entry[name_2x]


def answer_error_codes(response: Any) -> list[int]:
    """kafka-python 3's admin returns dicts for some calls and response objects for others
    (create_partitions); 2.x returns the protocol response, (topic, error_code, ...) tuples."""
    if isinstance(response, dict):
        return [answer["error_code"] for answer in response["topics"]]
    if hasattr(response, "results"):
        return [answer.error_code for answer in response.results]
    if hasattr(response, "topic_errors"):
        return [answer[1] for answer in response.topic_errors]
    return [answer[1] for answer in response.topic_error_codes]


def per_name(names: list[str], call: Any) -> list[dict[str, Any]]:
    """One admin call per name, so that each name gets its own error."""
    items = []
    for name in names:
        item: dict[str, Any] = {"name": name}
        try:
            response = call(name)
            (error_code,) = answer_error_codes(response)
            item.update(error_fields(error_code))
        except KafkaError as exc:
            item.update(exception_fields(exc))
        items.append(item)
    return items


def create_topics(job: Job) -> Result:
    specs = {spec["name"]: spec for spec in job["topics"]}
    admin = admin_for(job)

    def create(name: str) -> Any:
        spec = specs[name]
        if KAFKA_PYTHON_2:
            return admin.create_topics([new_topic_2x(spec)])
        options = {
            "num_partitions": spec.get("partitions") or -1,
            "replication_factor": spec.get("replication_factor") or -1,
            "configs": spec.get("configs") or {},
        }
        return admin.create_topics({name: options}, raise_errors=False)

    try:
        return {"ok": True, "topics": per_name(list(specs), create)}
    finally:
        admin.close()


def new_topic_2x(spec: dict[str, Any]) -> Any:
    from kafka.admin import NewTopic

    return NewTopic(
        spec["name"],
        spec.get("partitions") or -1,
        spec.get("replication_factor") or -1,
        topic_configs=spec.get("configs") or {},
    )


def delete_topics(job: Job) -> Result:
    admin = admin_for(job)

    def delete(name: str) -> Any:
        if KAFKA_PYTHON_2:
            return admin.delete_topics([name])
        return admin.delete_topics([name], raise_errors=False)

    try:
        items = per_name(job["topics"], delete)
    finally:
        admin.close()
    return {"ok": True, "topics": items}


def create_partitions(job: Job) -> Result:
    counts = {spec["name"]: spec["count"] for spec in job["topics"]}
    admin = admin_for(job)

    def grow(name: str) -> Any:
        if KAFKA_PYTHON_2:
            from kafka.admin import NewPartitions

            return admin.create_partitions({name: NewPartitions(counts[name])})
        return admin.create_partitions({name: counts[name]}, raise_errors=False)

    try:
        items = per_name(list(counts), grow)
    finally:
        admin.close()
    return {"ok": True, "topics": items}


def config_resource(spec: dict[str, Any], configs: Any = None) -> Any:
    from kafka.admin import ConfigResource, ConfigResourceType

    return ConfigResource(ConfigResourceType[spec["type"].upper()], spec["name"], configs)


def describe_configs(job: Job) -> Result:
    if KAFKA_PYTHON_2:
        return describe_configs_2x(job)
    admin = admin_for(job)
    items = []
    try:
        for spec in job["resources"]:
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"], "configs": {}}
            try:
                described = admin.describe_configs([config_resource(spec)], config_filter="all")
                entries = described.get(spec["type"], {}).get(spec["name"], {})
                item.update(error=None, error_name=None)
                item["configs"] = {
                    name: {
                        "value": entry["value"],
                        "source": entry["config_source"],
                        "read_only": entry["read_only"],
                        "sensitive": entry["is_sensitive"],
                    }
                    for name, entry in entries.items()
                }
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "resources": items}


def describe_configs_2x(job: Job) -> Result:
    """One DescribeConfigs per resource; its answer is the protocol response (v1+ entries
    carry config_source, v0's is_default)."""
    admin = admin_for(job)
    items = []
    try:
        for spec in job["resources"]:
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"], "configs": {}}
            try:
                (response,) = admin.describe_configs([config_resource(spec)])
                (answer,) = response.to_object()["resources"]
                item.update(error_fields(answer["error_code"]))
                item["configs"] = {
                    entry["config_names"]: {
                        "value": entry["config_value"],
                        "source": entry.get("config_source", -1),
                        "read_only": entry["read_only"],
                        "sensitive": entry["is_sensitive"],
                    }
                    for entry in answer["config_entries"]
                }
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "resources": items}


def alter_configs_2x(job: Job) -> Result:
    """kafka-python 2 sends the legacy AlterConfigs, which replaces the resource's dynamic
    configs with `set`; `delete` is refused."""
    admin = admin_for(job)
    items = []
    try:
        for spec in job["resources"]:
            if spec.get("delete"):
                raise ValueError("kafka-python 2's AlterConfigs cannot delete a single config")
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"]}
            try:
                response = admin.alter_configs([config_resource(spec, spec.get("set", {}))])
                (answer,) = response.resources
                item.update(error_fields(answer[0]))
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "resources": items}


def alter_configs(job: Job) -> Result:
    if KAFKA_PYTHON_2:
        return alter_configs_2x(job)
    from kafka.admin import AlterConfigOp

    admin = admin_for(job)
    items = []
    try:
        for spec in job["resources"]:
            changes: dict[str, Any] = {
                k: (AlterConfigOp.SET, v) for k, v in spec.get("set", {}).items()
            }
            changes.update({k: (AlterConfigOp.DELETE, None) for k in spec.get("delete", [])})
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"]}
            try:
                result = admin.alter_configs(
                    [config_resource(spec, changes)], raise_on_unknown=False, incremental=True
                )
                outcome = str(result.get(spec["type"], {}).get(spec["name"]))
                item.update(alter_outcome_fields(outcome))
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "resources": items}


def alter_outcome_fields(outcome: str) -> dict[str, str | None]:
    """alter_configs answers 'OK' or the text of an error instance ('ErrorClass: ...')."""
    import kafka.errors

    if outcome == "OK":
        return {"error": None, "error_name": None}
    error_type = getattr(kafka.errors, outcome.split(":", 1)[0], None)
    return {"error": outcome, "error_name": getattr(error_type, "message", None)}


def offset_spec(spec: Any) -> Any:
    from kafka.admin import OffsetSpec

    named = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}
    named["max_timestamp"] = OffsetSpec.MAX_TIMESTAMP
    return named[spec] if isinstance(spec, str) else int(spec)


def job_partitions(admin: Any, job: Job) -> list[int]:
    if job.get("partitions"):
        return list(job["partitions"])
    (topic,) = admin.describe_topics([job["topic"]])
    return sorted(p["partition_index"] for p in topic["partitions"])


def list_offsets_2x(job: Job) -> Result:
    """The consumer's beginning_offsets / end_offsets / offsets_for_times (2.x's admin has no
    ListOffsets); no max_timestamp, the isolation level is the consumer's."""
    deadline = Deadline(job)
    consumer = KafkaConsumer(
        bootstrap_servers=job["bootstrap"],
        isolation_level=job.get("isolation", "read_uncommitted"),
        **extra_config(job),
    )
    try:
        numbers = job.get("partitions") or topic_partitions(consumer, job["topic"], deadline)
        partitions = [TopicPartition(job["topic"], p) for p in numbers]
        spec = job["spec"]
        found: dict[Any, tuple[int, int]]
        if spec == "earliest":
            found = {tp: (o, -1) for tp, o in consumer.beginning_offsets(partitions).items()}
        elif spec == "latest":
            found = {tp: (o, -1) for tp, o in consumer.end_offsets(partitions).items()}
        else:
            by_time = consumer.offsets_for_times({tp: int(spec) for tp in partitions})
            found = {
                tp: (-1, -1) if answer is None else (answer.offset, answer.timestamp)
                for tp, answer in by_time.items()
            }
    finally:
        consumer.close(autocommit=False)
    offsets = [
        {"partition": tp.partition, "offset": found[tp][0], "timestamp": found[tp][1]}
        | {"error": None, "error_name": None}
        for tp in partitions
    ]
    return {"ok": True, "offsets": offsets}


def topic_partitions(consumer: Any, topic: str, deadline: Deadline) -> list[int]:
    found: set[int] = set()
    while not found and not deadline.expired():
        found = consumer.partitions_for_topic(topic) or set()
    if not found:
        raise TimeoutError(f"no metadata for topic {topic!r}")
    return sorted(found)


def list_offsets(job: Job) -> Result:
    if KAFKA_PYTHON_2:
        return list_offsets_2x(job)
    from kafka.protocol.consumer.offsets import IsolationLevel

    isolation = IsolationLevel[job.get("isolation", "read_uncommitted").upper()]
    admin = admin_for(job)
    offsets = []
    try:
        for partition in job_partitions(admin, job):
            item: dict[str, Any] = {"partition": partition, "offset": -1, "timestamp": -1}
            tp = TopicPartition(job["topic"], partition)
            try:
                found = admin.list_partition_offsets(
                    {tp: offset_spec(job["spec"])}, isolation_level=isolation
                )[tp]
                item.update(
                    offset=found.offset, timestamp=found.timestamp, error=None, error_name=None
                )
            except KafkaError as exc:
                item.update(exception_fields(exc))
            offsets.append(item)
    finally:
        admin.close()
    return {"ok": True, "offsets": offsets}


def delete_records(job: Job) -> Result:
    admin = admin_for(job)
    items = []
    try:
        for partition, offset in job["offsets"].items():
            item: dict[str, Any] = {"partition": int(partition), "low_watermark": -1}
            tp = TopicPartition(job["topic"], int(partition))
            try:
                deleted = admin.delete_records({tp: int(offset)})[tp]
                item.update(low_watermark=deleted["low_watermark"], error=None, error_name=None)
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "partitions": items}


# --- produce_paced: one record at a time, for a broker restart while a producer sends ---


def produce_paced(job: Job) -> Result:
    deadline = Deadline(job)
    producer = KafkaProducer(**producer_config(job))
    futures = []
    try:
        for record in job["records"]:
            futures.append(send(producer, job, record))
            time.sleep(job.get("interval_ms", 50) / 1000)
        return acknowledged(producer, futures, deadline)
    finally:
        producer.close(timeout=5)


# --- group admin ---


def error_class_fields(found: Any) -> dict[str, str | None]:
    """Error fields from a kafka-python error class or its class name ("OK": no error)."""
    from kafka import errors

    error_class = getattr(errors, found, errors.NoError) if isinstance(found, str) else found
    if error_class is errors.NoError:
        return {"error": None, "error_name": None}
    return {
        "error": f"{error_class.__name__}: {error_class.description}",
        "error_name": error_class.message,
    }


def described_error_fields(error: str | None) -> dict[str, str | None]:
    """describe_groups gives a group's error as the text of the error instance."""
    found = re.search(r"\b(\w+Error)\b", error or "")
    if error is None or found is None:
        return {"error": error, "error_name": None}
    return {"error": error, "error_name": error_class_fields(found[1])["error_name"]}


def list_groups(job: Job) -> Result:
    admin = admin_for(job)
    try:
        groups = admin.list_groups()
    finally:
        admin.close()
    return {
        "ok": True,
        "groups": [{"group": g["group_id"], "state": g["group_state"]} for g in groups],
    }


def assigned_partitions(assignment: Any) -> list[list[Any]]:
    """A described member's assignment: decoded to a dict or a ConsumerProtocolAssignment."""
    if not assignment:
        return []
    if isinstance(assignment, dict):
        pairs = [(a["topic"], a["partitions"]) for a in assignment["assigned_partitions"]]
    else:
        pairs = assignment.assigned_partitions
    return [[topic, p] for topic, partitions in pairs for p in partitions]


def describe_groups(job: Job) -> Result:
    admin = admin_for(job)
    try:
        described = admin.describe_groups(job["groups"])
    finally:
        admin.close()
    items = []
    for name in job["groups"]:
        group = described[name]
        item: dict[str, Any] = {
            "group": name,
            **described_error_fields(group["error"]),
            "members": [],
        }
        if not group["error"]:
            item["state"] = group["group_state"]
            item["protocol"] = group["protocol_data"]
            item["members"] = [
                {
                    "member_id": m["member_id"],
                    "client_id": m["client_id"],
                    "partitions": assigned_partitions(m["member_assignment"]),
                }
                for m in group["members"]
            ]
        items.append(item)
    return {"ok": True, "groups": items}


def delete_groups(job: Job) -> Result:
    admin = admin_for(job)
    try:
        deleted = admin.delete_groups(job["groups"])
    finally:
        admin.close()
    return {
        "ok": True,
        "groups": [{"group": name, **error_class_fields(deleted[name])} for name in job["groups"]],
    }


def list_group_offsets(job: Job) -> Result:
    admin = admin_for(job)
    try:
        offsets = admin.list_group_offsets({job["group"]: None})[job["group"]]
    finally:
        admin.close()
    items = [
        {"topic": tp.topic, "partition": tp.partition, "offset": o.offset, "metadata": o.metadata}
        for tp, o in offsets.items()
    ]
    return {"ok": True, "offsets": items}


def alter_group_offsets(job: Job) -> Result:
    from kafka import OffsetAndMetadata

    offsets = {
        TopicPartition(o["topic"], o["partition"]): OffsetAndMetadata(
            o["offset"], o.get("metadata", ""), -1
        )
        for o in job["offsets"]
    }
    admin = admin_for(job)
    try:
        altered = admin.alter_group_offsets(job["group"], offsets)
    finally:
        admin.close()
    return {
        "ok": True,
        "offsets": [
            {"topic": tp.topic, "partition": tp.partition, **error_class_fields(altered[tp])}
            for tp in offsets
        ],
    }


def delete_group_offsets(job: Job) -> Result:
    partitions = [TopicPartition(p["topic"], p["partition"]) for p in job["partitions"]]
    admin = admin_for(job)
    try:
        deleted = admin.delete_group_offsets(job["group"], partitions)
    except KafkaError as exc:  # a group-level error
        deleted = {tp: type(exc) for tp in partitions}
    finally:
        admin.close()
    return {
        "ok": True,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, **error_class_fields(deleted[tp])}
            for tp in partitions
        ],
    }


# --- ACLs (README.md; KafkaAdminClient, one request per binding or filter) ---


def acl_binding(spec: dict[str, Any], concrete: bool = True) -> Any:
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    fields = jobio.acl_codes(
        spec, jobio.ACL_BINDING_DEFAULTS if concrete else jobio.ACL_FILTER_DEFAULTS
    )
    pattern = (ResourcePattern if concrete else ResourcePatternFilter)(
        ResourceType(fields["resource_type"]),
        fields["resource_name"],
        ACLResourcePatternType(fields["pattern_type"]),
    )
    return (ACL if concrete else ACLFilter)(
        fields["principal"],
        fields["host"],
        ACLOperation(fields["operation"]),
        ACLPermissionType(fields["permission_type"]),
        pattern,
    )


def binding_out(acl: Any) -> dict[str, Any]:
    return jobio.acl_names(
        acl.resource_pattern.resource_type,
        acl.resource_pattern.resource_name,
        acl.resource_pattern.pattern_type,
        acl.principal,
        acl.host,
        acl.operation,
        acl.permission_type,
    )


def create_acls(job: Job) -> Result:
    """kafka-python 3 answers failures without saying which binding failed (2.x pairs each
    with its binding): one request per binding."""
    admin = admin_for(job)
    items = []
    try:
        for spec in job["acls"]:
            acl = acl_binding(spec)
            item = binding_out(acl)
            try:
                failed = admin.create_acls([acl])["failed"]
                error = failed[0][1] if failed and KAFKA_PYTHON_2 else failed[0] if failed else None
                item.update(error_class_fields(error or "NoError"))
            except KafkaError as exc:
                item.update(exception_fields(exc))
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "acls": items}


def describe_acls(job: Job) -> Result:
    admin = admin_for(job)
    result: Result = {"ok": True, "acls": []}
    try:
        found, _ = admin.describe_acls(acl_binding(job.get("filter") or {}, concrete=False))
        result.update(error=None, error_name=None, acls=[binding_out(acl) for acl in found])
    except KafkaError as exc:  # the answer's error code, raised
        result.update(exception_fields(exc))
    finally:
        admin.close()
    return result


def delete_acls(job: Job) -> Result:
    """kafka-python 3 drops each deleted binding's own error code (reported as none); 2.x
    pairs each binding with its error."""
    admin = admin_for(job)
    items = []
    try:
        for spec in job["filters"]:
            (answer,) = admin.delete_acls([acl_binding(spec, concrete=False)])
            _, deleted, error = answer
            item = error_class_fields(error)
            pairs = deleted if KAFKA_PYTHON_2 else [(acl, "NoError") for acl in deleted]
            item["acls"] = [binding_out(acl) | error_class_fields(e) for acl, e in pairs]
            items.append(item)
    finally:
        admin.close()
    return {"ok": True, "filters": items}


def abort_hanging(job: Job) -> Result:
    """kafka-transactions.sh abort --start-offset with kafka-python 3's admin (KIP-664):
    describe_producers, then abort_transaction of the producer whose open transaction starts
    at `start_offset` (its coordinator epoch, 0 when it has none, as Kafka's tool takes it)."""
    from kafka.admin import AbortTransactionSpec

    admin = admin_for(job)
    tp = TopicPartition(job["topic"], int(job["partition"]))
    try:
        producers = admin.describe_producers([tp])[tp].active_producers
        hanging = next(
            p for p in producers if p.current_transaction_start_offset == job["start_offset"]
        )
        spec = AbortTransactionSpec(
            tp, hanging.producer_id, hanging.producer_epoch, max(hanging.coordinator_epoch, 0)
        )
        admin.abort_transaction(spec)
    finally:
        admin.close()
    return {
        "ok": True,
        "producer_id": spec.producer_id,
        "producer_epoch": spec.producer_epoch,
        "coordinator_epoch": spec.coordinator_epoch,
    }


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
    "list_groups": list_groups,
    "describe_groups": describe_groups,
    "delete_groups": delete_groups,
    "list_group_offsets": list_group_offsets,
    "alter_group_offsets": alter_group_offsets,
    "delete_group_offsets": delete_group_offsets,
    "create_acls": create_acls,
    "describe_acls": describe_acls,
    "delete_acls": delete_acls,
    "abort_hanging": abort_hanging,
}


def log_client_errors_to_stderr() -> None:
    """kafka-python reports some failures only in its log (a refused SASL login, then a
    bootstrap timeout); its errors go to stderr, which failed results carry."""
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="%(name)s: %(message)s")


if __name__ == "__main__":
    log_client_errors_to_stderr()
    jobio.serve(OPS, error_name)
