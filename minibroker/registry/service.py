"""The registry's operations, as Confluent's Schema Registry performs them: register, look up,
read, delete (soft, then permanent), check compatibility, and the compatibility and mode
settings (global and per subject). Each raises RegistryError with Confluent's code and message;
each change is written to `_schemas` (store.py) before it answers.

Schemas are parsed in a worker thread (a Protobuf text schema runs protoc), one change at a
time under a lock, so two registrations never take the same id or version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from minibroker.registry import errors
from minibroker.registry.compatibility import (
    DEFAULT_LEVEL,
    LEVELS,
    checked_versions,
    pair_errors,
)
from minibroker.registry.formats import format_for
from minibroker.registry.formats.base import InvalidSchema, ParsedSchema
from minibroker.registry.records import (
    Reference,
    SchemaRecord,
    config_key,
    config_value,
    delete_subject_key,
    delete_subject_value,
    mode_key,
    mode_value,
    parse_references,
    schema_key,
    schema_value,
)
from minibroker.registry.store import SchemaContent, SchemaStore, content_of

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
READ_ONLY_MODES = ("READONLY", "READONLY_OVERRIDE")
MAX_VERSION = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """A schema sent to register, look up or check: parsed, with its stored form."""

    schema_type: str
    references: tuple[Reference, ...]
    parsed: ParsedSchema
    text: str

    @property
    def content(self) -> SchemaContent:
        return self.schema_type, self.text, self.references


class SchemaRegistry:
    def __init__(self, store: SchemaStore) -> None:
        self.store = store
        self._parsed: dict[SchemaContent, ParsedSchema] = {}
        self._lock = asyncio.Lock()

    # Reading.

    def subjects(self, prefix: str, deleted: bool, deleted_only: bool) -> list[str]:
        found = []
        for subject in sorted(self.store.subjects):
            if not subject.startswith(prefix):
                continue
            states = {record.deleted for record in self.store.versions(subject, True)}
            if (deleted_only and True in states) or (
                not deleted_only and (False in states or deleted)
            ):
                found.append(subject)
        return found

    def version_numbers(self, subject: str, deleted: bool, deleted_only: bool) -> list[int]:
        records = self.store.versions(subject, True)
        if not any(deleted or deleted_only or not record.deleted for record in records):
            raise errors.subject_not_found(subject)
        if deleted_only:
            return [record.version for record in records if record.deleted]
        return [record.version for record in records if deleted or not record.deleted]

    def version(self, subject: str, version_text: str, deleted: bool = False) -> SchemaRecord:
        """A version by number, or the latest for "latest" and -1 (soft-deleted ones only
        when `deleted`)."""
        number = parse_version(version_text)
        records = self.store.versions(subject, deleted)
        if not records:
            raise errors.subject_not_found(subject)
        if number == -1:
            return records[-1]
        for record in records:
            if record.version == number:
                return record
        raise errors.version_not_found(number)

    def schema_by_id(self, schema_id: int) -> SchemaRecord:
        record = self.store.schema_by_id(schema_id)
        if record is None:
            raise errors.schema_not_found(schema_id)
        return record

    def versions_of_id(self, schema_id: int, deleted: bool) -> list[SchemaRecord]:
        self.schema_by_id(schema_id)
        return sorted(
            (
                record
                for record in self.store.all_records()
                if record.schema_id == schema_id and (deleted or not record.deleted)
            ),
            key=lambda record: (record.subject, record.version),
        )

    def referenced_by(self, subject: str, version_text: str) -> list[int]:
        record = self.version(subject, version_text)
        return sorted(
            {other.schema_id for other in self._referrers(record.subject, record.version)}
        )

    def _referrers(self, subject: str, version: int) -> list[SchemaRecord]:
        return [
            other
            for other in self.store.all_records()
            if not other.deleted
            and any(ref.subject == subject and ref.version == version for ref in other.references)
        ]

    async def formatted(self, record: SchemaRecord, fmt: str | None) -> str:
        if not fmt:
            return record.schema
        parsed = await self._parsed_record(record)
        return parsed.formatted(fmt)

    # Registering and looking up.

    async def register(
        self, subject: str, body: Mapping[str, Any], normalize: bool
    ) -> dict[str, Any]:
        async with self._lock:
            mode = self.mode(subject, default_to_global=True)
            if mode in READ_ONLY_MODES:
                raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")
            requested_id = _optional_int(body, "id")
            if requested_id is not None and mode != "IMPORT":
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
            candidate = await self._candidate(body, normalize)
            existing = self._live_match(subject, candidate)
            if existing is not None and requested_id in (None, existing.schema_id):
                return {"id": existing.schema_id}
            if mode != "IMPORT":
                await self._parse_live(subject)
                self._require_compatible(subject, candidate)
            schema_id = self._id_for(candidate, requested_id)
            version = _optional_int(body, "version") if mode == "IMPORT" else None
            if version is None:
                version = 1 + max(
                    (r.version for r in self.store.versions(subject, True)), default=0
                )
            record = SchemaRecord(
                subject,
                version,
                schema_id,
                candidate.schema_type,
                candidate.text,
                candidate.references,
                False,
            )
            self.store.write([(schema_key(subject, version), schema_value(record))])
            self._parsed.setdefault(candidate.content, candidate.parsed)
            return {"id": schema_id}

    async def lookup(
        self, subject: str, body: Mapping[str, Any], normalize: bool, deleted: bool
    ) -> SchemaRecord:
        if not self.store.versions(subject, deleted):
            raise errors.subject_not_found(subject)
        candidate = await self._candidate(body, normalize)
        for record in reversed(self.store.versions(subject, deleted)):
            if content_of(record) == candidate.content:
                return record
            if not normalize and await self._same_normalized(record, candidate):
                return record
        raise errors.schema_not_found()

    async def _same_normalized(self, record: SchemaRecord, candidate: Candidate) -> bool:
        if record.schema_type != candidate.schema_type or record.references != candidate.references:
            return False
        parsed = await self._parsed_record(record)
        return parsed.normalized() == candidate.parsed.normalized()

    def _live_match(self, subject: str, candidate: Candidate) -> SchemaRecord | None:
        for record in self.store.versions(subject, False):
            if content_of(record) == candidate.content:
                return record
        return None

    def _id_for(self, candidate: Candidate, requested_id: int | None) -> int:
        known = self.store.id_by_content.get(candidate.content)
        if requested_id is None:
            return known if known is not None else self.store.max_id + 1
        holder = self.store.schema_by_id(requested_id)
        if holder is not None and content_of(holder) != candidate.content:
            raise errors.operation_not_permitted(
                f"Overwrite new schema with id {requested_id} is not permitted."
            )
        return requested_id

    async def _candidate(self, body: Mapping[str, Any], normalize: bool) -> Candidate:
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise errors.invalid_schema("Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        schema_format = (
            format_for(str(schema_type).upper()) if isinstance(schema_type, str) else None
        )
        if schema_format is None:
            raise errors.invalid_schema(f"Invalid schema type {schema_type}")
        try:
            references = parse_references(body.get("references"))
        except ValueError as exc:
            raise errors.invalid_schema(f"Invalid schema references: {exc}") from exc
        resolved = self._resolved_references(references)
        try:
            parsed = await asyncio.to_thread(schema_format.parse, text, resolved)
        except InvalidSchema as exc:
            raise errors.invalid_schema(exc.message) from exc
        stored = parsed.normalized() if normalize else parsed.canonical()
        return Candidate(parsed.schema_type, references, parsed, stored)

    def _resolved_references(self, references: tuple[Reference, ...]) -> dict[str, str]:
        """Every schema reached through the references, dependencies first, by name."""
        resolved: dict[str, str] = {}
        visiting: set[tuple[str, int]] = set()

        def visit(reference: Reference) -> None:
            key = (reference.subject, reference.version)
            if key in visiting or reference.name in resolved:
                return
            visiting.add(key)
            record = self._referenced_record(reference)
            for inner in record.references:
                visit(inner)
            resolved[reference.name] = record.schema

        for reference in references:
            visit(reference)
        return resolved

    def _referenced_record(self, reference: Reference) -> SchemaRecord:
        versions = self.store.versions(reference.subject, False)
        wanted = versions[-1].version if reference.version == -1 and versions else reference.version
        for record in versions:
            if record.version == wanted:
                return record
        raise errors.invalid_schema(
            f"Invalid schema reference {reference.name}: subject '{reference.subject}' "
            f"version {reference.version} not found"
        )

    async def _parsed_record(self, record: SchemaRecord) -> ParsedSchema:
        parsed = self._parsed.get(content_of(record))
        if parsed is None:
            parsed = await asyncio.to_thread(self.parsed_now, record)
        return parsed

    def parsed_now(self, record: SchemaRecord) -> ParsedSchema:
        """The stored schema parsed (once; RegistryError if it no longer parses), in the
        calling thread."""
        content = content_of(record)
        parsed = self._parsed.get(content)
        if parsed is None:
            schema_format = format_for(record.schema_type)
            if schema_format is None:
                raise errors.invalid_schema(f"Invalid schema type {record.schema_type}")
            resolved = self._resolved_references(record.references)
            try:
                parsed = schema_format.parse(record.schema, resolved)
            except InvalidSchema as exc:
                raise errors.invalid_schema(exc.message) from exc
            self._parsed[content] = parsed
        return parsed

    # Compatibility.

    def _require_compatible(self, subject: str, candidate: Candidate) -> None:
        level = self.compatibility(subject, default_to_global=True)
        live = self.store.versions(subject, False)
        for number in reversed(checked_versions(level, [r.version for r in live])):
            old = next(record for record in live if record.version == number)
            problems = pair_errors(level, candidate.parsed, self._cached_parse(old))
            if problems:
                raise errors.incompatible(
                    f'Schema being registered is incompatible with an earlier schema for subject "'
                    f'{subject}", details: [{", ".join(_details(problems, old, level))}]'
                )

    def _cached_parse(self, record: SchemaRecord) -> ParsedSchema:
        parsed = self._parsed.get(content_of(record))
        if parsed is None:
            raise RuntimeError("checked schemas are parsed before the check")
        return parsed

    async def _parse_live(self, subject: str) -> None:
        for record in self.store.versions(subject, False):
            await self._parsed_record(record)

    async def check_compatibility(
        self, subject: str, version_text: str | None, body: Mapping[str, Any], normalize: bool
    ) -> list[str]:
        """The problems of the schema against one version (the level's direction), or, without
        a version, against the versions the level checks; empty when compatible."""
        level = self.compatibility(subject, default_to_global=True)
        if version_text is None:
            live = self.store.versions(subject, False)
            targets = [
                r for r in live if r.version in checked_versions(level, [v.version for v in live])
            ]
        else:
            targets = [self.version(subject, version_text)]
        candidate = await self._candidate(body, normalize)
        problems: list[str] = []
        for record in targets:
            found = pair_errors(level, candidate.parsed, await self._parsed_record(record))
            if found:
                problems += _details(found, record, level)
        return problems

    # Deleting.

    def delete_version(self, subject: str, version_text: str, permanent: bool) -> int:
        self._require_writable(subject)
        record = self.version(subject, version_text, deleted=True)
        if parse_version(version_text) == -1 and record.deleted and not permanent:
            raise errors.version_soft_deleted(subject, record.version)
        if permanent:
            if not record.deleted:
                raise errors.version_not_soft_deleted(subject, record.version)
            self.store.write([(schema_key(subject, record.version), None)])
            return record.version
        if record.deleted:
            raise errors.version_soft_deleted(subject, record.version)
        self._require_unreferenced([record])
        soft = replace(record, deleted=True)
        self.store.write([(schema_key(subject, record.version), schema_value(soft))])
        return record.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        self._require_writable(subject)
        every = self.store.versions(subject, True)
        if not every:
            raise errors.subject_not_found(subject)
        live = [record for record in every if not record.deleted]
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            self.store.write(
                [(schema_key(subject, record.version), None) for record in every]
                + [(config_key(subject), None), (mode_key(subject), None)]
                + [(delete_subject_key(subject), None)]
            )
            return [record.version for record in every]
        if not live:
            raise errors.subject_soft_deleted(subject)
        self._require_unreferenced(live)
        latest = live[-1].version
        self.store.write([(delete_subject_key(subject), delete_subject_value(subject, latest))])
        return [record.version for record in live]

    def _require_unreferenced(self, records: list[SchemaRecord]) -> None:
        for record in records:
            if self._referrers(record.subject, record.version):
                raise errors.references_exist(
                    "One or more references exist to the schema {magic=1,keytype=SCHEMA,"
                    f"subject={record.subject},version={record.version}}}."
                )

    def _require_writable(self, subject: str) -> None:
        if self.mode(subject, default_to_global=True) in READ_ONLY_MODES:
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # Settings.

    def compatibility(self, subject: str | None, default_to_global: bool) -> str:
        level = self.store.configs.get(subject)
        if level is not None:
            return level
        if subject is not None and not default_to_global:
            raise errors.subject_config_not_found(subject)
        return self.store.configs.get(None, DEFAULT_LEVEL)

    def set_compatibility(self, subject: str | None, body: Mapping[str, Any]) -> str:
        level = body.get("compatibility", body.get("compatibilityLevel"))
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_compatibility_level(level)
        self.store.write([(config_key(subject), config_value(level.upper()))])
        return level.upper()

    def delete_compatibility(self, subject: str | None) -> str:
        if subject is not None and subject not in self.store.configs:
            if subject not in self.store.subjects:
                raise errors.subject_not_found(subject)
            raise errors.subject_config_not_found(subject)
        previous = self.compatibility(subject, default_to_global=True)
        self.store.write([(config_key(subject), None)])
        return previous

    def mode(self, subject: str | None, default_to_global: bool) -> str:
        mode = self.store.modes.get(subject)
        if mode is not None:
            return mode
        if subject is not None and not default_to_global:
            raise errors.subject_mode_not_found(subject)
        return self.store.modes.get(None, "READWRITE")

    def set_mode(self, subject: str | None, body: Mapping[str, Any], force: bool) -> str:
        mode = body.get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not force and self._has_schemas(subject):
            raise errors.operation_not_permitted("Cannot import since found existing subjects")
        self.store.write([(mode_key(subject), mode_value(mode))])
        return mode

    def delete_mode(self, subject: str) -> str:
        if subject not in self.store.modes:
            raise errors.subject_mode_not_found(subject)
        previous = self.store.modes[subject]
        self.store.write([(mode_key(subject), None)])
        return previous

    def _has_schemas(self, subject: str | None) -> bool:
        if subject is None:
            return bool(self.store.subjects)
        return bool(self.store.subjects.get(subject))


def parse_version(text: str) -> int:
    """A version path segment: 1 .. 2^31-1, or "latest" / -1 (returned as -1)."""
    if text == "latest":
        return -1
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if number == -1 or 1 <= number <= MAX_VERSION:
        return number
    raise errors.invalid_version(text)


def _optional_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value < 0):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.invalid_schema(f"Invalid {name} {value!r}")
    return value


def _details(problems: list[str], old: SchemaRecord, level: str) -> list[str]:
    return [
        *problems,
        f"{{oldSchemaVersion: {old.version}}}",
        f"{{oldSchema: '{old.schema}'}}",
        f"{{compatibility: '{level}'}}",
    ]
