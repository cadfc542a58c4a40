"""The JSON Schema format: parsing (jsonschema's draft validation, `$ref`s resolved through
references), Confluent's canonical and normalised texts, and Confluent's SchemaDiff rules of
compatibility (STRICT policy), with its error messages."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from minibroker.registry.formats.avro import AVRO_FORMAT
from minibroker.registry.formats.base import InvalidSchema
from minibroker.registry.formats.json_schema import JSON_FORMAT, ParsedJsonSchema

USER = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "User",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}
CLOSED = {"additionalProperties": False}
ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}}}
CUSTOMER = {"type": "object", "properties": {"address": {"$ref": "address.json"}}}


def parse(schema: Any, references: dict[str, str] | None = None) -> ParsedJsonSchema:
    return JSON_FORMAT.parse(json.dumps(schema), references or {})


def error_types(writer: Any, reader: Any) -> list[str]:
    """Confluent's error types of reading data written with `writer` with `reader`."""
    errors = parse(reader).reading_errors(parse(writer))
    return [re.findall(r'^\{errorType:"(\w+)"', error)[0] for error in errors]


def obj(properties: dict[str, Any], *required: str, **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **extra}


# --- canonical texts ---


def test_canonical_is_compact_json_keeping_key_order() -> None:
    text = """{
      "type": "object",
      "properties": {
        "b": {"type": "string"},
        "a": {"type": "number"}
      }
    }"""
    assert parse(json.loads(text)).canonical() == (
        '{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}'
    )
    assert (
        JSON_FORMAT.parse(text, {}).canonical()
        == JSON_FORMAT.parse(json.dumps(json.loads(text), indent=8), {}).canonical()
    )


def test_reordered_keys_differ_in_canonical_but_not_in_normalized_text() -> None:
    one = parse({"type": "string", "maxLength": 3})
    other = parse({"maxLength": 3, "type": "string"})
    assert one.canonical() != other.canonical()
    assert one.normalized() == other.normalized() == '{"maxLength":3,"type":"string"}'


def test_canonical_keeps_non_ascii_text_and_formats_answer_it() -> None:
    schema = parse({"description": "prénom 名前", "type": "string"})
    assert schema.canonical() == '{"description":"prénom 名前","type":"string"}'
    assert schema.formatted(None) == schema.formatted("") == schema.canonical()
    assert schema.formatted("serialized") == schema.canonical()
    assert schema.schema_type == "JSON"


def test_boolean_schemas_parse() -> None:
    assert parse(True).canonical() == "true"
    assert parse(False).canonical() == "false"


def test_confluent_kafka_json_serializer_takes_the_canonical_text() -> None:
    canonical = parse(USER).canonical()
    # Its constructor parses the schema text; the client is not contacted before serializing.
    client = SchemaRegistryClient({"url": "http://127.0.0.1:9"})
    serializer = JSONSerializer(canonical, client)
    assert serializer._parsed_schema == USER
    # Then it validates values as here: the validator class for the schema's $schema.
    validator_class = validator_for(json.loads(canonical))
    validator_class.check_schema(json.loads(canonical))
    validator = validator_class(json.loads(canonical))
    assert validator.is_valid({"name": "ada", "age": 36})
    assert not validator.is_valid({"age": 36})
    assert not validator.is_valid({"name": "ada", "age": -1})


def test_references_validate_instances_as_the_json_serializer_resolves_them() -> None:
    address = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    order = {"type": "object", "properties": {"ship_to": {"$ref": "address.json"}}}
    references = {"address.json": parse(address).canonical()}
    canonical = parse(order, references).canonical()
    # confluent-kafka registers each reference's text under its name in a referencing Registry.
    registry: Registry[Any] = Registry().with_resource(
        "address.json",
        Resource.from_contents(
            json.loads(references["address.json"]), default_specification=DRAFT7
        ),
    )
    jsonschema.validate({"ship_to": {"city": "Oslo"}}, json.loads(canonical), registry=registry)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ship_to": {"zip": 1}}, json.loads(canonical), registry=registry)


