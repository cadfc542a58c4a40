"""The Python API without the fixtures (docs/guides/testing.md): a broker on a background
thread, a cluster on the test's own event loop, and the helpers that need no client."""

from minibroker.testing import AsyncKafkaCluster, KafkaBroker


def test_a_broker_on_a_background_thread():
    with KafkaBroker(config={"num.partitions": 3}) as kafka:
        host, _, port = kafka.bootstrap_servers.partition(":")  # "127.0.0.1:41235"
        assert host == "127.0.0.1" and int(port) > 0

        kafka.create_topic("orders", partitions=2, config={"retention.ms": "60000"})
        offset = kafka.produce("orders", b"created", key=b"order-1", partition=0)
        assert offset == 0
        assert kafka.values("orders", partition=0) == [b"created"]
        assert [r.key for r in kafka.records("orders")] == [b"order-1"]
        assert kafka.end_offsets("orders") == {0: 1, 1: 0}


async def test_a_cluster_on_the_tests_event_loop():
    async with AsyncKafkaCluster(nodes=3, storage="memory") as cluster:
        assert len(cluster.bootstrap_servers.split(",")) == 3  # three host:port
