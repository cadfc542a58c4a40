"""The pytest plugin, run by pytest itself (`pytester`): fixtures, marker, async tests, xdist."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.clients

SYNC_AND_ASYNC_TESTS = """
import pytest
from kafka import KafkaProducer
from aiokafka import AIOKafkaProducer


def test_fresh_broker(kafka_broker):
    assert kafka_broker.topics() == []
    kafka_broker.create_topic("t")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    producer.send("t", b"v").get(timeout=30)
    producer.close()
    assert kafka_broker.values("t") == [b"v"]


def test_another_fresh_broker(kafka_broker):
    assert kafka_broker.topics() == []


async def test_async_test_with_the_threaded_broker(kafka_broker):
    kafka_broker.create_topic("a")
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    await producer.start()
    try:
        await producer.send_and_wait("a", b"x")
    finally:
        await producer.stop()
    assert kafka_broker.values("a") == [b"x"]


@pytest.mark.minibroker(nodes=3, storage="memory", config={"num.partitions": 6})
def test_marker_configures_the_fixture(kafka_broker):
    assert kafka_broker.node_ids == [1, 2, 3]
    assert kafka_broker.data_dir is None
    assert len(kafka_broker.bootstrap_servers.split(",")) == 3


def test_factories(kafka_broker_factory, kafka_cluster_factory):
    one = kafka_broker_factory(storage="memory")
    two = kafka_broker_factory(config={"node.id": 7})
    cluster = kafka_cluster_factory(nodes=2)
    assert one.bootstrap_servers != two.bootstrap_servers
    assert two.node_ids == [7]
    assert cluster.node_ids == [1, 2]


def test_session_broker_is_shared(kafka_session_broker, request):
    kafka_session_broker.create_topic(request.node.name)
    assert request.node.name in kafka_session_broker.topics()


def test_old_fixture_name(minibroker):
    assert minibroker.bootstrap_servers
"""


def test_fixtures_marker_and_async_tests(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\n")
    pytester.makepyfile(SYNC_AND_ASYNC_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=7)


XDIST_TESTS = """
import pytest


@pytest.mark.parametrize("n", range(8))
def test_parallel_brokers(kafka_broker, kafka_session_broker, n):
    kafka_broker.create_topic("same-name")
    kafka_broker.produce("same-name", str(n))
    assert kafka_broker.values("same-name") == [str(n).encode()]
    kafka_session_broker.create_topic(f"t{n}")
"""


def test_xdist_workers_get_their_own_brokers_and_directories(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(XDIST_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-n", "2")
    result.assert_outcomes(passed=8)