# --- invalid schemas ---


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ('{"type": "string"', "Invalid JSON"),
        ("[1, 2]", "expected an object or boolean"),
        ('"string"', "expected an object or boolean"),
        ('{"type": "strng"}', "#/type"),
        ('{"minLength": -1}', "#/minLength"),
        ('{"properties": {"a": {"type": 3}}}', "#/properties/a/type"),
        ('{"required": "name"}', "#/required"),
        ('{"type": "string", "pattern": "("}', "#/pattern"),
        ('{"$ref": "customer.json"}', "Unresolved $ref 'customer.json'"),
        ('{"$ref": "#/definitions/missing"}', "Unresolved $ref '#/definitions/missing'"),
        ('{"items": {"$ref": "https://example.com/x.json"}}', "https://example.com/x.json"),
    ],
)
def test_invalid_schemas_are_refused_with_confluents_message(text: str, detail: str) -> None:
    with pytest.raises(InvalidSchema) as refused:
        JSON_FORMAT.parse(text, {})
    assert refused.value.message.startswith("Invalid schema of type JSON, details: ")
    assert detail in refused.value.message


def test_draft_7_is_the_default_and_schema_names_another() -> None:
    draft4 = {"type": "number", "maximum": 3, "exclusiveMaximum": True}
    with pytest.raises(InvalidSchema, match="exclusiveMaximum"):
        parse(draft4)
    assert parse({"$schema": "http://json-schema.org/draft-04/schema#", **draft4})


def test_an_invalid_reference_is_refused() -> None:
    with pytest.raises(InvalidSchema, match=r"reference 'customer\.json'"):
        JSON_FORMAT.parse('{"$ref": "customer.json"}', {"customer.json": "{not json"})


def test_a_reference_whose_own_ref_does_not_resolve_is_refused() -> None:
    with pytest.raises(InvalidSchema, match=r"Unresolved \$ref 'address\.json'"):
        JSON_FORMAT.parse('{"$ref": "customer.json"}', {"customer.json": json.dumps(CUSTOMER)})


def test_deeply_nested_schemas_are_refused_not_crashing() -> None:
    text = '{"items":' * 5000 + "{}" + "}" * 5000
    with pytest.raises(InvalidSchema):
        JSON_FORMAT.parse(text, {})


# --- references ---


def test_references_resolve_transitively_and_against_the_root_id() -> None:
    references = {
        "address.json": json.dumps(ADDRESS),
        "customer.json": json.dumps(CUSTOMER),
    }
    order = {
        "$id": "https://example.com/schemas/order.json",
        "type": "object",
        "properties": {"customer": {"$ref": "customer.json"}},
    }
    assert parse(order, references).canonical() == json.dumps(order, separators=(",", ":"))
    without_id = {"type": "object", "properties": {"customer": {"$ref": "customer.json"}}}
    assert parse(without_id, references)


def test_a_type_changed_inside_a_reference_is_incompatible() -> None:
    order = {"type": "object", "properties": {"address": {"$ref": "address.json"}}}
    old = parse(order, {"address.json": json.dumps(ADDRESS)})
    new_address = {"type": "object", "properties": {"city": {"type": "integer"}}}
    new = parse(order, {"address.json": json.dumps(new_address)})
    assert new.reading_errors(old) == [
        '{errorType:"TYPE_CHANGED", description:"A type at path '
        "'#/properties/address/properties/city' is different between the %s schema and "
        "the %s schema'}"
    ]
    assert old.reading_errors(old) == []


def test_local_definitions_resolve() -> None:
    schema = {
        "definitions": {"id": {"type": "string"}},
        "type": "object",
        "properties": {"id": {"$ref": "#/definitions/id"}},
    }
    changed = {**schema, "definitions": {"id": {"type": "number"}}}
    assert error_types(schema, changed) == ["TYPE_CHANGED"]


# --- compatibility: Confluent's SchemaDiff ---

