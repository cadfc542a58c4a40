"""The web console decodes values in Confluent's wire format through the broker's Schema
Registry: Avro, JSON Schema and Protobuf values written by confluent-kafka's serializers show
as their decoded fields (API and HTML), and values it cannot decode show as before."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.request import urlopen

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import struct_pb2

from minibroker.testing.cluster import KafkaBroker


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(console=True, schema_registry=True) as started:
        yield started


def _produce(broker: KafkaBroker, topic: str, values: list[bytes | None]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def _browse(broker: KafkaBroker, topic: str) -> list[dict[str, Any]]:
    url = f"{broker.console_url}/api/topics/{topic}/messages?partition=0&from=beginning"
    with urlopen(url, timeout=30) as response:
        records = json.loads(response.read())["records"]
    assert isinstance(records, list)
    return records


def _context(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_avro_and_json_values_are_shown_decoded(broker: KafkaBroker) -> None:
    client = SchemaRegistryClient({"url": broker.schema_registry_url})
    topic = f"mixed-{uuid.uuid4().hex[:8]}"
    avro_schema = {"type": "record", "name": "Reading", "fields": [
        {"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}]}  # fmt: skip
    avro_value = AvroSerializer(client, json.dumps(avro_schema))(
        {"sensor": "t1", "value": 21.5}, _context(topic)
    )
    client.set_compatibility(f"{topic}-value", "NONE")  # AVRO then JSON in one subject
    json_schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    json_value = JSONSerializer(json.dumps(json_schema), client)({"ok": True}, _context(topic))
    assert avro_value is not None and json_value is not None
    unknown_id = b"\x00\x00\x01\x86\xa0" + b"payload"
    _produce(broker, topic, [avro_value, json_value, b"plain text", unknown_id])
    avro_record, json_record, plain, unknown = (r["value"] for r in _browse(broker, topic))
    assert json.loads(avro_record["json"]) == {"sensor": "t1", "value": 21.5}
    assert avro_record["schema"]["type"] == "AVRO"
    assert avro_record["schema"]["subject"] == f"{topic}-value"
    assert json.loads(json_record["json"]) == {"ok": True}
    assert json_record["schema"]["type"] == "JSON"
    assert plain["utf8"] == "plain text" and "schema" not in plain
    assert "schema" not in unknown


def test_protobuf_values_are_shown_decoded_and_in_the_page(broker: KafkaBroker) -> None:
    client = SchemaRegistryClient({"url": broker.schema_registry_url})
    topic = f"proto-{uuid.uuid4().hex[:8]}"
    serializer = ProtobufSerializer(struct_pb2.Value, client, {"use.deprecated.format": False})
    value = serializer(struct_pb2.Value(string_value="hello"), _context(topic))
    _produce(broker, topic, [value])
    [record] = _browse(broker, topic)
    assert record["value"]["schema"]["type"] == "PROTOBUF"
    # google.protobuf.Value's JSON mapping is the bare value.
    assert json.loads(record["value"]["json"]) == "hello"
    with urlopen(f"{broker.console_url}/topics/{topic}/messages", timeout=30) as response:
        page = response.read().decode()
    schema_id = record["value"]["schema"]["id"]
    assert f'data-schema-id="{schema_id}" data-schema-type="PROTOBUF"' in page
    assert "&quot;hello&quot;" in page
