"""Protobuf schemas, as Confluent's Schema Registry takes them.

A schema arrives as .proto text (Java clients, curl) or as the base64 of a serialized
FileDescriptorProto (confluent-kafka's Python ProtobufSerializer). Either way protoc itself
(grpcio-tools, run in a subprocess) reads it together with the files it imports: the
references, which the registry passes as import path -> canonical text, and the well-known
types, which resolve without references as in Confluent's registry (google/protobuf/* always;
google/type/* and confluent's meta.proto and decimal.proto when googleapis-common-protos and
confluent-kafka, which define them, are installed). The canonical text is the .proto rendering
of the resulting descriptor (protobuf_text.py), the same for both spellings of one schema.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError

from minibroker.registry.formats.base import InvalidSchema, ParsedSchema
from minibroker.registry.formats.protobuf_diff import reading_errors
from minibroker.registry.formats.protobuf_text import render

SCHEMA_TYPE = "PROTOBUF"
MAIN_FILE = "default.proto"
PROTOC_TIMEOUT_SECONDS = 60
BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]+={0,2}")

# Files protoc does not ship that Confluent's registry resolves without a reference, with the
# module that defines each when its package is installed.
OPTIONAL_WELL_KNOWN = {
    "confluent/meta.proto": "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent/type/decimal.proto": "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
    **{
        f"google/type/{name}.proto": f"google.type.{name}_pb2"
        for name in [
            "calendar_period",
            "color",
            "date",
            "datetime",
            "dayofweek",
            "decimal",
            "expr",
            "fraction",
            "interval",
            "latlng",
            "localized_text",
            "money",
            "month",
            "phone_number",
            "postal_address",
            "quaternion",
            "timeofday",
        ]
    },
}


def _is_well_known(path: str) -> bool:
    return path.startswith("google/protobuf/") or path in OPTIONAL_WELL_KNOWN


@dataclass(frozen=True, eq=False)
class ProtobufSchema:
    file: descriptor_pb2.FileDescriptorProto
    files: tuple[descriptor_pb2.FileDescriptorProto, ...]
    pool: descriptor_pool.DescriptorPool
    text: str

    @property
    def schema_type(self) -> str:
        return SCHEMA_TYPE

    def canonical(self) -> str:
        return self.text

    def normalized(self) -> str:
        return self.text

    def formatted(self, fmt: str | None) -> str:
        if fmt == "serialized":
            return base64.standard_b64encode(self.file.SerializeToString()).decode("ascii")
        return self.text

    def reading_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, ProtobufSchema):
            return ["Incompatible because of different schema type"]
        return reading_errors(
            reader=self.file, reader_files=self.files, writer=writer.file, writer_files=writer.files
        )

    def message_descriptor(self, message_indexes: list[int]) -> Descriptor:
        """The message Confluent's framing names by its index path: the index of a top-level
        message in the file, then of a nested message in it, and so on ([] means [0])."""
        path = message_indexes or [0]
        messages = self.file.message_type
        name = self.file.package
        for depth, index in enumerate(path):
            if not 0 <= index < len(messages):
                where = "the schema" if depth == 0 else f"message {name}"
                raise ValueError(f"message index {index} out of range: {where} has {len(messages)}")
            name = f"{name}.{messages[index].name}" if name else messages[index].name
            messages = messages[index].nested_type
        return self.pool.FindMessageTypeByName(name)


class ProtobufFormat:
    def parse(self, text: str, references: Mapping[str, str]) -> ProtobufSchema:
        return _parse(text, tuple(references.items()))


PROTOBUF_FORMAT = ProtobufFormat()


def decode_message(
    parsed: ProtobufSchema, message_indexes: list[int], payload: bytes
) -> dict[str, Any]:
    """The message at `message_indexes` decoded from `payload` (the bytes after Confluent's
    framing), as protobuf's JSON mapping with the schema's field names. Raises ValueError."""
    descriptor = parsed.message_descriptor(message_indexes)
    message = message_factory.GetMessageClass(descriptor)()
    try:
        message.ParseFromString(payload)
    except DecodeError as error:
        raise ValueError(f"not a {descriptor.full_name} message: {error}") from error
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def read_message_indexes(data: bytes) -> tuple[list[int], int]:
    """Confluent's message-index list at the start of `data`: a zig-zag varint count (0 meaning
    [0], the first message), then that many zig-zag varints. Returns the indexes and the number
    of bytes they took. Raises ValueError on truncated or absurd input."""
    count, offset = _read_zigzag(data, 0)
    if count == 0:
        return [0], offset
    if count < 0 or count > len(data) - offset:
        raise ValueError(f"invalid message index count {count}")
    indexes = []
    for _ in range(count):
        index, offset = _read_zigzag(data, offset)
        indexes.append(index)
    return indexes, offset


def _read_zigzag(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 64, 7):
        if offset >= len(data):
            raise ValueError("truncated message indexes")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), offset
    raise ValueError("varint too long in message indexes")


@functools.lru_cache(maxsize=512)
def _parse(text: str, references: tuple[tuple[str, str], ...]) -> ProtobufSchema:
    # Parsing runs protoc; the registry parses the same stored schemas again and again.
    main = _decode_serialized(text)
    ref_texts, serialized = _split_references(references)
    main_name = _main_file_name(main, {name for name, _ in references})
    if main is None:
        ref_texts[main_name] = text
    else:
        main.name = main_name
        serialized.append(main)
    needed = _mentioned_well_known([text, *(t for _, t in references)], main)
    files = _compile(main_name, ref_texts, [*_well_known_files(needed), *serialized])
    pool = _pool(files)
    file = next(f for f in files if f.name == main_name)
    return ProtobufSchema(file=file, files=tuple(files), pool=pool, text=render(file, files, pool))


def _split_references(
    references: tuple[tuple[str, str], ...],
) -> tuple[dict[str, str], list[descriptor_pb2.FileDescriptorProto]]:
    """The references protoc reads as text and those it takes as descriptors; a reference to a
    well-known file this process has is left out, as the file itself is used."""
    texts: dict[str, str] = {}
    serialized: list[descriptor_pb2.FileDescriptorProto] = []
    for name, text in references:
        if not _is_safe_path(name):
            raise InvalidSchema(
                f"Invalid schema of type PROTOBUF, details: bad reference name {name!r}"
            )
        if name.startswith("google/protobuf/") or _well_known_module(name) is not None:
            continue
        file = _decode_serialized(text)
        if file is None:
            texts[name] = text
        else:
            file.name = name
            serialized.append(file)
    return texts, serialized


def _decode_serialized(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto `text` is the base64 of, or None when it is .proto text."""
    compact = text.strip()
    if not BASE64_TEXT.fullmatch(compact):
        return None
    try:
        raw = base64.b64decode(compact, validate=True)
        file = descriptor_pb2.FileDescriptorProto()
        file.ParseFromString(raw)
    except (binascii.Error, DecodeError):
        return None
    return file


