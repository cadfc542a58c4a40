"""aiokafka job program.

Usage: python py_aiokafka.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import jobio
from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    TopicPartition,
    errors,
)
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from aiokafka.errors import KafkaError
from aiokafka.helpers import create_ssl_context
from jobio import Deadline, Job, Result, b64, headers_in, headers_out, unb64

ACKS: dict[str, Any] = {"all": "all", "1": 1, "0": 0}
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
SSL_FILE_OPTIONS = ("ssl_cafile", "ssl_certfile", "ssl_keyfile")


def client_config(job: Job) -> dict[str, Any]:
    """The job's client properties. aiokafka takes TLS settings only as an `ssl_context`, so
    CA, certificate and key files given in kafka-python's names become one."""
    config = dict(job.get("config") or {})
    files = {name: config.pop(name) for name in SSL_FILE_OPTIONS if name in config}
    if files:
        config["ssl_context"] = create_ssl_context(
            cafile=files.get("ssl_cafile"),
            certfile=files.get("ssl_certfile"),
            keyfile=files.get("ssl_keyfile"),
        )
    return config


ASSIGNORS = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}


def error_name(exc: BaseException) -> str | None:
    if isinstance(exc, KafkaError) and getattr(exc, "errno", None) is not None:
        return str(exc.message)
    return None


async def produce_async(job: Job) -> Result:
    deadline = Deadline(job)
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "acks": ACKS[job.get("acks", "all")],
        "compression_type": None
        if job.get("compression", "none") == "none"
        else job["compression"],
        "request_timeout_ms": deadline.remaining_ms(),
    }
    if job.get("idempotent") is not None:
        config["enable_idempotence"] = job["idempotent"]
    config.update(transactional_config(job))
    config.update(client_config(job))
    producer = AIOKafkaProducer(**config)
    await producer.start()
    crash = False
    try:
        if job.get("transactional_id") is not None:
            await producer.begin_transaction()
        # send() returns once the record is in the accumulator, so records keep their order.
        futures = [
            await producer.send(
                job["topic"],
                key=unb64(record.get("key")),
                value=unb64(record.get("value")),
                headers=headers_in(record),
                partition=record.get("partition"),
                timestamp_ms=record.get("timestamp"),
            )
            for record in job["records"]
        ]
        sent = await asyncio.wait_for(asyncio.gather(*futures), deadline.remaining_ms() / 1000)
        crash = await end_transaction(producer, job)
    finally:
        if not crash:  # a stopping producer would abort the transaction left open
            await producer.stop()
    results = [
        {"partition": m.partition, "offset": m.offset, "timestamp": m.timestamp} for m in sent
    ]
    return {"ok": True, "results": results, "crash": crash}


# --- transactions ---


def transactional_config(job: Job) -> dict[str, Any]:
    if job.get("transactional_id") is None:
        return {}
    config: dict[str, Any] = {"transactional_id": job["transactional_id"]}
    if job.get("transaction_timeout_ms") is not None:
        config["transaction_timeout_ms"] = job["transaction_timeout_ms"]
    return config


async def end_transaction(producer: AIOKafkaProducer, job: Job) -> bool:
    """Commit or abort the job's transaction; True for `open` (then exit as a crash)."""
    if job.get("transactional_id") is None:
        return False
    ending = job.get("transaction", "commit")
    if ending == "commit":
        await producer.commit_transaction()
    elif ending == "abort":
        await producer.abort_transaction()
    elif ending != "open":
        raise ValueError(f"unknown transaction ending {ending!r}")
    return ending == "open"


async def topic_partitions(job: Job) -> set[int]:
    """The topic's partitions, asked for by name: the consumer only fetches metadata for
    all topics, which librdkafka's mock cluster answers with none."""
    producer = AIOKafkaProducer(bootstrap_servers=job["bootstrap"], **client_config(job))
    await producer.start()
    try:
        partitions: set[int] = await producer.partitions_for(job["topic"])
    finally:
        await producer.stop()
    return partitions


