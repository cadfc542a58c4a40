"""aiokafka job program.

Usage: python py_aiokafka.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

import asyncio
from typing import Any

import jobio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from jobio import Deadline, Job, Result, b64, headers_in, headers_out, unb64

ACKS: dict[str, Any] = {"all": "all", "1": 1, "0": 0}
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


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
    config.update(job.get("config") or {})
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
    producer = AIOKafkaProducer(bootstrap_servers=job["bootstrap"])
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
    config.update(job.get("config") or {})
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
        await consumer.stop()
    return {"ok": True, "records": records, "timed_out": len(records) < job["count"]}


def produce(job: Job) -> Result:
    return asyncio.run(produce_async(job))


def consume(job: Job) -> Result:
    return asyncio.run(consume_async(job))


if __name__ == "__main__":
    jobio.serve({"produce": produce, "consume": consume}, error_name)
