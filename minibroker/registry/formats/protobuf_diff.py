"""Protobuf compatibility as Confluent's registry decides it (its protobuf `diff` package).

The writer's file is compared with the reader's: messages by name level by level, fields by
number, and each difference gets one of Confluent's `Difference.Type`s. The types outside
Confluent's compatible set are the errors: PACKAGE_CHANGED, MESSAGE_REMOVED,
FIELD_KIND_CHANGED (scalar/enum vs message vs map), FIELD_SCALAR_KIND_CHANGED (outside the
wire-compatible groups), FIELD_NAMED_TYPE_CHANGED, FIELD_NUMERIC_LABEL_CHANGED,
REQUIRED_FIELD_ADDED/REMOVED, ONEOF_FIELD_REMOVED, MULTIPLE_FIELDS_MOVED_TO_ONEOF and
FIELD_MOVED_TO_EXISTING_ONEOF. Adding or removing fields, messages, enums, enum constants and
oneofs, renaming fields, and moving a field out of its oneof are compatible. A message type
defined in an imported file is compared field by field unless both sides import the same file
unchanged (Confluent: the same subject and version).

Each error is written as Confluent writes it, `{errorType:"...", description:"..."}`; the
description keeps Confluent's two `%s` placeholders, which the registry fills with the reader's
and the writer's role ("new"/"old") as Confluent's SchemaValidatorBuilder does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2

FieldProto = descriptor_pb2.FieldDescriptorProto
MessageProto = descriptor_pb2.DescriptorProto
FileProto = descriptor_pb2.FileDescriptorProto

DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package at '{path}' in the %s schema does not match the package "
    "in the %s schema",
    "MESSAGE_REMOVED": "The %s schema is missing a MESSAGE type at path '{path}' in the %s schema",
    "FIELD_KIND_CHANGED": "The type of a field at path '{path}' in the %s schema does not match "
    "the %s schema",
    "FIELD_SCALAR_KIND_CHANGED": "The kind of a SCALAR field at path '{path}' in the %s schema "
    "does not match its kind in the %s schema",
    "FIELD_NAMED_TYPE_CHANGED": "The type of a MESSAGE field at path '{path}' in the %s schema "
    "does not match its type in the %s schema",
    "FIELD_NUMERIC_LABEL_CHANGED": "The label for a NUMERIC field at path '{path}' in the %s "
    "schema does not match its label in the %s schema",
    "REQUIRED_FIELD_ADDED": "A required field  at path '{path}' in the %s schema is missing in "
    "the %s schema",
    "REQUIRED_FIELD_REMOVED": "The %s schema is missing a required field at path: '{path}' in "
    "the %s schema",
    "ONEOF_FIELD_REMOVED": "The %s schema is missing a oneof field at path '{path}' in the %s "
    "schema",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "Multiple fields in the oneof at path '{path}' in the %s "
    "schema are outside a oneof in the %s schema",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "A field in the oneof at path '{path}' in the %s schema is "
    "outside an existing oneof in the %s schema",
}

# Scalar types whose values read as each other (protobuf's "updating a message type" rules,
# grouped as Confluent groups them); an enum reads as GENERAL_NUMBER.
SCALAR_KINDS = {
    FieldProto.TYPE_INT32: "GENERAL_NUMBER",
    FieldProto.TYPE_INT64: "GENERAL_NUMBER",
    FieldProto.TYPE_UINT32: "GENERAL_NUMBER",
    FieldProto.TYPE_UINT64: "GENERAL_NUMBER",
    FieldProto.TYPE_BOOL: "GENERAL_NUMBER",
    FieldProto.TYPE_ENUM: "GENERAL_NUMBER",
    FieldProto.TYPE_SINT32: "SIGNED_NUMBER",
    FieldProto.TYPE_SINT64: "SIGNED_NUMBER",
    FieldProto.TYPE_STRING: "STRING_OR_BYTES",
    FieldProto.TYPE_BYTES: "STRING_OR_BYTES",
    FieldProto.TYPE_FIXED32: "FIXED32",
    FieldProto.TYPE_SFIXED32: "FIXED32",
    FieldProto.TYPE_FIXED64: "FIXED64",
    FieldProto.TYPE_SFIXED64: "FIXED64",
    FieldProto.TYPE_FLOAT: "FLOAT",
    FieldProto.TYPE_DOUBLE: "DOUBLE",
}


@dataclass(frozen=True)
class MessageType:
    """A message type as the diff sees it: where it is defined and what it holds."""

    message: MessageProto
    full_name: str
    package: str
    file: FileProto
    local: bool

    @property
    def local_name(self) -> str:
        prefix = f"{self.package}." if self.package else ""
        return self.full_name.removeprefix(prefix)


class Side:
    """One schema's message types by full name, its own and those of the files it imports."""

    def __init__(self, main: FileProto, files: Iterable[FileProto]) -> None:
        self.main = main
        self.syntax = main.syntax
        self.messages: dict[str, MessageType] = {}
        for file in files:
            local = file.name == main.name
            for message in file.message_type:
                self._add(message, file.package, file, local)

    def _add(self, message: MessageProto, scope: str, file: FileProto, local: bool) -> None:
        full_name = f"{scope}.{message.name}" if scope else message.name
        self.messages[full_name] = MessageType(message, full_name, file.package, file, local)
        for nested in message.nested_type:
            self._add(nested, full_name, file, local)

    def map_entry(self, field: FieldProto) -> MessageProto | None:
        if field.type != FieldProto.TYPE_MESSAGE or field.label != FieldProto.LABEL_REPEATED:
            return None
        found = self.messages.get(field.type_name.lstrip("."))
        return found.message if found and found.message.options.map_entry else None

    def label(self, field: FieldProto, in_oneof: bool) -> str | None:
        """The label as written in .proto text (None when there is none), which is what
        Confluent compares."""
        if in_oneof or self.map_entry(field) is not None:
            return None
        if field.label == FieldProto.LABEL_REPEATED:
            return "repeated"
        if field.label == FieldProto.LABEL_REQUIRED:
            return "required"
        if self.syntax == "proto3" and not field.proto3_optional:
            return None
        return "optional"


