"""Bad input to the Schema Registry never gets a 500: generated bodies (any JSON, schema-like
objects of each type, wrong field types) and raw bytes against every writing endpoint answer
a Confluent error (4xx with an error code) or succeed, and the registry keeps serving."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.testing.cluster import KafkaBroker
from tests.registry.http import Registry

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
SCHEMA_TEXTS = (
    st.text(max_size=60)
    | JSON_VALUES.map(json.dumps)
    | st.sampled_from(
        [
            '{"type":"record","name":"R","fields":[{"name":"a","type":"R"}]}',
            '{"type":"record","name":"R","fields":[{"name":"a"}]}',
            '{"type":"enum","name":"E","symbols":["A","A"]}',
            '{"type":"array"}',
            '{"$ref":"#/definitions/missing"}',
            '{"type":"object","properties":{"a":{"$ref":"other.json"}}}',
            'syntax = "proto3"; message M { int32 a = 1; int32 b = 1; }',
            'syntax = "proto3"; import "missing.proto"; message M { Missing a = 1; }',
            "Cg9kZWZhdWx0LnByb3Rv",
            "////",
        ]
    )
)
BODIES = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {"schema": SCHEMA_TEXTS},
        optional={
            "schemaType": st.sampled_from(["AVRO", "JSON", "PROTOBUF", "avro", "XML", 3]),
            "references": JSON_VALUES,
            "id": JSON_VALUES,
            "version": JSON_VALUES,
            "compatibility": JSON_VALUES,
            "mode": JSON_VALUES,
        },
    ),
)
PATHS = st.sampled_from(
    [
        ("POST", "/subjects/fuzz/versions"),
        ("POST", "/subjects/fuzz"),
        ("POST", "/compatibility/subjects/fuzz/versions/latest?verbose=true"),
        ("POST", "/compatibility/subjects/fuzz/versions"),
        ("PUT", "/config/fuzz"),
        ("PUT", "/mode/fuzz"),
        ("DELETE", "/subjects/fuzz/versions/latest"),
    ]
)


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    with KafkaBroker(schema_registry=True, storage="memory") as broker:
        started = Registry(broker.schema_registry_url)
        started.register("fuzz", {"type": "record", "name": "R", "fields": []})
        yield started


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=PATHS, body=BODIES)
def test_generated_bodies_get_confluent_errors(
    registry: Registry, path: tuple[str, str], body: Any
) -> None:
    method, target = path
    answer = registry.call(method, target, raw=json.dumps(body).encode())
    assert answer.status < 500, answer.body
    if answer.status >= 400:
        assert isinstance(answer.error_code, int) and answer.message


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=PATHS, raw=st.binary(max_size=200))
def test_raw_bytes_get_confluent_errors(
    registry: Registry, path: tuple[str, str], raw: bytes
) -> None:
    method, target = path
    answer = registry.call(method, target, raw=raw)
    assert answer.status < 500, answer.body
    assert registry.get("/subjects").status == 200
