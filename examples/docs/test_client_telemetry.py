"""Client telemetry (KIP-714) in a test (docs/guides/testing.md): ask the clients for metrics,
then assert on what they pushed. librdkafka (confluent-kafka) pushes from 2.5 on."""

import time

from confluent_kafka import Producer


def test_producer_metrics(kafka_broker):
    kafka_broker.create_topic("orders")
    kafka_broker.set_telemetry_subscription(["org.apache.kafka.producer."], interval_ms=500)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    deadline = time.monotonic() + 30
    latency = []
    while not latency and time.monotonic() < deadline:  # run a producer until it has pushed
        producer.produce("orders", b"tea")
        producer.flush(5)
        time.sleep(0.2)
        latency = kafka_broker.telemetry_metrics(
            "org.apache.kafka.producer.node.request.latency.avg"
        )
    assert latency
    pushed = latency[0]  # a PushedMetric: client_instance_id, client_id, name, value, metric
    assert pushed.metric.kind == "gauge"
    assert pushed.metric.points[0].attributes == {"node.id": 1}
