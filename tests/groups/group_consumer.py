"""A group consumer process for the real-client group tests.

Usage: group_consumer.py CLIENT BOOTSTRAP GROUP TOPIC SESSION_MS ASSIGNOR [INSTANCE_ID]

Consumes TOPIC in GROUP with CLIENT (confluent, kafka-python, aiokafka), commits each
record synchronously and only then prints it as a JSON line [partition, offset, value].
Prints ["assigned", [partitions]] after every assignment. SIGTERM closes the consumer
gracefully (LeaveGroup); SIGKILL simulates a crash.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any

stopping = False


def _stop(*_: object) -> None:
    global stopping
    stopping = True


def emit(*fields: Any) -> None:
    print(json.dumps(list(fields)), flush=True)


def run_confluent(
    bootstrap: str, group: str, topic: str, session_ms: int, assignor: str, instance: str | None
) -> None:
    from confluent_kafka import Consumer

    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(session_ms // 5, 10),
        "partition.assignment.strategy": assignor,
        "topic.metadata.refresh.interval.ms": 500,
    }
    if instance:
        config["group.instance.id"] = instance

    assigned: set[int] = set()

    def on_assign(consumer: Any, partitions: Any) -> None:
        assigned.update(p.partition for p in partitions)
        emit("assigned", sorted(assigned))

    def on_revoke(consumer: Any, partitions: Any) -> None:
        assigned.difference_update(p.partition for p in partitions)
        emit("assigned", sorted(assigned))

    consumer = Consumer(config)
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stopping:
        message = consumer.poll(0.05)
        if message is None or message.error():
            continue
        consumer.commit(message=message, asynchronous=False)
        emit(message.partition(), message.offset(), (message.value() or b"").decode())
    consumer.close()


def run_kafka_python(
    bootstrap: str, group: str, topic: str, session_ms: int, assignor: str, instance: str | None
) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(session_ms // 5, 10),
        partition_assignment_strategy=[assignors[assignor]],
        metadata_max_age_ms=500,
        group_instance_id=instance,
    )
    assigned: set[int] = set()
    consumer.subscribe([topic])
    while not stopping:
        batches = consumer.poll(timeout_ms=50)
        now_assigned = {tp.partition for tp in consumer.assignment()}
        if now_assigned != assigned:
            assigned = now_assigned
            emit("assigned", sorted(assigned))
        for tp, records in batches.items():
            for record in records:
                consumer.commit({tp: OffsetAndMetadata(record.offset + 1, "", -1)})
                emit(tp.partition, record.offset, record.value.decode())
    consumer.close()


async def run_aiokafka(
    bootstrap: str, group: str, topic: str, session_ms: int, assignor: str, instance: str | None
) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    # aiokafka rebalances in the background, so a rebalance can happen while a batch from
    # getmany() is being processed: positions are reset to the committed offsets and the
    # rest of the batch would be delivered again. Drop the rest of a batch once a rebalance
    # has happened since getmany() returned it (as a careful aiokafka application does).
    class Rebalances(ConsumerRebalanceListener):  # type: ignore[misc]
        count = 0

        async def on_partitions_revoked(self, revoked: Any) -> None:
            Rebalances.count += 1

        async def on_partitions_assigned(self, assigned: Any) -> None:
            Rebalances.count += 1

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=max(session_ms // 5, 10),
        partition_assignment_strategy=(assignors[assignor],),
        metadata_max_age_ms=500,
        group_instance_id=instance,
    )
    consumer.subscribe([topic], listener=Rebalances())
    await consumer.start()
    assigned: set[int] = set()
    while not stopping:
        batches = await consumer.getmany(timeout_ms=50)
        seen = Rebalances.count
        now_assigned = {tp.partition for tp in consumer.assignment()}
        if now_assigned != assigned:
            assigned = now_assigned
            emit("assigned", sorted(assigned))
        for tp, records in batches.items():
            for record in records:
                if Rebalances.count != seen:
                    break
                await consumer.commit({tp: record.offset + 1})
                assert record.value is not None
                emit(tp.partition, record.offset, record.value.decode())
    await consumer.stop()


def main() -> None:
    client, bootstrap, group, topic, session, assignor = sys.argv[1:7]
    instance = sys.argv[7] if len(sys.argv) > 7 else None
    signal.signal(signal.SIGTERM, _stop)
    args = (bootstrap, group, topic, int(session), assignor, instance)
    if client == "confluent":
        run_confluent(*args)
    elif client == "kafka-python":
        run_kafka_python(*args)
    elif client == "aiokafka":
        asyncio.run(run_aiokafka(*args))
    else:
        raise SystemExit(f"unknown client {client}")


if __name__ == "__main__":
    main()