async def assign_partitions(consumer: Any, job: Job) -> None:
    wanted = job.get("partitions")
    found = set() if wanted else await topic_partitions(job)
    partitions = [TopicPartition(job["topic"], p) for p in sorted(wanted or found)]
    consumer.assign(partitions)
    start = job.get("from", "earliest")
    if start == "earliest":
        await consumer.seek_to_beginning(*partitions)
    elif start == "latest":
        await consumer.seek_to_end(*partitions)
    else:
        for partition in partitions:
            consumer.seek(partition, int(start))


# How long a consumer may take to stop before the job gives up on it (see stop_consumer).
STOP_TIMEOUT_S = 10.0


async def stop_consumer(consumer: AIOKafkaConsumer) -> None:
    """`consumer.stop()`, past two aiokafka 0.14 bugs met when the broker restarts as the
    consumer stops:
    - `Fetcher.close` cancels its pending fetch tasks and awaits them unguarded, so a fetch
      backing off after a connection error raises CancelledError out of `stop()` though
      nothing cancelled this job (a cancellation of the job itself still propagates);
    - the closing auto-commit (`GroupCoordinator.commit_offsets`) retries forever once its
      coordinator is marked dead: `ensure_coordinator_known` looks nothing up while closing,
      so every retry fails with GroupCoordinatorNotAvailable. `stop()` is given up on after
      STOP_TIMEOUT_S, with a line on stderr; what the job read is reported all the same."""
    try:
        await asyncio.wait_for(consumer.stop(), STOP_TIMEOUT_S)
    except TimeoutError:
        print(f"aiokafka consumer.stop() did not finish in {STOP_TIMEOUT_S:.0f} s", file=sys.stderr)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


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


async def consume_async(job: Job) -> Result:
    deadline = Deadline(job)
    group = job.get("group")
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "group_id": group,
        "auto_offset_reset": "latest" if job.get("from") == "latest" else "earliest",
        "enable_auto_commit": False,
        "isolation_level": job.get("isolation", "read_uncommitted"),
    }
    config.update(client_config(job))
    consumer = AIOKafkaConsumer(**config)
    await consumer.start()
    records: list[dict[str, Any]] = []
    try:
        if group is None:
            await assign_partitions(consumer, job)
        else:
            consumer.subscribe([job["topic"]])
        while len(records) < job["count"] and not deadline.expired():
            polled = await consumer.getmany(
                timeout_ms=min(deadline.remaining_ms(), 500),
                max_records=job["count"] - len(records),
            )
            for messages in polled.values():
                records.extend(record_out(m) for m in messages)
        if group is not None and records:
            await consumer.commit()
    finally:
        await stop_consumer(consumer)
    return {"ok": True, "records": records, "timed_out": len(records) < job["count"]}


# --- group_member: a long-running group consumer (README.md) ---


class CountingListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Counts rebalances (revocations and assignments) seen by this consumer."""

    def __init__(self) -> None:
        self.rebalances = 0

    async def on_partitions_revoked(self, revoked: Any) -> None:
        self.rebalances += 1

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.rebalances += 1


# A rebalance refused the commit: the rest of the batch is not reported, and is read again
# (here, if the partition stays assigned; else by its new owner, from the committed offset).
COMMIT_REFUSED_BY_REBALANCE = (
    errors.CommitFailedError,
    errors.RebalanceInProgressError,
    errors.IllegalGenerationError,
    errors.UnknownMemberIdError,
)


def rewind(consumer: AIOKafkaConsumer, positions: dict[TopicPartition, int]) -> None:
    assigned = consumer.assignment()
    for tp, offset in positions.items():
        if tp in assigned:
            consumer.seek(tp, offset)


async def group_member_async(job: Job) -> Result:
    session_ms = job.get("session_timeout_ms", 10_000)
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "group_id": job["group"],
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "session_timeout_ms": session_ms,
        "heartbeat_interval_ms": max(session_ms // 5, 10),
        "partition_assignment_strategy": (ASSIGNORS[job.get("assignor", "range")],),
        "metadata_max_age_ms": 500,
        "group_instance_id": job.get("instance_id"),
    }
    config.update(job.get("config") or {})
    stop = jobio.StopOnSigterm()
    # aiokafka rebalances in the background, so a rebalance can happen while a batch from
    # getmany() is being processed: positions are reset to the committed offsets and the rest
    # of the batch would be delivered again. Drop the rest of a batch once a rebalance has
    # happened since getmany() returned it (as a careful aiokafka application does).
    listener = CountingListener()
    consumer = AIOKafkaConsumer(**config)
    consumer.subscribe([job["topic"]], listener=listener)
    await consumer.start()
    try:
        assigned: set[int] = set()
        while not stop.requested:
            batches = await consumer.getmany(timeout_ms=50)
            seen = listener.rebalances
            now_assigned = {tp.partition for tp in consumer.assignment()}
            if now_assigned != assigned:
                assigned = now_assigned
                jobio.assigned(assigned)
            unreported = {tp: records[0].offset for tp, records in batches.items()}
            try:
                for tp, records in batches.items():
                    for record in records:
                        if listener.rebalances != seen:
                            break
                        await consumer.commit({tp: record.offset + 1})
                        jobio.consumed(tp.partition, record.offset, record.value)
                        unreported[tp] = record.offset + 1
            except COMMIT_REFUSED_BY_REBALANCE:
                rewind(consumer, unreported)
    finally:
        await stop_consumer(consumer)
    return {"ok": True}


def produce(job: Job) -> Result:
    return asyncio.run(produce_async(job))


def consume(job: Job) -> Result:
    return asyncio.run(consume_async(job))


# --- metadata, offsets by timestamp and DeleteRecords (AIOKafkaAdminClient, consumer) --------


def error_fields(code: int) -> dict[str, str | None]:
    from aiokafka.errors import for_code

    if code == 0:
        return {"error": None, "error_name": None}
    error_type = for_code(code)
    return {"error": error_type.__name__, "error_name": str(error_type.message)}


async def metadata_async(job: Job) -> Result:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=job["bootstrap"], **client_config(job))
    await admin.start()
    try:
        cluster = await admin.describe_cluster()
        topics = await admin.describe_topics(job.get("topics"))
    finally:
        await admin.close()
    return {
        "ok": True,
        "cluster_id": cluster.get("cluster_id"),
        "controller": cluster.get("controller_id", -1),
        "brokers": [
            {"id": b["node_id"], "host": b["host"], "port": b["port"]} for b in cluster["brokers"]
        ],
        "topics": [
            {
                "name": t["topic"],
                **error_fields(t["error_code"]),
                "partitions": [
                    {"partition": p["partition"], "leader": p["leader"]} for p in t["partitions"]
                ],
            }
            for t in topics
        ],
    }


async def list_offsets_async(job: Job) -> Result:
    """The consumer's beginning_offsets / end_offsets / offsets_for_times; no max_timestamp,
    and the isolation level is the consumer's."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=job["bootstrap"],
        isolation_level=job.get("isolation", "read_uncommitted"),
        **client_config(job),
    )
    await consumer.start()
    try:
        numbers = job.get("partitions") or sorted(
            consumer.partitions_for_topic(job["topic"]) or await topic_partitions(job)
        )
        partitions = [TopicPartition(job["topic"], p) for p in numbers]
        spec = job["spec"]
        found: dict[Any, Any]
        if spec == "earliest":
            found = {
                tp: (offset, -1)
                for tp, offset in (await consumer.beginning_offsets(partitions)).items()
            }
        elif spec == "latest":
            found = {
                tp: (offset, -1) for tp, offset in (await consumer.end_offsets(partitions)).items()
            }
        else:
            by_time = await consumer.offsets_for_times({tp: int(spec) for tp in partitions})
            found = {
                tp: (-1, -1) if answer is None else (answer.offset, answer.timestamp)
                for tp, answer in by_time.items()
            }
    finally:
        await stop_consumer(consumer)
    return {
        "ok": True,
        "offsets": [
            {
                "partition": tp.partition,
                "offset": found[tp][0],
                "timestamp": found[tp][1],
                "error": None,
                "error_name": None,
            }
            for tp in partitions
        ],
    }


