"""The Python API: async and threaded brokers, storage, configs and the assertion helpers,
driven by kafka-python 3 and aiokafka over TCP."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

import minibroker
from minibroker.cluster.state import TopicError
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import (
    ApiKey,
    AsyncKafkaBroker,
    AsyncKafkaCluster,
    Call,
    InvalidRecords,
    KafkaBroker,
    KafkaCluster,
)

pytestmark = pytest.mark.clients


def _refuses_connections(address: str) -> bool:
    host, _, port = address.partition(":")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


async def test_async_broker_serves_aiokafka_on_the_test_loop() -> None:
    async with AsyncKafkaBroker(storage="memory") as kafka:
        kafka.create_topic("events", partitions=2)
        producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait("events", b"one", partition=1)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            "events", bootstrap_servers=kafka.bootstrap_servers, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            record = await consumer.getone()
        finally:
            await consumer.stop()
        assert (record.partition, record.value) == (1, b"one")
        assert kafka.end_offsets("events") == {0: 0, 1: 1}
        address = kafka.bootstrap_servers
    assert _refuses_connections(address)


def test_threaded_broker_helpers_round_trip_with_kafka_python() -> None:
    with KafkaBroker() as kafka:
        kafka.create_topic("orders", partitions=1, config={"cleanup.policy": "delete"})
        assert kafka.produce("orders", "first", key="k", headers={"h": b"v"}) == 0
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
        producer.send("orders", b"second").get(timeout=30)
        producer.close()
        records = kafka.records("orders")
        assert [(r.offset, r.key, r.value) for r in records] == [
            (0, b"k", b"first"),
            (1, None, b"second"),
        ]
        assert records[0].headers == [("h", b"v")]
        consumer = KafkaConsumer(
            bootstrap_servers=kafka.bootstrap_servers,
            group_id="readers",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        consumer.subscribe(["orders"])
        seen = []
        while len(seen) < 2:
            for batch in consumer.poll(timeout_ms=1000).values():
                seen.extend(record.value for record in batch)
        consumer.commit()
        consumer.close()
        assert seen == [b"first", b"second"]
        assert kafka.committed_offsets("readers") == {("orders", 0): 2}


def test_broker_configs_take_kafka_names() -> None:
    with KafkaBroker(config={"num.partitions": 4, "auto.create.topics.enable": True}) as kafka:
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
        assert producer.partitions_for("auto") == {0, 1, 2, 3}
        producer.close()
        assert kafka.end_offsets("auto") == {0: 0, 1: 0, 2: 0, 3: 0}


def test_topic_configs_are_applied_and_checked() -> None:
    with KafkaBroker(storage="memory") as kafka:
        kafka.create_topic("compacted", config={"cleanup.policy": "compact"})
        admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
        try:
            described = admin.describe_configs([_topic_resource("compacted")])
        finally:
            admin.close()
        assert described["topic"]["compacted"]["cleanup.policy"]["value"] == "compact"
        with pytest.raises(TopicError) as refused:
            kafka.create_topic("compacted")
        assert refused.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
        with pytest.raises(InvalidRecords) as rejected:
            kafka.produce("compacted", "no key")  # compacted topics need keys
        assert rejected.value.error_code == ErrorCode.INVALID_RECORD


def _topic_resource(name: str) -> object:
    from kafka.admin import ConfigResource, ConfigResourceType

    return ConfigResource(ConfigResourceType.TOPIC, name)


def test_disk_storage_survives_restart_and_temporary_dir_is_removed() -> None:
    with KafkaBroker() as kafka:
        data_dir = kafka.data_dir
        assert data_dir is not None and data_dir.is_dir()
        kafka.create_topic("kept")
        kafka.produce("kept", "v1")
        port = kafka.port
        kafka.restart()
        assert kafka.port == port
        assert kafka.values("kept") == [b"v1"]
        assert any(data_dir.glob("kept-0/*.log"))
    assert not data_dir.exists()


def test_given_data_dir_is_kept(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path / "data") as kafka:
        kafka.create_topic("t")
    assert (tmp_path / "data" / "t-0").is_dir()
    with KafkaBroker(data_dir=tmp_path / "data") as again:
        assert again.topics() == ["t"]


def test_memory_storage_writes_nothing(tmp_path: Path) -> None:
    with KafkaBroker(storage="memory") as kafka:
        assert kafka.data_dir is None
        kafka.create_topic("t")
        kafka.produce("t", "v")
        assert kafka.values("t") == [b"v"]


def test_package_exports_the_api() -> None:
    assert minibroker.KafkaBroker is KafkaBroker
    assert minibroker.KafkaCluster is KafkaCluster


def test_cli_serves_a_cluster_on_consecutive_node_ids(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from minibroker.protocol.api_keys import ApiKey
    from tests.wire import WireClient

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "minibroker",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--nodes",
            "3",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        addresses = line.split()[-1].split(",")
        assert line.startswith("minibroker ready on") and len(addresses) == 3
        with WireClient(addresses[2]) as client:
            response = client.call(ApiKey.Metadata, 9, topics=[{"name": "t"}])
        listed = sorted(f"{b.host}:{b.port}" for b in response.brokers)
        assert listed == sorted(addresses)
        assert sorted(b.node_id for b in response.brokers) == [1, 2, 3]
        assert {p.leader_id for p in response.topics[0].partitions} <= {1, 2, 3}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_cli_node_configs_use_consecutive_ports_and_ids() -> None:
    from minibroker.cli import node_configs
    from minibroker.config import BrokerConfig

    config = BrokerConfig(
        {
            "node.id": "5",
            "listeners": "PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners": "PLAINTEXT://kafka:19092",
        }
    )
    nodes = node_configs(config, 3)
    assert [node.node_id for node in nodes] == [5, 6, 7]
    assert [node.listeners[0].port for node in nodes] == [9092, 9093, 9094]
    assert [node.advertised_listeners[0].port for node in nodes] == [19092, 19093, 19094]


async def test_async_cluster_nodes_go_down_and_up_with_async_hooks() -> None:
    async with AsyncKafkaCluster(nodes=2, storage="memory") as cluster:
        cluster.create_topic("t", partitions=2)
        seen: list[int] = []

        async def on_metadata(call: Call) -> None:
            seen.append(call.node_id)

        cluster.control(ApiKey.Metadata, on_metadata, keep=True)
        address = cluster.address(2)
        await cluster.stop_node(2)
        # partition 1's only replica is on node 2: offline until it starts again
        assert cluster.live_nodes == [1] and cluster.leader("t", 1) == -1
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
        await producer.start()
        try:
            await producer.send_and_wait("t", b"v", partition=0)
        finally:
            await producer.stop()
        await cluster.start_node(2)
        assert cluster.address(2) == address and cluster.live_nodes == [1, 2]
        assert cluster.leader("t", 1) == 2
        assert cluster.values("t", partition=0) == [b"v"]
        assert seen and set(seen) == {1}
