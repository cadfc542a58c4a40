"""The schema formats the registry serves: Avro, JSON Schema and Protobuf.

Each format module offers a `SchemaFormat` (base.py): `parse(text, references)` into a
ParsedSchema, raising InvalidSchema with Confluent's message. `format_for` imports a format's
module (and its library) the first time a schema of that type is seen.
"""

from __future__ import annotations

from minibroker.registry.formats.base import SchemaFormat

SCHEMA_TYPES = ("JSON", "PROTOBUF", "AVRO")


def format_for(schema_type: str) -> SchemaFormat | None:
    """The format of a `schemaType` (AVRO, JSON, PROTOBUF), None for any other."""
    if schema_type == "AVRO":
        from minibroker.registry.formats.avro import AVRO_FORMAT

        return AVRO_FORMAT
    if schema_type == "JSON":
        from minibroker.registry.formats.json_schema import JSON_FORMAT

        return JSON_FORMAT
    if schema_type == "PROTOBUF":
        from minibroker.registry.formats.protobuf import PROTOBUF_FORMAT

        return PROTOBUF_FORMAT
    return None