def _is_safe_path(name: str) -> bool:
    """Whether an import path names a file inside the directory protoc reads from."""
    path = PurePosixPath(name)
    odd = "\\" in name or "\0" in name
    return bool(name) and not odd and not path.is_absolute() and ".." not in path.parts


def _main_file_name(main: descriptor_pb2.FileDescriptorProto | None, taken: set[str]) -> str:
    own = main.name if main is not None else ""
    if own and own not in taken and not _is_well_known(own) and _is_safe_path(own):
        return own
    name, counter = MAIN_FILE, 0
    while name in taken:
        counter += 1
        name = f"default{counter}.proto"
    return name


def _mentioned_well_known(
    texts: Iterable[str], main: descriptor_pb2.FileDescriptorProto | None
) -> list[str]:
    """The optional well-known files the schema may import: loading their modules is costly
    (confluent-kafka's loads librdkafka), so only what a text names or the main file imports."""
    joined = "\n".join(texts)
    imported = set(main.dependency) if main is not None else set()
    return [path for path in OPTIONAL_WELL_KNOWN if path in joined or path in imported]


def _well_known_files(paths: list[str]) -> list[descriptor_pb2.FileDescriptorProto]:
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for path in paths:
        module = _well_known_module(path)
        if module is not None:
            _add_with_dependencies(module.DESCRIPTOR, files)
    return list(files.values())


@functools.cache
def _well_known_module(path: str) -> ModuleType | None:
    """The generated module defining an optional well-known file, if it is installed."""
    if path not in OPTIONAL_WELL_KNOWN:
        return None
    try:
        return importlib.import_module(OPTIONAL_WELL_KNOWN[path])
    except ImportError:
        return None


def _add_with_dependencies(
    descriptor: Any, files: dict[str, descriptor_pb2.FileDescriptorProto]
) -> None:
    if descriptor.name in files:
        return
    for dependency in descriptor.dependencies:
        _add_with_dependencies(dependency, files)
    file = descriptor_pb2.FileDescriptorProto()
    file.ParseFromString(descriptor.serialized_pb)
    files[descriptor.name] = file


def _compile(
    main_name: str,
    texts: Mapping[str, str],
    descriptors: list[descriptor_pb2.FileDescriptorProto],
) -> list[descriptor_pb2.FileDescriptorProto]:
    """protoc's descriptors for `main_name` and everything it imports, dependencies first."""
    with tempfile.TemporaryDirectory(prefix="minibroker-protoc-") as directory:
        root = Path(directory)
        sources = root / "src"
        sources.mkdir()
        _write_sources(sources, texts)
        known = root / "known.pb"
        known.write_bytes(descriptor_pb2.FileDescriptorSet(file=descriptors).SerializeToString())
        output = root / "out.pb"
        _run_protoc(
            [
                f"--descriptor_set_in={known}",
                f"--proto_path={sources}",
                f"--descriptor_set_out={output}",
                "--include_imports",
                main_name,
            ],
            sources,
        )
        file_set = descriptor_pb2.FileDescriptorSet()
        file_set.ParseFromString(output.read_bytes())
    return list(file_set.file)


def _write_sources(sources: Path, texts: Mapping[str, str]) -> None:
    try:
        for name, text in texts.items():
            path = sources / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InvalidSchema(
            f"Invalid schema of type PROTOBUF, details: cannot lay out the references: {error}"
        ) from error


def _run_protoc(arguments: list[str], sources: Path) -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", *arguments],
            cwd=sources,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=PROTOC_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise InvalidSchema(
            f"Invalid schema of type PROTOBUF, details: protoc took over {error.timeout} s"
        ) from error
    if result.returncode != 0:
        raise InvalidSchema(_protoc_error(result.stderr, sources))


def _protoc_error(stderr: str, sources: Path) -> str:
    lines = [
        line.replace(f"{sources}/", "")
        for line in stderr.splitlines()
        if line.strip() and "warning:" not in line
    ]
    return "Invalid schema of type PROTOBUF, details: " + ("; ".join(lines) or "protoc failed")


def _pool(files: list[descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        try:
            pool.AddSerializedFile(file.SerializeToString())
        except (TypeError, ValueError) as error:
            raise InvalidSchema(
                f"Invalid schema of type PROTOBUF, details: {file.name}: {error}"
            ) from error
    return pool