async def delete_records_async(job: Job) -> Result:
    from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

    admin = AIOKafkaAdminClient(bootstrap_servers=job["bootstrap"], **client_config(job))
    await admin.start()
    items = []
    try:
        for partition, offset in job["offsets"].items():
            tp = TopicPartition(job["topic"], int(partition))
            item: dict[str, Any] = {"partition": tp.partition, "low_watermark": -1}
            try:
                deleted = await admin.delete_records({tp: RecordsToDelete(int(offset))})
                item.update(low_watermark=deleted[tp], error=None, error_name=None)
            except KafkaError as exc:
                item.update(error=f"{type(exc).__name__}: {exc}", error_name=error_name(exc))
            items.append(item)
    finally:
        await admin.close()
    return {"ok": True, "partitions": items}


def metadata(job: Job) -> Result:
    return asyncio.run(metadata_async(job))


def list_offsets(job: Job) -> Result:
    return asyncio.run(list_offsets_async(job))


def delete_records(job: Job) -> Result:
    return asyncio.run(delete_records_async(job))


# --- produce_paced: one record at a time, for a broker restart while a producer sends ---


async def produce_paced_async(job: Job) -> Result:
    deadline = Deadline(job)
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "acks": ACKS[job.get("acks", "all")],
        "compression_type": None
        if job.get("compression", "none") == "none"
        else job["compression"],
        "request_timeout_ms": deadline.remaining_ms(),
    }
    if job.get("idempotent") is not None:
        config["enable_idempotence"] = job["idempotent"]
    config.update(client_config(job))
    producer = AIOKafkaProducer(**config)
    await producer.start()
    futures = []
    try:
        for record in job["records"]:
            futures.append(
                await producer.send(
                    job["topic"],
                    key=unb64(record.get("key")),
                    value=unb64(record.get("value")),
                    headers=headers_in(record),
                    partition=record.get("partition"),
                    timestamp_ms=record.get("timestamp"),
                )
            )
            await asyncio.sleep(job.get("interval_ms", 50) / 1000)
        sent = await asyncio.wait_for(asyncio.gather(*futures), deadline.remaining_ms() / 1000)
    finally:
        await producer.stop()
    results = [
        {"partition": m.partition, "offset": m.offset, "timestamp": m.timestamp} for m in sent
    ]
    return {"ok": True, "results": results}


def produce_paced(job: Job) -> Result:
    return asyncio.run(produce_paced_async(job))


# --- topic and config admin (AIOKafkaAdminClient): one request per item, for its own error ---


def admin_client(job: Job) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    return AIOKafkaAdminClient(bootstrap_servers=job["bootstrap"], **client_config(job))


def answers(response: Any) -> list[dict[str, Any]]:
    """The per-item answers of an admin response, whatever its version calls the list."""
    found = response.to_object()
    for field in ("topic_errors", "topic_error_codes", "topics", "results", "resources"):
        if field in found:
            return list(found[field])
    raise ValueError(f"no per-item answers in {sorted(found)}")


async def per_item(job: Job, names: list[str], call: Any) -> list[dict[str, Any]]:
    admin = admin_client(job)
    await admin.start()
    items = []
    try:
        for name in names:
            item: dict[str, Any] = {"name": name}
            try:
                (answer,) = answers(await call(admin, name))
                item.update(error_fields(answer["error_code"]))
            except KafkaError as exc:
                item.update(error=f"{type(exc).__name__}: {exc}", error_name=error_name(exc))
            items.append(item)
    finally:
        await admin.close()
    return items