COMPATIBILITY_CASES: list[tuple[str, Any, Any, list[str]]] = [
    # objects: content models, properties, required
    (
        "optional property added to an open content model (Confluent: STRICT refuses)",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string"}, "b": {"type": "string"}}),
        ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "property with an empty schema added to an open content model",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string"}, "b": {}}),
        [],
    ),
    (
        "optional property added to a closed content model",
        obj({"a": {"type": "string"}}, **CLOSED),
        obj({"a": {"type": "string"}, "b": {"type": "string"}}, **CLOSED),
        [],
    ),
    (
        "required property added to a closed content model",
        obj({"a": {"type": "string"}}, **CLOSED),
        obj({"a": {"type": "string"}, "b": {"type": "string"}}, "b", **CLOSED),
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
    ),
    (
        "required property with a default added to a closed content model",
        obj({"a": {"type": "string"}}, **CLOSED),
        obj({"a": {"type": "string"}, "b": {"type": "string", "default": "x"}}, "b", **CLOSED),
        [],
    ),
    (
        "required property added to an open content model",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string"}, "b": {"type": "string"}}, "b"),
        ["REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "property removed from an open content model",
        obj({"a": {"type": "string"}, "b": {"type": "string"}}),
        obj({"a": {"type": "string"}}),
        [],
    ),
    (
        "property removed from a closed content model",
        obj({"a": {"type": "string"}, "b": {"type": "string"}}, **CLOSED),
        obj({"a": {"type": "string"}}, **CLOSED),
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
    ),
    (
        "property added, covered by a partially open content model",
        obj({"a": {"type": "string"}}, additionalProperties={"type": "string"}),
        obj(
            {"a": {"type": "string"}, "b": {"type": "string"}},
            additionalProperties={"type": "string"},
        ),
        [],
    ),
    (
        "property added, not covered by a partially open content model",
        obj({"a": {"type": "string"}}, additionalProperties={"type": "string"}),
        obj(
            {"a": {"type": "string"}, "b": {"type": "integer"}},
            additionalProperties={"type": "string"},
        ),
        ["TYPE_CHANGED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
    ),
    (
        "property added, covered by patternProperties",
        obj({}, patternProperties={"^s_": {"type": "string"}}),
        obj({"s_name": {"type": "string"}}, patternProperties={"^s_": {"type": "string"}}),
        [],
    ),
    (
        "existing property made required",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string"}}, "a"),
        ["REQUIRED_ATTRIBUTE_ADDED"],
    ),
    (
        "existing property made required with a default",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string", "default": ""}}, "a"),
        [],
    ),
    (
        "required property made optional",
        obj({"a": {"type": "string"}}, "a"),
        obj({"a": {"type": "string"}}),
        [],
    ),
    (
        "additional properties refused",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "string"}}, **CLOSED),
        ["ADDITIONAL_PROPERTIES_REMOVED"],
    ),
    (
        "additional properties allowed",
        obj({"a": {"type": "string"}}, **CLOSED),
        obj({"a": {"type": "string"}}),
        [],
    ),
    (
        "additional properties narrowed to a schema",
        obj({}),
        obj({}, additionalProperties={"type": "string"}),
        ["ADDITIONAL_PROPERTIES_NARROWED"],
    ),
    ("maxProperties added", obj({}), obj({}, maxProperties=3), ["MAX_PROPERTIES_ADDED"]),
    ("minProperties decreased", obj({}, minProperties=3), obj({}, minProperties=1), []),
    (
        "minProperties increased",
        obj({}, minProperties=1),
        obj({}, minProperties=3),
        ["MIN_PROPERTIES_INCREASED"],
    ),
    (
        "dependency array added",
        obj({}),
        obj({}, dependencies={"a": ["b"]}),
        ["DEPENDENCY_ARRAY_ADDED"],
    ),
    (
        "dependency array narrowed",
        obj({}, dependencies={"a": ["b", "c"]}),
        obj({}, dependencies={"a": ["b"]}),
        [],
    ),
    (
        "dependency array extended",
        obj({}, dependencies={"a": ["b"]}),
        obj({}, dependencies={"a": ["b", "c"]}),
        ["DEPENDENCY_ARRAY_EXTENDED"],
    ),
    # types
    ("type changed", {"type": "string"}, {"type": "integer"}, ["TYPE_CHANGED"]),
    (
        "property type changed",
        obj({"a": {"type": "string"}}),
        obj({"a": {"type": "boolean"}}),
        ["TYPE_CHANGED"],
    ),
    ("integer widened to number", {"type": "integer"}, {"type": "number"}, []),
    ("number narrowed to integer", {"type": "number"}, {"type": "integer"}, ["TYPE_NARROWED"]),
    ("anything read as an empty schema", {"type": "string"}, {}, []),
    ("empty schema narrowed to a type", {}, {"type": "string"}, ["TYPE_CHANGED"]),
    ("string read as string or null", {"type": "string"}, {"type": ["string", "null"]}, []),
    (
        "string or null read as string",
        {"type": ["string", "null"]},
        {"type": "string"},
        ["TYPE_CHANGED"],
    ),
    (
        "number read as a oneOf union",
        {"type": "number"},
        {"oneOf": [{"type": "number"}, {"type": "string"}]},
        [],
    ),
    (
        "number read as a union without it",
        {"type": "number"},
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        ["TYPE_CHANGED"],
    ),
    (
        "Kafka Connect bytes of another type",
        {"type": "number", "connect.type": "bytes"},
        {"type": "string", "connect.type": "bytes"},
        [],
    ),
    # strings
    (
        "maxLength added",
        {"type": "string"},
        {"type": "string", "maxLength": 5},
        ["MAX_LENGTH_ADDED"],
    ),
    (
        "maxLength increased",
        {"type": "string", "maxLength": 5},
        {"type": "string", "maxLength": 9},
        [],
    ),
    (
        "maxLength decreased",
        {"type": "string", "maxLength": 9},
        {"type": "string", "maxLength": 5},
        ["MAX_LENGTH_DECREASED"],
    ),
    ("maxLength removed", {"type": "string", "maxLength": 9}, {"type": "string"}, []),
    (
        "minLength added",
        {"type": "string"},
        {"type": "string", "minLength": 1},
        ["MIN_LENGTH_ADDED"],
    ),
    (
        "minLength increased",
        {"type": "string", "minLength": 1},
        {"type": "string", "minLength": 2},
        ["MIN_LENGTH_INCREASED"],
    ),
    (
        "minLength decreased",
        {"type": "string", "minLength": 2},
        {"type": "string", "minLength": 1},
        [],
    ),
    ("pattern added", {"type": "string"}, {"type": "string", "pattern": "^a"}, ["PATTERN_ADDED"]),
    (
        "pattern changed",
        {"type": "string", "pattern": "^a"},
        {"type": "string", "pattern": "^b"},
        ["PATTERN_CHANGED"],
    ),
    ("pattern removed", {"type": "string", "pattern": "^a"}, {"type": "string"}, []),
    # numbers
    ("maximum added", {"type": "number"}, {"type": "number", "maximum": 10}, ["MAXIMUM_ADDED"]),
    (
        "maximum decreased",
        {"type": "number", "maximum": 10},
        {"type": "number", "maximum": 5},
        ["MAXIMUM_DECREASED"],
    ),
    ("maximum increased", {"type": "number", "maximum": 5}, {"type": "number", "maximum": 10}, []),
    (
        "minimum increased",
        {"type": "number", "minimum": 0},
        {"type": "number", "minimum": 1},
        ["MINIMUM_INCREASED"],
    ),
    ("minimum removed", {"type": "number", "minimum": 0}, {"type": "number"}, []),
    (
        "exclusiveMinimum added",
        {"type": "number"},
        {"type": "number", "exclusiveMinimum": 0},
        ["EXCLUSIVE_MINIMUM_ADDED"],
    ),
    (
        "exclusiveMaximum decreased",
        {"type": "number", "exclusiveMaximum": 9},
        {"type": "number", "exclusiveMaximum": 3},
        ["EXCLUSIVE_MAXIMUM_DECREASED"],
    ),
    (
        "multipleOf expanded",
        {"type": "number", "multipleOf": 2},
        {"type": "number", "multipleOf": 4},
        ["MULTIPLE_OF_EXPANDED"],
    ),
    (
        "multipleOf reduced",
        {"type": "number", "multipleOf": 4},
        {"type": "number", "multipleOf": 2},
        [],
    ),
    (
        "multipleOf reduced in decimals",
        {"type": "number", "multipleOf": 0.5},
        {"type": "number", "multipleOf": 0.25},
        [],
    ),
    (
        "multipleOf changed",
        {"type": "number", "multipleOf": 2},
        {"type": "number", "multipleOf": 3},
        ["MULTIPLE_OF_CHANGED"],
    ),
    # enums and consts
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, []),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, ["ENUM_ARRAY_NARROWED"]),
    ("enum changed", {"enum": ["a", "b"]}, {"enum": ["a", "c"]}, ["ENUM_ARRAY_CHANGED"]),
    ("enum of 1 is not enum of true", {"enum": [1]}, {"enum": [True]}, ["ENUM_ARRAY_CHANGED"]),
    ("const changed", {"const": "a"}, {"const": "b"}, ["ENUM_ARRAY_CHANGED"]),
    # arrays
    (
        "items type changed",
        {"type": "array", "items": {"type": "string"}},
        {"type": "array", "items": {"type": "number"}},
        ["TYPE_CHANGED"],
    ),
    (
        "items schema added",
        {"type": "array"},
        {"type": "array", "items": {"type": "number"}},
        ["SCHEMA_ADDED"],
    ),
    ("items schema removed", {"type": "array", "items": {"type": "number"}}, {"type": "array"}, []),
    (
        "maxItems decreased",
        {"type": "array", "maxItems": 5},
        {"type": "array", "maxItems": 2},
        ["MAX_ITEMS_DECREASED"],
    ),
    ("minItems decreased", {"type": "array", "minItems": 5}, {"type": "array", "minItems": 2}, []),
    (
        "uniqueItems added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        ["UNIQUE_ITEMS_ADDED"],
    ),
    ("uniqueItems removed", {"type": "array", "uniqueItems": True}, {"type": "array"}, []),
    (
        "tuple item added to an open array",
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
        ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    (
        "tuple item added to a closed array",
        {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
        {
            "type": "array",
            "items": [{"type": "string"}, {"type": "number"}],
            "additionalItems": False,
        },
        [],
    ),
    (
        "tuple item removed from a closed array",
        {
            "type": "array",
            "items": [{"type": "string"}, {"type": "number"}],
            "additionalItems": False,
        },
        {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
        ["ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
    ),
    (
        "additional items refused",
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
        ["ADDITIONAL_ITEMS_REMOVED"],
    ),
    # combined types
    (
        "oneOf extended",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]},
        [],
    ),
    (
        "oneOf narrowed",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "string"}]},
        ["SUM_TYPE_NARROWED"],
    ),
    (
        "oneOf member changed",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
        ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"],
    ),
    (
        "oneOf reordered",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "number"}, {"type": "string"}]},
        [],
    ),
    (
        "oneOf read as anyOf",
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        {"anyOf": [{"type": "string"}, {"type": "number"}]},
        [],
    ),
    (
        "anyOf read as oneOf",
        {"anyOf": [{"type": "string"}, {"type": "number"}]},
        {"oneOf": [{"type": "string"}, {"type": "number"}]},
        ["COMBINED_TYPE_CHANGED"],
    ),
    (
        "allOf read as one of its parts",
        {"allOf": [{"type": "string"}, {"maxLength": 3}]},
        {"type": "string"},
        [],
    ),
    (
        "allOf extended",
        {"allOf": [{"type": "string"}]},
        {"allOf": [{"type": "string"}, {"maxLength": 3}]},
        ["PRODUCT_TYPE_EXTENDED"],
    ),
    ("not narrowed", {"not": {"type": "string"}}, {"not": {"type": "string", "maxLength": 3}}, []),
    (
        "not extended",
        {"not": {"type": "string", "maxLength": 3}},
        {"not": {"type": "string"}},
        ["NOT_TYPE_EXTENDED"],
    ),
]


