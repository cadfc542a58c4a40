"""The registry's state — subjects, versions, schema ids, compatibility and mode settings —
rebuilt at start from `_schemas` and changed only by appending to it (records.py holds the
record formats).

`_schemas` is a one-partition compacted topic of the broker (an internal/ InternalTopic, so
written before the REST call answers and read back in log order at start); unlike Kafka's own
internal topics it is an ordinary topic clients can read, as in Confluent's registry.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from minibroker.cluster.state import Cluster
from minibroker.internal.topic import InternalTopic, KeyedRecord, ReadMarker
from minibroker.protocol.errors import ErrorCode
from minibroker.registry.errors import RegistryError
from minibroker.registry.records import Reference, SchemaRecord, read_schema_value

log = logging.getLogger(__name__)

SCHEMAS_TOPIC = "_schemas"
GLOBAL: None = None

# (schemaType, canonical text, references): what makes two registrations the same schema.
SchemaContent = tuple[str, str, tuple[Reference, ...]]


def content_of(record: SchemaRecord) -> SchemaContent:
    return record.schema_type, record.schema, record.references


class SchemaState:
    """What the `_schemas` records say, applied one by one in log order."""

    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, SchemaRecord]] = {}
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self.by_id: dict[int, SchemaRecord] = {}
        self.id_by_content: dict[SchemaContent, int] = {}
        self.max_id = 0

    def apply_record(self, key_bytes: bytes, value_bytes: bytes | None) -> None:
        """Apply one record; a malformed one (anyone may produce to `_schemas`) is skipped
        with a warning, as Confluent's store reader does."""
        try:
            key = json.loads(key_bytes)
            value = None if value_bytes is None else json.loads(value_bytes)
            if not isinstance(key, dict) or not isinstance(value, dict | None):
                raise ValueError("key and value must be JSON objects")
            self._apply(key, value)
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            log.warning("skipping a malformed %s record %r: %s", SCHEMAS_TOPIC, key_bytes, exc)

    def _apply(self, key: dict[str, Any], value: dict[str, Any] | None) -> None:
        keytype = key.get("keytype")
        subject = key.get("subject")
        if keytype == "SCHEMA":
            self._apply_schema(str(subject), int(key["version"]), value)
        elif keytype == "CONFIG":
            self._apply_setting(self.configs, subject, value, "compatibilityLevel")
        elif keytype == "MODE":
            self._apply_setting(self.modes, subject, value, "mode")
        elif keytype == "DELETE_SUBJECT" and value is not None:
            self._soft_delete_up_to(str(subject), int(value["version"]))

    def _apply_schema(self, subject: str, version: int, value: dict[str, Any] | None) -> None:
        versions = self.subjects.setdefault(subject, {})
        if value is None:
            versions.pop(version, None)
            if not versions:
                del self.subjects[subject]
            return
        record = read_schema_value(value)
        versions[version] = record
        self.by_id.setdefault(record.schema_id, record)
        self.id_by_content.setdefault(content_of(record), record.schema_id)
        self.max_id = max(self.max_id, record.schema_id)

    @staticmethod
    def _apply_setting(
        settings: dict[str | None, str],
        subject: str | None,
        value: dict[str, Any] | None,
        field: str,
    ) -> None:
        if value is None:
            settings.pop(subject, None)
        else:
            settings[subject] = str(value[field])

    def _soft_delete_up_to(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject, {})
        for number, record in list(versions.items()):
            if number <= version and not record.deleted:
                versions[number] = replace(record, deleted=True)


class SchemaStore(SchemaState):
    """The state over `_schemas`: loaded at start, each change appended before it applies."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.topic = InternalTopic(
            cluster, SCHEMAS_TOPIC, 1, cluster.config.get_int("log.segment.bytes")
        )
        self._load()

    def _load(self) -> None:
        for partition in self.topic.created_partitions():
            for item in self.topic.read(partition):
                if not isinstance(item, ReadMarker):
                    self.apply_record(item[0], item[1])

    def write(self, records: Iterable[KeyedRecord]) -> None:
        """Append the records to `_schemas`, then apply them (RegistryError 50001 if the
        append fails: nothing changes)."""
        batch = list(records)
        error = self.topic.append_records(SCHEMAS_TOPIC, batch, int(time.time() * 1000))
        if error != ErrorCode.NO_ERROR:
            raise RegistryError(50001, f"Error while writing to {SCHEMAS_TOPIC}: {error.name}")
        for key, value in batch:
            self.apply_record(key, value)

    def schema_by_id(self, schema_id: int) -> SchemaRecord | None:
        """A version holding the schema, while one exists (soft-deleted ones count)."""
        record = self.by_id.get(schema_id)
        if record is not None and self._holds(record):
            return record
        for versions in self.subjects.values():
            for candidate in versions.values():
                if candidate.schema_id == schema_id:
                    self.by_id[schema_id] = candidate
                    return candidate
        return None

    def _holds(self, record: SchemaRecord) -> bool:
        stored = self.subjects.get(record.subject, {}).get(record.version)
        return stored is not None and stored.schema_id == record.schema_id

    def versions(self, subject: str, deleted: bool) -> list[SchemaRecord]:
        """The subject's versions in order, soft-deleted ones only when `deleted`."""
        versions = self.subjects.get(subject, {})
        return [versions[n] for n in sorted(versions) if deleted or not versions[n].deleted]

    def all_records(self) -> Iterable[SchemaRecord]:
        for versions in self.subjects.values():
            yield from versions.values()
