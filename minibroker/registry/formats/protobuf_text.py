"""Render a FileDescriptorProto as .proto text: the canonical form of a Protobuf schema.

Whether a schema arrives as .proto text or as a base64 FileDescriptorProto, the registry stores
and compares this rendering, so both spellings of one schema are the same schema. Rendering the
text again through protoc gives back the same descriptor: declaration order is kept (messages,
fields, and nested types including the map entries protoc generates, so Confluent's message
indexes still point at the same messages), and type names are written as short as protoc's
scoping rules allow while still resolving to the same type.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_encoding,
    text_format,
)
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

FieldProto = descriptor_pb2.FieldDescriptorProto
INDENT = "  "
MAX_FIELD_NUMBER = 536870911
MAX_ENUM_NUMBER = 2147483647

SCALAR_NAMES = {
    FieldProto.TYPE_DOUBLE: "double",
    FieldProto.TYPE_FLOAT: "float",
    FieldProto.TYPE_INT64: "int64",
    FieldProto.TYPE_UINT64: "uint64",
    FieldProto.TYPE_INT32: "int32",
    FieldProto.TYPE_FIXED64: "fixed64",
    FieldProto.TYPE_FIXED32: "fixed32",
    FieldProto.TYPE_BOOL: "bool",
    FieldProto.TYPE_STRING: "string",
    FieldProto.TYPE_BYTES: "bytes",
    FieldProto.TYPE_UINT32: "uint32",
    FieldProto.TYPE_SFIXED32: "sfixed32",
    FieldProto.TYPE_SFIXED64: "sfixed64",
    FieldProto.TYPE_SINT32: "sint32",
    FieldProto.TYPE_SINT64: "sint64",
}

# A name protoc finds while resolving a type reference: a type, or a scope a dotted name can
# continue into (a package or a service), or any other symbol, which only shadows.
TYPE, SCOPE, OTHER = "type", "scope", "other"


class Symbols:
    """Every name declared by a set of files, for resolving type references as protoc does."""

    def __init__(self, files: Iterable[descriptor_pb2.FileDescriptorProto]) -> None:
        self._kinds: dict[str, str] = {}
        for file in files:
            self._add_file(file)

    def _add_file(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        parts = file.package.split(".") if file.package else []
        for end in range(1, len(parts) + 1):
            self._kinds.setdefault(".".join(parts[:end]), SCOPE)
        for message in file.message_type:
            self._add_message(file.package, message)
        for enum in file.enum_type:
            self._add_enum(file.package, enum)
        for service in file.service:
            service_name = _join(file.package, service.name)
            self._kinds[service_name] = SCOPE
            for method in service.method:
                self._kinds[_join(service_name, method.name)] = OTHER
        for extension in file.extension:
            self._kinds.setdefault(_join(file.package, extension.name), OTHER)

    def _add_message(self, scope: str, message: descriptor_pb2.DescriptorProto) -> None:
        name = _join(scope, message.name)
        self._kinds[name] = TYPE
        members = [*message.field, *message.extension]
        for member_name in [*(m.name for m in members), *(o.name for o in message.oneof_decl)]:
            self._kinds.setdefault(_join(name, member_name), OTHER)
        for nested in message.nested_type:
            self._add_message(name, nested)
        for enum in message.enum_type:
            self._add_enum(name, enum)

    def _add_enum(self, scope: str, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        name = _join(scope, enum.name)
        self._kinds[name] = TYPE
        for value in enum.value:
            # protoc declares enum values beside their enum, in its enclosing scope.
            self._kinds.setdefault(_join(scope, value.name), OTHER)
            self._kinds.setdefault(_join(name, value.name), OTHER)

    def resolve(self, name: str, scope: str, types_only: bool) -> str | None:
        """The full name protoc gives a reference `name` written inside `scope`: a field's type
        (`types_only`: other symbols are passed over), or a method's or an extension's type."""
        first, _, rest = name.partition(".")
        scope_parts = scope.split(".") if scope else []
        for end in range(len(scope_parts), 0, -1):
            candidate = ".".join([*scope_parts[:end], first])
            kind = self._kinds.get(candidate)
            if kind is None:
                continue
            if rest and kind in (TYPE, SCOPE):
                full = f"{candidate}.{rest}"
                return full if full in self._kinds else None
            if not rest and (kind == TYPE or not types_only):
                return candidate
        return name if name in self._kinds else None

    def shortest(self, full_name: str, scope: str, types_only: bool = True) -> str:
        """The shortest spelling of the type `full_name` (".pkg.T") that resolves to it from
        `scope`; the fully qualified name when none does."""
        target = full_name.lstrip(".")
        parts = target.split(".")
        for start in range(len(parts) - 1, -1, -1):
            candidate = ".".join(parts[start:])
            if self.resolve(candidate, scope, types_only) == target:
                return candidate
        return "." + target


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


@dataclass
class Renderer:
    file: descriptor_pb2.FileDescriptorProto
    symbols: Symbols
    pool: descriptor_pool.DescriptorPool

    def render(self) -> str:
        return "\n".join(self._file_lines()) + "\n"

    def _file_lines(self) -> Iterator[str]:
        file = self.file
        if file.syntax == "editions":
            yield f'edition = "{_edition_name(file.edition)}";'
        else:
            yield f'syntax = "{file.syntax or "proto2"}";'
        if file.package:
            yield f"package {file.package};"
        yield from _section(self._import_lines())
        yield from _section(self._option_lines("", file.options, "FileOptions"))
        for message in file.message_type:
            yield ""
            yield from self._message_lines(message, file.package, "")
        for enum in file.enum_type:
            yield ""
            yield from self._enum_lines(enum, "")
        for service in file.service:
            yield ""
            yield from self._service_lines(service)
        yield from self._extend_lines(file.extension, file.package, "", blank_first=True)

    def _import_lines(self) -> Iterator[str]:
        public = set(self.file.public_dependency)
        weak = set(self.file.weak_dependency)
        for index, path in enumerate(self.file.dependency):
            kind = "public " if index in public else "weak " if index in weak else ""
            yield f'import {kind}"{path}";'

    def _option_lines(self, indent: str, options: Message, type_name: str) -> Iterator[str]:
        for name, value in self._options(options, type_name):
            yield f"{indent}option {name} = {value};"

    def _options(self, options: Message, type_name: str) -> list[tuple[str, str]]:
        """The options set in `options` as (name, value) pairs, custom options included when
        the schema imports their definitions."""
        if not options.ByteSize():
            return []
        decoded = self._with_custom_options(options, type_name)
        pairs: list[tuple[str, str]] = []
        for field, value in decoded.ListFields():
            name = f"(.{field.full_name})" if field.is_extension else field.name
            values = value if field.is_repeated else [value]
            pairs.extend((name, _option_value(field, item)) for item in values)
        return pairs

    def _with_custom_options(self, options: Message, type_name: str) -> Message:
        try:
            descriptor = self.pool.FindMessageTypeByName(f"google.protobuf.{type_name}")
        except KeyError:
            return options
        decoded = message_factory.GetMessageClass(descriptor)()
        decoded.ParseFromString(options.SerializeToString())
        return decoded

    def _message_lines(
        self, message: descriptor_pb2.DescriptorProto, scope: str, indent: str
    ) -> Iterator[str]:
        name = _join(scope, message.name)
        inner = indent + INDENT
        yield f"{indent}message {message.name} {{"
        yield from self._option_lines(inner, message.options, "MessageOptions")
        # A message's reserved ranges end one past their last number; an enum's at it.
        ranges = [(r.start, r.end - 1) for r in message.reserved_range]
        yield from _reserved(ranges, MAX_FIELD_NUMBER, message.reserved_name, inner)
        for extension_range in message.extension_range:
            end = _range_end(extension_range.end - 1, MAX_FIELD_NUMBER)
            options = self._bracket_options(extension_range.options, "ExtensionRangeOptions", [])
            yield f"{inner}extensions {_range(extension_range.start, end)}{options};"
        for enum in message.enum_type:
            yield from self._enum_lines(enum, inner)
        yield from self._members_lines(message, name, inner)
        yield from self._extend_lines(message.extension, name, inner, blank_first=False)
        yield f"{indent}}}"

    def _members_lines(
        self, message: descriptor_pb2.DescriptorProto, name: str, indent: str
    ) -> Iterator[str]:
        """Fields and nested messages interleaved so that protoc, reading the text, lists the
        nested types (map entries and groups among them) in the same order as `message` does."""
        owners = _generated_type_owners(message, name)
        fields = iter(_field_blocks(message))
        for nested in message.nested_type:
            owner = owners.get(nested.name)
            if owner is None:
                yield from self._message_lines(nested, name, indent)
                continue
            for block in fields:
                yield from self._block_lines(block, message, name, indent)
                if owner in block:
                    break
        for block in fields:
            yield from self._block_lines(block, message, name, indent)

    def _block_lines(
        self,
        block: list[int],
        message: descriptor_pb2.DescriptorProto,
        scope: str,
        indent: str,
    ) -> Iterator[str]:
        first = message.field[block[0]]
        if not _in_real_oneof(first):
            yield from self._field_lines(first, message, scope, indent, in_oneof=False)
            return
        oneof = message.oneof_decl[first.oneof_index]
        inner = indent + INDENT
        yield f"{indent}oneof {oneof.name} {{"
        yield from self._option_lines(inner, oneof.options, "OneofOptions")
        for index in block:
            yield from self._field_lines(message.field[index], message, scope, inner, True)
        yield f"{indent}}}"

    def _field_lines(
        self,
        field: FieldProto,
        message: descriptor_pb2.DescriptorProto | None,
        scope: str,
        indent: str,
        in_oneof: bool,
    ) -> Iterator[str]:
        options = self._bracket_options(field.options, "FieldOptions", _field_pseudo_options(field))
        map_entry = _map_entry(field, message)
        if map_entry is not None:
            key, value = map_entry.field
            types = f"{self._type_name(key, scope)}, {self._type_name(value, scope)}"
            yield f"{indent}map<{types}> {field.name} = {field.number}{options};"
            return
        label = "" if in_oneof else self._label(field)
        if field.type == FieldProto.TYPE_GROUP and message is not None:
            group = _nested_by_name(message, field.type_name.rsplit(".", 1)[-1])
            yield f"{indent}{label}group {group.name} = {field.number}{options} {{"
            inner = indent + INDENT
            group_scope = _join(scope, group.name)
            for group_field in group.field:
                yield from self._field_lines(group_field, group, group_scope, inner, False)
            for nested in group.nested_type:
                yield from self._message_lines(nested, group_scope, inner)
            yield f"{indent}}}"
            return
        yield (
            f"{indent}{label}{self._type_name(field, scope)} {field.name} = {field.number}"
            f"{options};"
        )

    def _label(self, field: FieldProto) -> str:
        if field.label == FieldProto.LABEL_REPEATED:
            return "repeated "
        if field.label == FieldProto.LABEL_REQUIRED:
            return "required "
        if self.file.syntax == "proto3":
            return "optional " if field.proto3_optional else ""
        return "" if self.file.syntax == "editions" else "optional "

    def _type_name(self, field: FieldProto, scope: str) -> str:
        if field.type in SCALAR_NAMES:
            return SCALAR_NAMES[field.type]
        return self.symbols.shortest(field.type_name, scope)

    def _bracket_options(
        self, options: Message, type_name: str, pseudo: list[tuple[str, str]]
    ) -> str:
        pairs = pseudo + self._options(options, type_name)
        if not pairs:
            return ""
        return " [" + ", ".join(f"{name} = {value}" for name, value in pairs) + "]"

    def _enum_lines(self, enum: descriptor_pb2.EnumDescriptorProto, indent: str) -> Iterator[str]:
        inner = indent + INDENT
        yield f"{indent}enum {enum.name} {{"
        yield from self._option_lines(inner, enum.options, "EnumOptions")
        ranges = [(r.start, r.end) for r in enum.reserved_range]
        yield from _reserved(ranges, MAX_ENUM_NUMBER, enum.reserved_name, inner)
        for value in enum.value:
            options = self._bracket_options(value.options, "EnumValueOptions", [])
            yield f"{inner}{value.name} = {value.number}{options};"
        yield f"{indent}}}"

    def _service_lines(self, service: descriptor_pb2.ServiceDescriptorProto) -> Iterator[str]:
        scope = _join(self.file.package, service.name)
        yield f"service {service.name} {{"
        yield from self._option_lines(INDENT, service.options, "ServiceOptions")
        for method in service.method:
            request = self.symbols.shortest(method.input_type, scope, types_only=False)
            response = self.symbols.shortest(method.output_type, scope, types_only=False)
            signature = (
                f"rpc {method.name}({'stream ' if method.client_streaming else ''}{request}) "
                f"returns ({'stream ' if method.server_streaming else ''}{response})"
            )
            options = list(self._option_lines(INDENT * 2, method.options, "MethodOptions"))
            if options:
                yield f"{INDENT}{signature} {{"
                yield from options
                yield f"{INDENT}}}"
            else:
                yield f"{INDENT}{signature};"
        yield "}"

    def _extend_lines(
        self, extensions: Sequence[FieldProto], scope: str, indent: str, blank_first: bool
    ) -> Iterator[str]:
        inner = indent + INDENT
        for extendee, run in _runs_by_extendee(extensions):
            if blank_first:
                yield ""
            extended = self.symbols.shortest(extendee, scope, types_only=False)
            yield f"{indent}extend {extended} {{"
            for field in run:
                yield from self._field_lines(field, None, scope, inner, in_oneof=False)
            yield f"{indent}}}"


def render(
    file: descriptor_pb2.FileDescriptorProto,
    all_files: Iterable[descriptor_pb2.FileDescriptorProto],
    pool: descriptor_pool.DescriptorPool,
) -> str:
    """`file` as .proto text; `all_files` are the files it can see (itself included)."""
    return Renderer(file, Symbols(all_files), pool).render()


def _section(lines: Iterator[str]) -> Iterator[str]:
    collected = list(lines)
    if collected:
        yield ""
        yield from collected


def _reserved(
    ranges: list[tuple[int, int]], maximum: int, names: Sequence[str], indent: str
) -> Iterator[str]:
    if ranges:
        spans = ", ".join(_range(start, _range_end(end, maximum)) for start, end in ranges)
        yield f"{indent}reserved {spans};"
    if names:
        yield f"{indent}reserved {', '.join(_quote(name) for name in names)};"


def _range_end(end: int, maximum: int) -> int | str:
    return "max" if end >= maximum else end


def _range(start: int, end: int | str) -> str:
    return str(start) if start == end else f"{start} to {end}"


def _field_blocks(message: descriptor_pb2.DescriptorProto) -> list[list[int]]:
    """Field indexes in declaration order, a real oneof's fields as one block."""
    blocks: list[list[int]] = []
    oneof_blocks: dict[int, list[int]] = {}
    for index, field in enumerate(message.field):
        if not _in_real_oneof(field):
            blocks.append([index])
        elif field.oneof_index in oneof_blocks:
            oneof_blocks[field.oneof_index].append(index)
        else:
            oneof_blocks[field.oneof_index] = [index]
            blocks.append(oneof_blocks[field.oneof_index])
    return blocks