@pytest.mark.parametrize(
    ("writer", "reader", "errors"),
    [case[1:] for case in COMPATIBILITY_CASES],
    ids=[case[0] for case in COMPATIBILITY_CASES],
)
def test_compatibility_follows_confluents_schema_diff(
    writer: Any, reader: Any, errors: list[str]
) -> None:
    assert error_types(writer, reader) == errors


def test_every_schema_reads_its_own_data() -> None:
    for _, writer, reader, _ in COMPATIBILITY_CASES:
        assert error_types(writer, writer) == []
        assert error_types(reader, reader) == []


def test_messages_have_confluents_shape_with_the_path() -> None:
    writer = obj({"a": {"type": "string"}}, **CLOSED)
    reader = obj({"a": {"type": "string", "maxLength": 4}, "b": {"type": "string"}}, "b", **CLOSED)
    assert parse(reader).reading_errors(parse(writer)) == [
        '{errorType:"MAX_LENGTH_ADDED", description:"The keyword at path '
        "'#/properties/a/maxLength' in the %s schema is not present in the %s schema'}",
        '{errorType:"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", description:"The %s '
        "schema has an unopen content model and has a required property at path "
        "'#/properties/b' which is missing in the %s schema'}",
    ]


def test_self_is_the_reader_and_the_argument_the_writer() -> None:
    loose = parse({"type": "string"})
    strict = parse({"type": "string", "maxLength": 4})
    # BACKWARD: the new (strict) schema reads what the old (loose) one wrote: refused.
    assert len(strict.reading_errors(loose)) == 1
    # FORWARD: the old (loose) schema reads what the new (strict) one writes: fine.
    assert loose.reading_errors(strict) == []


