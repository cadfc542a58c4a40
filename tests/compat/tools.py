"""What a scenario needs besides the client under test: topics created, records put in place
(confluent-kafka, in this process) and raw stored batches read back (a hand-built Fetch),
so that a cell tests one client at a time."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from minibroker.protocol.api_keys import ApiKey
from minibroker.records.batch import BatchHeader, split_batches
from tests.wire import WireClient

SETUP_TIMEOUT_S = 30.0
QUIET = 3  # librdkafka's log level for the set-up clients: errors only, no shutdown chatter
CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]


class SetupFailed(RuntimeError):
    """The matrix's own set-up failed (not the client under test)."""


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def unique_topic(scenario: str, client: str) -> str:
    """Fresh per cell and per run, so that runs against a long-lived broker never collide."""
    return f"compat-{scenario}-{client.replace('.', '_')}-{uuid.uuid4().hex[:8]}"


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
    replication_factor: int = 1,
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    futures = admin.create_topics(
        [NewTopic(name, partitions, replication_factor, config=dict(configs or {}))],
        request_timeout=SETUP_TIMEOUT_S,
    )
    try:
        futures[name].result(timeout=SETUP_TIMEOUT_S)
    except KafkaException as exc:
        raise SetupFailed(f"creating topic {name}: {exc}") from exc


@dataclass(frozen=True)
class SetupRecord:
    partition: int
    value: bytes
    key: bytes | None = None
    timestamp: int | None = None


def put_records(bootstrap: str, topic: str, records: Iterable[SetupRecord]) -> None:
    """Produce `records` (acks=all) and wait for every acknowledgement."""
    errors: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            errors.append(str(error))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": QUIET})
    for record in records:
        producer.produce(
            topic,
            value=record.value,
            key=record.key,
            partition=record.partition,
            timestamp=record.timestamp or 0,
            on_delivery=delivered,
        )
    left = producer.flush(SETUP_TIMEOUT_S)
    if left or errors:
        raise SetupFailed(f"producing set-up records to {topic}: {errors or f'{left} unsent'}")


def set_produce_quota(bootstrap: str, client_id: str, bytes_per_s: float) -> None:
    """A `producer_byte_rate` quota for one client id (AlterClientQuotas)."""
    entity = [{"entity_type": "client-id", "entity_name": client_id}]
    operation = {"key": "producer_byte_rate", "value": float(bytes_per_s), "remove": False}
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.AlterClientQuotas,
            1,
            entries=[{"entity": entity, "ops": [operation]}],
            validate_only=False,
        )
    (entry,) = response.entries
    if entry.error_code != 0:
        raise SetupFailed(
            f"AlterClientQuotas for {client_id}: error {entry.error_code} {entry.error_message}"
        )


def stored_batches(bootstrap: str, topic: str, partition: int = 0) -> list[BatchHeader]:
    """The headers of the batches stored in a partition, as a Fetch returns them."""
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.Fetch,
            4,
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=16 << 20,
            isolation_level=0,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": partition, "fetch_offset": 0, "partition_max_bytes": 8 << 20}
                    ],
                }
            ],
        )
    answer = response.responses[0].partitions[0]
    if answer.error_code != 0:
        raise SetupFailed(f"fetching {topic}-{partition}: error code {answer.error_code}")
    return [BatchHeader.parse(batch) for batch in split_batches(answer.records or b"")]


def stored_count(bootstrap: str, topic: str, partitions: int) -> int:
    """Records stored in the topic's partitions, counted from their batch headers."""
    return sum(
        batch.records_count
        for partition in range(partitions)
        for batch in stored_batches(bootstrap, topic, partition)
        if not batch.is_control
    )


def describe_group(bootstrap: str, group: str) -> Any:
    """confluent-kafka's ConsumerGroupDescription of `group`, None if the broker refused."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    futures = admin.describe_consumer_groups([group], request_timeout=SETUP_TIMEOUT_S)
    try:
        return futures[group].result(timeout=SETUP_TIMEOUT_S)
    except KafkaException:
        return None


def group_is_stable(bootstrap: str, group: str) -> bool:
    """The group has members and has handed out its assignment."""
    described = describe_group(bootstrap, group)
    return (
        described is not None
        and bool(described.members)
        and described.state == ConsumerGroupState.STABLE
    )


def stable_assignment(bootstrap: str, group: str, topic: str) -> list[list[int]] | None:
    """The partitions of `topic` each member of a stable group owns, None while it is not
    stable."""
    described = describe_group(bootstrap, group)
    if described is None or described.state != ConsumerGroupState.STABLE:
        return None
    owned = [member.assignment.topic_partitions or [] for member in described.members]
    return [sorted(tp.partition for tp in tps if tp.topic == topic) for tps in owned]


@contextmanager
def consumer_protocol_member(
    bootstrap: str, group: str, topic: str, client_id: str
) -> Iterator[None]:
    """A confluent-kafka consumer with group.protocol=consumer in `group`, subscribed to
    `topic`, for the duration of the block, once it owns partitions."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "client.id": client_id,
            "log_level": QUIET,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise SetupFailed(f"the consumer-protocol member of {group} got no partitions")
            consumer.poll(0.05)
        yield
    finally:
        consumer.close()