def _in_real_oneof(field: FieldProto) -> bool:
    """Whether the field belongs to a oneof written in the schema (proto3 `optional` puts a
    field alone in a synthetic one)."""
    return field.HasField("oneof_index") and not field.proto3_optional


def _generated_type_owners(message: descriptor_pb2.DescriptorProto, scope: str) -> dict[str, int]:
    """Nested types protoc generates from a field (map entries, groups) -> that field's index."""
    owners = {}
    for index, field in enumerate(message.field):
        if field.type not in (FieldProto.TYPE_MESSAGE, FieldProto.TYPE_GROUP):
            continue
        owner_scope, _, type_name = field.type_name.lstrip(".").rpartition(".")
        if owner_scope != scope:
            continue
        nested = _nested_by_name(message, type_name)
        if field.type == FieldProto.TYPE_GROUP or nested.options.map_entry:
            owners[type_name] = index
    return owners


def _nested_by_name(
    message: descriptor_pb2.DescriptorProto, name: str
) -> descriptor_pb2.DescriptorProto:
    return next(nested for nested in message.nested_type if nested.name == name)


def _map_entry(
    field: FieldProto, message: descriptor_pb2.DescriptorProto | None
) -> descriptor_pb2.DescriptorProto | None:
    if message is None or field.label != FieldProto.LABEL_REPEATED:
        return None
    if field.type != FieldProto.TYPE_MESSAGE:
        return None
    name = field.type_name.rsplit(".", 1)[-1]
    for nested in message.nested_type:
        if nested.name == name and nested.options.map_entry:
            return nested
    return None