def test_another_schema_type_cannot_be_read() -> None:
    avro = AVRO_FORMAT.parse('"string"', {})
    assert parse({"type": "string"}).reading_errors(avro) == [
        "Incompatible because of different schema type"
    ]


# --- recursive schemas and newer drafts ---


def linked_list(value_type: str) -> dict[str, Any]:
    node = obj({"value": {"type": value_type}, "next": {"$ref": "#/definitions/node"}})
    return {"definitions": {"node": node}, "$ref": "#/definitions/node"}


def test_recursive_schemas_compare_and_changes_deep_inside_are_found() -> None:
    assert error_types(linked_list("string"), linked_list("string")) == []
    assert "TYPE_CHANGED" in error_types(linked_list("string"), linked_list("integer"))


def circular_union(branches: int, properties: int) -> dict[str, Any]:
    """Confluent's CircularRefSchemaDiffTest shape: oneOf branches whose properties refer back
    to a union containing the oneOf."""
    definitions: dict[str, Any] = {
        "Id": obj({"id": {"type": "string"}}, "id"),
        "Base": obj({"name": {"type": "string"}}),
        "ProductOrId": {"oneOf": [{"$ref": "#/$defs/Id"}, {"$ref": "#/$defs/Product"}]},
        "Product": {"oneOf": [{"$ref": f"#/$defs/Type{i}"} for i in range(branches)]},
    }
    for i in range(branches):
        refs = {f"ref{p}": {"$ref": "#/$defs/ProductOrId"} for p in range(properties)}
        tag = {"tag": {"type": "string", "const": f"type{i}"}}
        definitions[f"Type{i}"] = {"$ref": "#/$defs/Base", **obj({**refs, **tag}, "ref0", "tag")}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": definitions,
        "$ref": "#/$defs/Product",
    }


