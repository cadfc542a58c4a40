"""The first test of the testing guide (docs/guides/testing.md): the `kafka_broker` fixture."""

from kafka import KafkaProducer


def test_orders(kafka_broker):
    kafka_broker.create_topic("orders", partitions=3, config={"retention.ms": 60000})
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    producer.send("orders", b"created", partition=1).get(timeout=30)
    producer.close()
    assert kafka_broker.values("orders", partition=1) == [b"created"]