def _field_pseudo_options(field: FieldProto) -> list[tuple[str, str]]:
    """`default` and `json_name`: stored in the field itself, written as options."""
    pairs = []
    if field.HasField("default_value"):
        pairs.append(("default", _default_value(field)))
    if field.HasField("json_name") and field.json_name != _default_json_name(field.name):
        pairs.append(("json_name", _quote(field.json_name)))
    return pairs


def _default_value(field: FieldProto) -> str:
    if field.type == FieldProto.TYPE_STRING:
        return _quote(field.default_value)
    if field.type == FieldProto.TYPE_BYTES:
        # The descriptor keeps a bytes default C-escaped already.
        return f'"{field.default_value}"'
    return field.default_value


def _default_json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def _option_value(field: FieldDescriptor, value: object) -> str:
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
        enum_value = field.enum_type.values_by_number.get(int(str(value)))
        return enum_value.name if enum_value is not None else str(value)
    if field.type == FieldDescriptor.TYPE_STRING:
        return _quote(str(value))
    if field.type == FieldDescriptor.TYPE_BYTES:
        assert isinstance(value, bytes)
        return '"' + text_encoding.CEscape(value, as_utf8=False) + '"'
    if isinstance(value, Message):
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _quote(text: str) -> str:
    return '"' + text_encoding.CEscape(text.encode("utf-8"), as_utf8=True) + '"'


def _edition_name(edition: descriptor_pb2.Edition.ValueType) -> str:
    name = descriptor_pb2.Edition.Name(edition)
    return name.removeprefix("EDITION_")


def _runs_by_extendee(extensions: Sequence[FieldProto]) -> Iterator[tuple[str, list[FieldProto]]]:
    run: list[FieldProto] = []
    for field in extensions:
        if run and run[0].extendee != field.extendee:
            yield run[0].extendee, run
            run = []
        run.append(field)
    if run:
        yield run[0].extendee, run
