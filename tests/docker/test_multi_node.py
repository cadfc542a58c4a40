"""`--nodes 3` in one container, on a real Docker engine: three brokers (node ids 1-3) on
consecutive ports, each advertising its own published port, so replication tests run from any
language against one `docker run`.

The container is on Docker's default bridge with ports 9092-9094 published on 127.0.0.1
(consecutive free host ports); confluent-kafka sees the three brokers, creates a topic with
three replicas, produces with acks=all and reads the records back in a consumer group.
"""

from __future__ import annotations

import socket
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tests.docker import engine
from tests.docker.conftest import Containers
from tests.docker.test_image import CLIENT_TIMEOUT_S
from tests.docker.test_testcontainers import consume_in_group, produce

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NODES = 3
CONTAINER_PORT = 9092


def consecutive_free_ports(count: int) -> int:
    """The first of `count` consecutive ports free on 127.0.0.1."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = int(probe.getsockname()[1])
        if first + count > 65535:
            continue
        sockets = [socket.socket() for _ in range(count)]
        try:
            for offset, sock in enumerate(sockets):
                sock.bind(("127.0.0.1", first + offset))
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise AssertionError(f"no {count} consecutive free ports")


def wait_for_brokers(bootstrap: str, count: int) -> set[tuple[int, str]]:
    deadline = time.monotonic() + CLIENT_TIMEOUT_S
    while True:
        try:
            metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
            brokers = {(b.id, f"{b.host}:{b.port}") for b in metadata.brokers.values()}
            if len(brokers) == count or time.monotonic() > deadline:
                return brokers
        except Exception:  # not answering yet
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


def test_three_nodes_in_one_container(containers: Containers) -> None:
    first = consecutive_free_ports(NODES)
    name = f"minibroker-e2e-{uuid.uuid4().hex[:12]}"
    containers.names.append(name)
    ports = [
        arg
        for node in range(NODES)
        for arg in ("-p", f"127.0.0.1:{first + node}:{CONTAINER_PORT + node}")
    ]
    engine.docker(
        "run",
        "--detach",
        "--name",
        name,
        *ports,
        "--env",
        f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{first}",
        "--env",
        f"KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:{CONTAINER_PORT}",
        containers.image,
        "--nodes",
        str(NODES),
    )
    bootstrap = f"127.0.0.1:{first}"
    expected = {(node + 1, f"127.0.0.1:{first + node}") for node in range(NODES)}
    assert wait_for_brokers(bootstrap, NODES) == expected, engine.logs(name)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "replicated"
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=NODES)])
    futures[topic].result(timeout=CLIENT_TIMEOUT_S)
    partition = admin.list_topics(topic, timeout=CLIENT_TIMEOUT_S).topics[topic].partitions[0]
    assert sorted(partition.replicas) == [1, 2, 3]

    values = [b"replicated-%d" % i for i in range(10)]
    produce(bootstrap, topic, values)  # librdkafka's default acks=all: every replica has them
    other_node = f"127.0.0.1:{first + 2}"
    assert consume_in_group(other_node, topic, len(values)) == values
