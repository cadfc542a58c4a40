"""Avro schemas: parsed by Apache Avro's own Python library, compared by its
ReaderWriterCompatibilityChecker (the port of Java's SchemaCompatibility that Confluent's
registry applies).

The canonical text is the schema as Java's `Schema.toString()` prints it, which is what
Confluent's registry stores and serves: compact JSON, attributes in Java's order (type, name,
namespace, doc, fields/symbols/items/values/size, then the rest), a primitive without
attributes as its bare name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import avro.compatibility
import avro.errors
import avro.name
import avro.schema

from minibroker.registry.formats.base import InvalidSchema, ParsedSchema

_JAVA_ATTRIBUTE_ORDER = [
    "type",
    "name",
    "namespace",
    "doc",
    "fields",
    "symbols",
    "items",
    "values",
    "size",
    "default",
    "order",
    "aliases",
]
_KEY_ORDER = {key: rank for rank, key in enumerate(_JAVA_ATTRIBUTE_ORDER)}
_FIELD_KEY_ORDER = {key: rank for rank, key in enumerate(["name", "type", "doc", "default"])}
_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}

_DESCRIPTIONS = {
    "name_mismatch": "The type (path '{location}') of a field in the new schema does not match "
    "with the old schema",
    "fixed_size_mismatch": "The size of FIXED type field at path '{location}' in the new schema "
    "does not match with the old schema",
    "missing_enum_symbols": "The new schema is missing enum symbols '{info}' at path "
    "'{location}' in the old schema",
    "reader_field_missing_default_value": "The field '{info}' at path '{location}' in the new "
    "schema has no default value and is missing in the old schema",
    "type_mismatch": "The type (path '{location}') of a field in the new schema does not match "
    "with the old schema",
    "missing_union_branch": "The new schema is missing a type inside a union field at path "
    "'{location}' in the old schema",
}


def _ordered(node: Any, key_order: Mapping[str, int] = _KEY_ORDER) -> Any:
    if isinstance(node, list):
        return [_ordered(item) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"type"} and node["type"] in _PRIMITIVES:
        return node["type"]
    ordered: dict[str, Any] = {}
    for key in sorted(node, key=lambda name: key_order.get(name, len(key_order))):
        value = node[key]
        if key == "fields" and isinstance(value, list):
            ordered[key] = [_ordered(field, _FIELD_KEY_ORDER) for field in value]
        elif key in ("default", "symbols", "aliases"):
            ordered[key] = value
        else:
            ordered[key] = _ordered(value)
    return ordered


def _compact(node: Any) -> str:
    return json.dumps(node, separators=(",", ":"), ensure_ascii=False)


class AvroSchema:
    schema_type = "AVRO"

    def __init__(self, document: Any, parsed: avro.schema.Schema) -> None:
        self.document = document
        self.parsed = parsed

    def canonical(self) -> str:
        return _compact(_ordered(self.document))

    def normalized(self) -> str:
        return _compact(json.loads(self.parsed.canonical_form))

    def formatted(self, fmt: str | None) -> str:
        return self.canonical()

    def reading_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, AvroSchema):
            return [
                f"{{errorType:'TYPE_MISMATCH', description:'{writer.schema_type} is not AVRO'}}"
            ]
        checker = avro.compatibility.ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
        result = checker.get_compatibility(self.parsed, writer.parsed)
        if result.compatibility != avro.compatibility.SchemaCompatibilityType.compatible:
            return _describe(result)
        return []


def _describe(result: avro.compatibility.SchemaCompatibilityResult) -> list[str]:
    location = ", ".join(sorted(result.locations))
    info = ", ".join(sorted(str(message) for message in result.messages))
    described = []
    for kind in dict.fromkeys(item.value for item in result.incompatibilities):
        description = _DESCRIPTIONS[kind].format(location=location, info=info)
        described.append(
            f"{{errorType:'{kind.upper()}', description:'{description}', additionalInfo:'{info}'}}"
        )
    return described


class AvroFormat:
    def parse(self, text: str, references: Mapping[str, str]) -> AvroSchema:
        names = avro.name.Names(validate_names=True)
        try:
            for name, referenced in references.items():
                avro.schema.make_avsc_object(json.loads(referenced), names)
                if not names.has_name(name, None):
                    raise InvalidSchema(f"Invalid schema: reference '{name}' names no type")
            document = json.loads(text)
            parsed = avro.schema.make_avsc_object(document, names)
        except json.JSONDecodeError as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc}") from exc
        except (avro.errors.AvroException, TypeError, ValueError, AttributeError) as exc:
            raise InvalidSchema(f"Invalid schema {text}: {exc}") from exc
        return AvroSchema(document, parsed)


AVRO_FORMAT = AvroFormat()
