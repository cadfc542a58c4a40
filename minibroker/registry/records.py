"""The records of `_schemas`, in the JSON key/value format of Confluent's Schema Registry, so a
Kafka user reading the topic recognises it (and a dump of Confluent's topic loads here).

Keys (`magic` 1 for SCHEMA, 0 otherwise; `subject` null for the global CONFIG and MODE):

    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
        {"subject":"s","version":1,"id":7,"schemaType":"JSON","references":[...],
         "schema":"...","deleted":false}      (schemaType absent for AVRO; null: hard delete)
    {"keytype":"CONFIG","subject":null,"magic":0}    {"compatibilityLevel":"BACKWARD"}
    {"keytype":"MODE","subject":"s","magic":0}       {"mode":"READONLY"}
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}   {"subject":"s","version":3}
                                                    (versions up to 3 are soft deleted)
    {"keytype":"NOOP","magic":0}                      ignored
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    subject: str
    version: int
    schema_id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    deleted: bool

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"subject": self.subject, "version": self.version}
        value["id"] = self.schema_id
        if self.schema_type != "AVRO":
            value["schemaType"] = self.schema_type
        if self.references:
            value["references"] = [reference.to_json() for reference in self.references]
        value["schema"] = self.schema
        value["deleted"] = self.deleted
        return value


def _dump(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return _dump({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dump({"keytype": "MODE", "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dump({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


def schema_value(record: SchemaRecord) -> bytes:
    return _dump(record.to_json())


def config_value(level: str) -> bytes:
    return _dump({"compatibilityLevel": level})


def mode_value(mode: str) -> bytes:
    return _dump({"mode": mode})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})


def parse_references(items: Any) -> tuple[Reference, ...]:
    """References from a request or a stored value (ValueError if they are malformed)."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ValueError("references must be a list")
    references = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("a reference must be an object")
        name, subject, version = item.get("name"), item.get("subject"), item.get("version")
        if not isinstance(name, str) or not isinstance(subject, str):
            raise ValueError("a reference needs a name and a subject")
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError("a reference needs an integer version")
        references.append(Reference(name, subject, version))
    return tuple(references)


def read_schema_value(value: dict[str, Any]) -> SchemaRecord:
    return SchemaRecord(
        subject=str(value["subject"]),
        version=int(value["version"]),
        schema_id=int(value["id"]),
        schema_type=str(value.get("schemaType") or "AVRO"),
        schema=str(value["schema"]),
        references=parse_references(value.get("references")),
        deleted=bool(value.get("deleted", False)),
    )
