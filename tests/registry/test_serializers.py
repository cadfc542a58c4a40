"""confluent-kafka's own Schema Registry client and serializers against minibroker alone: Avro,
JSON Schema and Protobuf values (and keys) produced through the broker and read back through
the deserializers, schema evolution refused (409) under BACKWARD and accepted under NONE, and
ids kept across a broker restart; the pytest fixture's registry is per test."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from minibroker.testing.cluster import KafkaBroker

USER_AVRO = {
    "type": "record",
    "name": "User",
    "namespace": "example",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "favorite_number", "type": ["null", "int"], "default": None},
    ],
}
USER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(schema_registry=True) as started:
        yield started


@pytest.fixture
def client(broker: KafkaBroker) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": broker.schema_registry_url})


@pytest.fixture
def topic() -> str:
    return f"people-{uuid.uuid4().hex[:10]}"


def round_trip(
    broker: KafkaBroker,
    topic: str,
    values: list[Any],
    serialize: Callable[[Any, SerializationContext], bytes | None],
    deserialize: Callable[[bytes | None, SerializationContext], Any],
) -> list[Any]:
    """Produce the serialized values to the topic and read them back deserialized."""
    context = SerializationContext(topic, MessageField.VALUE)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value in values:
        producer.produce(topic, serialize(value, context))
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    read: list[Any] = []
    try:
        for _ in range(60):
            message = consumer.poll(1)
            if message is not None and not message.error():
                read.append(deserialize(message.value(), context))
            if len(read) == len(values):
                break
    finally:
        consumer.close()
    return read


def test_avro_round_trip(broker: KafkaBroker, client: SchemaRegistryClient, topic: str) -> None:
    serializer = AvroSerializer(client, json.dumps(USER_AVRO))
    deserializer = AvroDeserializer(client)
    users = [{"name": "ann", "favorite_number": 7}, {"name": "bob", "favorite_number": None}]
    assert round_trip(broker, topic, users, serializer, deserializer) == users
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1
    assert json.loads(latest.schema.schema_str) == USER_AVRO


def test_avro_keys_and_values_use_their_own_subjects(
    broker: KafkaBroker, client: SchemaRegistryClient, topic: str
) -> None:
    key_serializer = AvroSerializer(client, json.dumps({"type": "string"}))
    value_serializer = AvroSerializer(client, json.dumps(USER_AVRO))
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(
        topic,
        key=key_serializer("k1", SerializationContext(topic, MessageField.KEY)),
        value=value_serializer({"name": "cy"}, SerializationContext(topic, MessageField.VALUE)),
    )
    assert producer.flush(30) == 0
    assert {f"{topic}-key", f"{topic}-value"} <= set(client.get_subjects())


def test_json_schema_round_trip(
    broker: KafkaBroker, client: SchemaRegistryClient, topic: str
) -> None:
    serializer = JSONSerializer(json.dumps(USER_JSON), client)
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    users = [{"name": "ann", "age": 31}, {"name": "bob"}]
    assert round_trip(broker, topic, users, serializer, deserializer) == users
    registered = client.get_latest_version(f"{topic}-value")
    assert registered.schema.schema_type == "JSON"
    assert json.loads(registered.schema.schema_str) == USER_JSON


def _protobuf_classes(package: str) -> tuple[type[Message], type[Message]]:
    """User (in user.proto, importing address.proto) and Address message classes, built from
    descriptors as protoc's generated code would."""
    address = descriptor_pb2.FileDescriptorProto(
        name=f"{package}/address.proto", package=package, syntax="proto3"
    )
    address_message = address.message_type.add(name="Address")
    address_message.field.add(name="city", number=1, type=9, label=1)
    user = descriptor_pb2.FileDescriptorProto(
        name=f"{package}/user.proto",
        package=package,
        syntax="proto3",
        dependency=[f"{package}/address.proto"],
    )
    user_message = user.message_type.add(name="User")
    user_message.field.add(name="name", number=1, type=9, label=1)
    user_message.field.add(name="age", number=2, type=5, label=1)
    user_message.field.add(
        name="address", number=3, type=11, label=1, type_name=f".{package}.Address"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(address)
    pool.Add(user)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.User")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Address")),
    )


def test_protobuf_round_trip_with_an_imported_file(
    broker: KafkaBroker, client: SchemaRegistryClient, topic: str
) -> None:
    package = f"example{uuid.uuid4().hex[:8]}"
    user_class, address_class = _protobuf_classes(package)
    serializer = ProtobufSerializer(user_class, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(user_class, {"use.deprecated.format": False})
    users = [
        user_class(name="ann", age=31, address=address_class(city="Oslo")),
        user_class(name="bob"),
    ]
    assert round_trip(broker, topic, users, serializer, deserializer) == users
    value_subject = client.get_latest_version(f"{topic}-value")
    assert value_subject.schema.schema_type == "PROTOBUF"
    [reference] = value_subject.schema.references
    assert reference.name == f"{package}/address.proto"
    assert "message User" in value_subject.schema.schema_str
    assert f'import "{package}/address.proto"' in value_subject.schema.schema_str


def test_backward_refuses_an_incompatible_change_and_none_accepts_it(
    client: SchemaRegistryClient, topic: str
) -> None:
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(json.dumps(USER_AVRO), "AVRO"))
    required_email = dict(USER_AVRO)
    required_email["fields"] = [*USER_AVRO["fields"], {"name": "email", "type": "string"}]
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(json.dumps(required_email), "AVRO"))
    assert refused.value.http_status_code == 409
    assert refused.value.error_code == 409
    assert not client.test_compatibility(subject, Schema(json.dumps(required_email), "AVRO"))
    client.set_compatibility(subject, "NONE")
    assert client.get_compatibility(subject) == "NONE"
    new_id = client.register_schema(subject, Schema(json.dumps(required_email), "AVRO"))
    assert client.get_version(subject, 2).schema_id == new_id


def test_json_schema_incompatible_change_is_409(client: SchemaRegistryClient, topic: str) -> None:
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(json.dumps(USER_JSON), "JSON"))
    retyped = json.loads(json.dumps(USER_JSON))
    retyped["properties"]["age"] = {"type": "string"}
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(json.dumps(retyped), "JSON"))
    assert refused.value.http_status_code == 409


def test_ids_survive_a_restart(kafka_broker: KafkaBroker) -> None:
    client = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    first = client.register_schema("restart-value", Schema(json.dumps(USER_AVRO), "AVRO"))
    second = client.register_schema("restart-json", Schema(json.dumps(USER_JSON), "JSON"))
    client.set_compatibility("restart-value", "FULL")
    kafka_broker.restart()
    after = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    assert json.loads(after.get_schema(first).schema_str) == USER_AVRO
    assert after.get_schema(second).schema_type == "JSON"
    assert after.get_compatibility("restart-value") == "FULL"
    assert after.register_schema("restart-value", Schema(json.dumps(USER_AVRO), "AVRO")) == first
    third = after.register_schema("other", Schema(json.dumps({"type": "long"}), "AVRO"))
    assert third > max(first, second)


def test_each_test_gets_its_own_registry(kafka_broker: KafkaBroker) -> None:
    client = SchemaRegistryClient({"url": kafka_broker.schema_registry_url})
    assert client.get_subjects() == []
    assert client.register_schema("fresh", Schema('"string"', "AVRO")) == 1