def test_schemas_referring_to_one_another_through_unions_compare() -> None:
    schema = parse(circular_union(12, 5))
    assert schema.reading_errors(schema) == []


def test_draft_2020_12_tuples_and_unevaluated_properties() -> None:
    draft = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    pair = {**draft, "type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}
    single = {**draft, "type": "array", "prefixItems": [{"type": "string"}], "items": False}
    assert error_types(single, pair) == []
    assert error_types(pair, single) == [
        "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ADDITIONAL_ITEMS_REMOVED",
    ]
    open_object = {**draft, **obj({"a": {"type": "string"}})}
    sealed = {**open_object, "unevaluatedProperties": False}
    assert error_types(open_object, sealed) == ["UNEVALUATED_PROPERTIES_REMOVED"]
    assert error_types(sealed, open_object) == []


def string_ref_with_max_length(dialect: str, max_length: int) -> dict[str, Any]:
    return {
        "$schema": dialect,
        "definitions": {"s": {"type": "string"}},
        "$ref": "#/definitions/s",
        "maxLength": max_length,
    }


def test_keywords_beside_a_ref_apply_since_2019_09_only() -> None:
    modern, draft7 = (
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema#",
    )
    assert error_types(
        string_ref_with_max_length(modern, 3), string_ref_with_max_length(modern, 2)
    ) == ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]
    assert (
        error_types(string_ref_with_max_length(modern, 2), string_ref_with_max_length(modern, 3))
        == []
    )
    assert (
        error_types(string_ref_with_max_length(draft7, 3), string_ref_with_max_length(draft7, 2))
        == []
    )
