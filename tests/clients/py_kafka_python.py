"""kafka-python job program (3.x in the project venv, 2.x in its own venv).

Usage: python py_kafka_python.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

from typing import Any

import jobio
from jobio import Deadline, Job, Result, b64, headers_in, headers_out, unb64
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

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


def produce(job: Job) -> Result:
    deadline = Deadline(job)
    config: dict[str, Any] = {
        "bootstrap_servers": job["bootstrap"],
        "acks": ACKS[job.get("acks", "all")],
        "compression_type": None
        if job.get("compression", "none") == "none"
        else job["compression"],
    }
    if job.get("idempotent") is not None:
        config["enable_idempotence"] = job["idempotent"]
    config.update(extra_config(job))
    producer = KafkaProducer(**config)
    try:
        futures = [
            producer.send(
                job["topic"],
                key=unb64(record.get("key")),
                value=unb64(record.get("value")),
                headers=headers_in(record),
                partition=record.get("partition"),
                timestamp_ms=record.get("timestamp"),
            )
            for record in job["records"]
        ]
        producer.flush(timeout=deadline.remaining_ms() / 1000)
        sent = [future.get(timeout=deadline.remaining_ms() / 1000) for future in futures]
    finally:
        producer.close(timeout=5)
    results = [
        {"partition": m.partition, "offset": m.offset, "timestamp": m.timestamp} for m in sent
    ]
    return {"ok": True, "results": results}


def start_position(consumer: Any, partitions: list[TopicPartition], start: Any) -> None:
    if start == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif start == "latest":
        consumer.seek_to_end(*partitions)
    else:
        for partition in partitions:
            consumer.seek(partition, int(start))


def assign_partitions(consumer: Any, job: Job, deadline: Deadline) -> None:
    wanted = job.get("partitions")
    found: set[int] = set()
    while not found and not deadline.expired():
        found = consumer.partitions_for_topic(job["topic"]) or set()
    if not found:
        raise TimeoutError(f"no metadata for topic {job['topic']!r}")
    partitions = [TopicPartition(job["topic"], p) for p in sorted(wanted or found)]
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


if __name__ == "__main__":
    jobio.serve({"produce": produce, "consume": consume}, error_name)
