"""The Schema Registry inside the broker (docs/features/schema-registry.md): confluent-kafka's
Avro serializer registers the schema and produces against minibroker alone."""

import json

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def test_avro_producer(kafka_broker):
    # With `minibroker serve --schema-registry 127.0.0.1:8081` the url is http://127.0.0.1:8081.
    registry = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    order = {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
    }
    serialize = AvroSerializer(registry, json.dumps(order))  # registers "orders-value"
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    value = serialize({"id": 1, "item": "tea"}, SerializationContext("orders", MessageField.VALUE))
    producer.produce("orders", value)
    producer.flush(30)

    assert registry.get_latest_version("orders-value").version == 1
    assert len(kafka_broker.values("orders")) == 1