async def create_topics_async(job: Job) -> Result:
    from aiokafka.admin import NewTopic

    specs = {spec["name"]: spec for spec in job["topics"]}

    def create(admin: Any, name: str) -> Any:
        spec = specs[name]
        topic = NewTopic(
            name,
            spec.get("partitions") or -1,
            spec.get("replication_factor") or -1,
            topic_configs=spec.get("configs") or {},
        )
        return admin.create_topics([topic])

    return {"ok": True, "topics": await per_item(job, list(specs), create)}


async def delete_topics_async(job: Job) -> Result:
    def delete(admin: Any, name: str) -> Any:
        return admin.delete_topics([name])

    return {"ok": True, "topics": await per_item(job, job["topics"], delete)}


async def create_partitions_async(job: Job) -> Result:
    from aiokafka.admin import NewPartitions

    counts = {spec["name"]: spec["count"] for spec in job["topics"]}

    def grow(admin: Any, name: str) -> Any:
        return admin.create_partitions({name: NewPartitions(counts[name])})

    return {"ok": True, "topics": await per_item(job, list(counts), grow)}


def config_resource(spec: dict[str, Any], configs: Any = None) -> Any:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    return ConfigResource(ConfigResourceType[spec["type"].upper()], spec["name"], configs)


CONFIG_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


def config_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": entry["config_value"],
        "source": CONFIG_SOURCES.get(entry.get("config_source", -1), "UNKNOWN"),
        "read_only": entry["read_only"],
        "sensitive": entry["is_sensitive"],
    }


async def describe_configs_async(job: Job) -> Result:
    admin = admin_client(job)
    await admin.start()
    items = []
    try:
        for spec in job["resources"]:
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"], "configs": {}}
            try:
                (response,) = await admin.describe_configs([config_resource(spec)])
                (answer,) = answers(response)
                item.update(error_fields(answer["error_code"]))
                item["configs"] = {
                    entry["config_names"]: config_entry(entry) for entry in answer["config_entries"]
                }
            except KafkaError as exc:
                item.update(error=f"{type(exc).__name__}: {exc}", error_name=error_name(exc))
            items.append(item)
    finally:
        await admin.close()
    return {"ok": True, "resources": items}


async def alter_configs_async(job: Job) -> Result:
    """aiokafka sends the legacy AlterConfigs, which replaces the resource's dynamic configs
    with `set`; `delete` is refused."""
    admin = admin_client(job)
    await admin.start()
    items = []
    try:
        for spec in job["resources"]:
            if spec.get("delete"):
                raise ValueError("aiokafka's AlterConfigs cannot delete a single config")
            item: dict[str, Any] = {"type": spec["type"], "name": spec["name"]}
            try:
                (response,) = await admin.alter_configs([config_resource(spec, spec["set"])])
                (answer,) = answers(response)
                item.update(error_fields(answer["error_code"]))
            except KafkaError as exc:
                item.update(error=f"{type(exc).__name__}: {exc}", error_name=error_name(exc))
            items.append(item)
    finally:
        await admin.close()
    return {"ok": True, "resources": items}


ADMIN_OPS = {
    "create_topics": create_topics_async,
    "delete_topics": delete_topics_async,
    "create_partitions": create_partitions_async,
    "describe_configs": describe_configs_async,
    "alter_configs": alter_configs_async,
}


def group_member(job: Job) -> Result:
    return asyncio.run(group_member_async(job))


if __name__ == "__main__":
    ops = {"produce": produce, "consume": consume, "metadata": metadata}
    ops.update(list_offsets=list_offsets, delete_records=delete_records)
    ops.update(produce_paced=produce_paced, group_member=group_member)
    for name, admin_op in ADMIN_OPS.items():
        ops[name] = lambda job, admin_op=admin_op: asyncio.run(admin_op(job))
    jobio.serve(ops, error_name)