@dataclass
class Fields:
    """A message's fields by number, with the real oneof each belongs to."""

    by_number: dict[int, FieldProto] = field(default_factory=dict)
    oneof_of: dict[int, str] = field(default_factory=dict)
    oneofs: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, message: MessageProto) -> Fields:
        fields = cls()
        for member in message.field:
            fields.by_number[member.number] = member
            if member.HasField("oneof_index") and not member.proto3_optional:
                name = message.oneof_decl[member.oneof_index].name
                fields.oneof_of[member.number] = name
                fields.oneofs.setdefault(name, []).append(member.number)
        return fields


class Diff:
    def __init__(self, writer: Side, reader: Side, in_progress: set[str] | None = None) -> None:
        self.writer = writer
        self.reader = reader
        self.path: list[str] = []
        self.errors: list[tuple[str, str]] = []
        self.in_progress = set(in_progress or ())

    def add(self, error_type: str) -> None:
        self.errors.append((error_type, "#/" + "/".join(self.path)))

    @contextmanager
    def at(self, *parts: str) -> Iterator[None]:
        self.path.extend(parts)
        try:
            yield
        finally:
            del self.path[len(self.path) - len(parts) :]

    def compare_files(self) -> None:
        if self.writer.main.package != self.reader.main.package:
            self.add("PACKAGE_CHANGED")
        package = self.writer.main.package, self.reader.main.package
        self.compare_messages(self.writer.main.message_type, self.reader.main.message_type, package)

    def compare_messages(
        self,
        written: Sequence[MessageProto],
        read: Sequence[MessageProto],
        scopes: tuple[str, str],
    ) -> None:
        read_by_name = {m.name: m for m in read if not m.options.map_entry}
        for message in written:
            if message.options.map_entry:
                continue
            with self.at(message.name):
                counterpart = read_by_name.get(message.name)
                if counterpart is None:
                    self.add("MESSAGE_REMOVED")
                else:
                    names = (_join(scopes[0], message.name), _join(scopes[1], message.name))
                    self.compare_message(message, counterpart, names)

    def compare_message(
        self, written: MessageProto, read: MessageProto, names: tuple[str, str]
    ) -> None:
        if names[0] not in self.in_progress:
            self.in_progress.add(names[0])
            self.compare_fields(Fields.of(written), Fields.of(read), names)
            self.in_progress.discard(names[0])
        self.compare_messages(written.nested_type, read.nested_type, names)

    def compare_fields(self, written: Fields, read: Fields, scopes: tuple[str, str]) -> None:
        self.check_oneof_moves(written, read)
        deleted_oneofs = {
            name
            for name, numbers in written.oneofs.items()
            if name not in read.oneofs and not any(n in read.by_number for n in numbers)
        }
        for number in sorted(written.by_number.keys() | read.by_number.keys()):
            old, new = written.by_number.get(number), read.by_number.get(number)
            old_oneof, new_oneof = written.oneof_of.get(number), read.oneof_of.get(number)
            if new is None and old is not None:
                if old_oneof is None:
                    with self.at(str(number)):
                        if old.label == FieldProto.LABEL_REQUIRED:
                            self.add("REQUIRED_FIELD_REMOVED")
                elif old_oneof not in deleted_oneofs:
                    with self.at(old_oneof, str(number)):
                        self.add("ONEOF_FIELD_REMOVED")
            elif old is None and new is not None:
                if new_oneof is None and new.label == FieldProto.LABEL_REQUIRED:
                    with self.at(str(number)):
                        self.add("REQUIRED_FIELD_ADDED")
            elif old is not None and new is not None:
                location = (new_oneof, str(number)) if new_oneof else (str(number),)
                with self.at(*location):
                    labels = (
                        self.writer.label(old, old_oneof is not None),
                        self.reader.label(new, new_oneof is not None),
                    )
                    self.compare_field_types(old, new, labels)

    def check_oneof_moves(self, written: Fields, read: Fields) -> None:
        """A oneof of the reader may only gather fields the writer could not set together."""
        for name, numbers in read.oneofs.items():
            origins: set[str] = set()
            moved_in = 0
            for number in numbers:
                if number in written.oneof_of:
                    origins.add("oneof:" + written.oneof_of[number])
                elif number in written.by_number:
                    origins.add(f"field:{number}")
                    moved_in += 1
            if len(origins) > 1:
                with self.at(name):
                    self.add(
                        "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
                        if moved_in > 1
                        else "FIELD_MOVED_TO_EXISTING_ONEOF"
                    )

    def compare_field_types(
        self, old: FieldProto, new: FieldProto, labels: tuple[str | None, str | None]
    ) -> None:
        old_kind, new_kind = self.kind(old, self.writer), self.kind(new, self.reader)
        if old_kind != new_kind:
            self.add("FIELD_KIND_CHANGED")
        elif old_kind == "SCALAR":
            self.compare_scalars(old, new, labels)
        elif old_kind == "MAP":
            old_entry, new_entry = self.writer.map_entry(old), self.reader.map_entry(new)
            assert old_entry is not None and new_entry is not None
            for old_part, new_part in zip(old_entry.field, new_entry.field, strict=True):
                self.compare_field_types(old_part, new_part, (None, None))
        else:
            self.compare_named_types(old.type_name.lstrip("."), new.type_name.lstrip("."))

    @staticmethod
    def kind(member: FieldProto, side: Side) -> str:
        if member.type in SCALAR_KINDS:
            return "SCALAR"
        return "MAP" if side.map_entry(member) is not None else "MESSAGE"

    def compare_scalars(
        self, old: FieldProto, new: FieldProto, labels: tuple[str | None, str | None]
    ) -> None:
        kind = SCALAR_KINDS[old.type]
        if kind != SCALAR_KINDS[new.type]:
            self.add("FIELD_SCALAR_KIND_CHANGED")
        elif None not in labels and labels[0] != labels[1] and kind != "STRING_OR_BYTES":
            self.add("FIELD_NUMERIC_LABEL_CHANGED")

    def compare_named_types(self, old_name: str, new_name: str) -> None:
        old_type = self.writer.messages.get(old_name)
        new_type = self.reader.messages.get(new_name)
        if old_type is None or new_type is None:
            if old_name != new_name:
                self.add("FIELD_NAMED_TYPE_CHANGED")
            return
        if old_type.local_name != new_type.local_name:
            self.add("FIELD_NAMED_TYPE_CHANGED")
        elif not _same_definition(old_type, new_type):
            nested = Diff(self.writer, self.reader, self.in_progress)
            nested.path = old_type.local_name.split(".")
            nested.compare_message(
                old_type.message, new_type.message, (old_type.full_name, new_type.full_name)
            )
            self.errors.extend(nested.errors)
            if nested.errors:
                self.add("FIELD_NAMED_TYPE_CHANGED")


def _same_definition(old: MessageType, new: MessageType) -> bool:
    """Types of the schemas themselves are compared where they are declared; a type both
    import from the same file, unchanged, needs no comparing."""
    if old.local and new.local:
        return True
    if old.local or new.local or old.file.name != new.file.name:
        return False
    return old.file.SerializeToString(deterministic=True) == new.file.SerializeToString(
        deterministic=True
    )


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def reading_errors(
    reader: FileProto,
    reader_files: Iterable[FileProto],
    writer: FileProto,
    writer_files: Iterable[FileProto],
) -> list[str]:
    """Why data written with `writer` cannot be read with `reader`: Confluent's messages."""
    diff = Diff(Side(writer, writer_files), Side(reader, reader_files))
    diff.compare_files()
    return [
        f'{{errorType:"{error_type}", description:"{DESCRIPTIONS[error_type].format(path=path)}"}}'
        for error_type, path in diff.errors
    ]
