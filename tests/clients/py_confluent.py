"""confluent-kafka (librdkafka) job program.

Usage: python py_confluent.py '<job json>'  (or the job on stdin); see README.md.
"""

from __future__ import annotations

from typing import Any

import jobio
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
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


def produce(job: Job) -> Result:
    deadline = Deadline(job)
    config: dict[str, Any] = {
        "bootstrap.servers": job["bootstrap"],
        "acks": job.get("acks", "all"),
        "compression.type": job.get("compression", "none"),
        "message.timeout.ms": deadline.remaining_ms(),
    }
    if job.get("idempotent") is not None:
        config["enable.idempotence"] = job["idempotent"]
    config.update(job.get("config") or {})
    producer = Producer(config)
    delivered: dict[int, Message] = {}

    def on_delivery(index: int) -> Any:
        return lambda error, message: delivered.__setitem__(index, message)

    for index, record in enumerate(job["records"]):
        headers: list[tuple[str, str | bytes | None]] = [*headers_in(record)]
        optional = {k: record[k] for k in ("partition", "timestamp") if record.get(k) is not None}
        producer.produce(
            job["topic"],
            key=unb64(record.get("key")),
            value=unb64(record.get("value")),
            headers=headers,
            on_delivery=on_delivery(index),
            **optional,
        )
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
    return {"ok": True, "results": results}


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


if __name__ == "__main__":
    jobio.serve({"produce": produce, "consume": consume}, error_name)
