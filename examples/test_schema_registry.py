"""Avro with confluent-kafka's serializers against minibroker's built-in Schema Registry:
no second service. Run with `pytest examples/test_schema_registry.py` (minibroker and
confluent-kafka[avro,schemaregistry] installed)."""

import json

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}


def test_orders_round_trip_as_avro(kafka_broker):
    registry = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    context = SerializationContext("orders", MessageField.VALUE)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    serialize = AvroSerializer(registry, json.dumps(ORDER))
    producer.produce("orders", serialize({"id": 1, "item": "tea"}, context))
    producer.flush(10)

    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": "billing",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["orders"])
    message = None
    while message is None or message.error():
        message = consumer.poll(1)
    consumer.close()
    assert AvroDeserializer(registry)(message.value(), context) == {"id": 1, "item": "tea"}


def test_an_incompatible_change_is_refused(kafka_broker):
    registry = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    registry.register_schema("orders-value", Schema(json.dumps(ORDER), "AVRO"))
    with_price = dict(ORDER, fields=[*ORDER["fields"], {"name": "price", "type": "double"}])
    with pytest.raises(SchemaRegistryError) as refused:  # BACKWARD: new fields need a default
        registry.register_schema("orders-value", Schema(json.dumps(with_price), "AVRO"))
    assert refused.value.http_status_code == 409
