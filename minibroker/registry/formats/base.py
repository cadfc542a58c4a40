"""What the registry needs of a schema format, whatever the format.

A format parses a schema's text (with the texts of the schemas it references) into a
ParsedSchema, which knows its canonical text (what is stored in `_schemas`, compared to find an
already registered schema, and served), its other renderings, and whether it can read data
written with another schema of its format (the primitive every compatibility level is made of:
BACKWARD asks whether the new schema reads data written with the old, FORWARD the reverse).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class InvalidSchema(Exception):
    """A schema the format cannot parse: the registry answers 422 with error code 42201 and
    this message (Confluent's: e.g. "Invalid schema ...")."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ParsedSchema(Protocol):
    @property
    def schema_type(self) -> str:
        """AVRO, JSON or PROTOBUF."""

    def canonical(self) -> str:
        """The text stored and served (whitespace and layout normalised the way Confluent's
        registry does), and compared to find an already registered schema."""

    def normalized(self) -> str:
        """The text for `normalize=true` (Confluent's normalisation: e.g. sorted, defaults
        made explicit); the canonical text where the format has nothing more to normalise."""

    def formatted(self, fmt: str | None) -> str:
        """The text for the `format` query parameter of GET /schemas/ids/{id} and
        /subjects/{s}/versions/{v}: None or "" the canonical text; for PROTOBUF "serialized"
        is the base64 FileDescriptorProto (what confluent-kafka's serializers ask for).
        Unknown formats answer the canonical text, as Confluent's registry does."""

    def reading_errors(self, writer: ParsedSchema) -> list[str]:
        """Why data written with `writer` (same format) cannot be read with this schema:
        Confluent's messages (e.g. "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE',
        description:'...', additionalInfo:'...'}"); empty when it can."""


class SchemaFormat(Protocol):
    def parse(self, text: str, references: Mapping[str, str]) -> ParsedSchema:
        """Parse `text`. `references` maps each reference's name (Avro: the full name of the
        referenced type; JSON Schema: the `$ref` URL; Protobuf: the import path) to the
        referenced schema's canonical text — every schema reached through references,
        transitively, dependencies before the schemas that use them. Raises InvalidSchema."""
