"""Codec classes for Kafka APIs that kafka-python's `kafka.protocol` lacks, built from
message definitions written here, one `<ApiName>.def` file per API in this package.

A definition file holds the layout of the API's request and its response, in a small
indented text format: one line per message, per common struct and per field.

    # ConsumerGroupHeartbeat: a consumer's heartbeat in the consumer group protocol.
    request ConsumerGroupHeartbeatRequest key=68 valid=0-1 flexible=0+
      GroupId string 0+
      InstanceId string 0+ nullable=0+ default=null
      RebalanceTimeoutMs int32 0+ default=-1
      TopicPartitions []TopicPartitions 0+ nullable=0+ default=null
        TopicId uuid 0+
        Partitions []int32 0+

    response ConsumerGroupHeartbeatResponse key=68 valid=0-1 flexible=0+
      ...

- A message line starts at column 0: `request` or `response`, the message name, its API
  key, its valid versions and its flexible versions.
- A field line is indented two spaces deeper than what it belongs to: name, type,
  versions, then optional `attribute=value` words and flags:
  `nullable=<versions>`, `default=<value>` (`null`, a number, `0x...`, `true`/`false`,
  or a word for strings), `tag=<n> tagged=<versions>` for a tagged field, and the flags
  `ignorable` and `mapKey`. Types are Kafka's: `int8` ... `int64`, `uint16`, `float64`,
  `bool`, `uuid`, `string`, `bytes`, `records`, `[]<simple type>`, a struct type name
  (`CurrentLeader`) or an array of structs (`[]TopicPartitions`), whose fields follow
  indented below the field.
- `struct <Name>` at column 0, after a message line, declares a struct common to that
  message (Kafka's commonStructs): its fields follow indented, and a field of type `Name`
  or `[]Name` with no fields of its own below it gets them.
- Versions are written as Kafka writes them: `3`, `1-2`, `0+`, `none`.
- `#` starts a comment; blank lines are ignored.

The parser turns each message into the dict kafka-python builds from its own JSON schema
files (field `name`, `type`, `versions`, `nullableVersions`, `default`, `tag`,
`taggedVersions`, nested `fields`), and the class is made by kafka-python's own message
metaclass with that dict in place of the file it would load, so encode, decode and the
compiled decoders (`_struct.compiled_decode_from`) work as for its own classes.
`tests/protocol/test_definitions.py` checks every definition against Kafka 4.3's JSON.
`codec.py` uses our definitions only for the API keys kafka-python has no class for, and
builds each API's classes when it is first looked up (`MessageClasses`): building them all
would add some 20 ms to every start.
"""

from __future__ import annotations

import importlib
import importlib.resources
import threading
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.api_message import ApiMessage, ApiMessageData
from kafka.protocol.data_container import SlotsBuilder
from kafka.protocol.schemas import StructField

INDENT = 2
MESSAGE_KINDS = ("request", "response")
_ATTRIBUTES = {"nullable": "nullableVersions", "default": "default", "tagged": "taggedVersions"}
_FLAGS = ("ignorable", "mapKey")


class DefinitionError(ValueError):
    """A definition file does not follow the format; names the file and line."""


@dataclass
class _Node:
    """A message, common struct or field being parsed, with the fields below it."""

    attrs: dict[str, Any]
    fields: list[dict[str, Any]] = field(default_factory=list)


class _DefinedMessageData(ApiMessageData):  # type: ignore[misc]
    """kafka-python's message metaclass, given the schema dict (`schema=`) instead of
    loading a JSON file named after the class."""

    def __new__(
        metacls,
        name: str,
        bases: tuple[type, ...],
        attrs: dict[str, Any],
        schema: dict[str, Any] | None = None,
        **kw: Any,
    ) -> Any:
        if schema is None:  # the versioned wrappers kafka-python derives (cls[version])
            return super().__new__(metacls, name, bases, attrs, **kw)
        attrs["_json"] = schema
        attrs["_struct"] = StructField(schema)
        return SlotsBuilder.__new__(metacls, name, bases, attrs)

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        attrs: dict[str, Any],
        schema: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(name, bases, attrs, **kw)


def message_class(schema: dict[str, Any]) -> type[ApiMessage]:
    """A kafka-python message class for a parsed message definition."""
    cls: type[ApiMessage] = _DefinedMessageData(
        schema["name"], (ApiMessage,), {"__module__": __name__}, schema=schema
    )
    return cls


def definition_files() -> Iterator[tuple[str, str]]:
    """(file name, text) of every definition file in this package."""
    for entry in sorted(importlib.resources.files(__package__).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".def"):
            yield entry.name, entry.read_text(encoding="utf-8")


def parse(text: str, source: str = "<definition>") -> list[dict[str, Any]]:
    """The messages a definition text declares, as kafka-python schema dicts."""
    messages: list[_Node] = []
    commons: list[dict[str, _Node]] = []
    stack: list[tuple[int, _Node]] = []  # (indent, node) from the message down
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        indent = len(line) - len(line.lstrip(" "))
        words = line.split()
        try:
            if indent == 0:
                node = _top_level(words, messages, commons)
                stack = [(0, node)]
                continue
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if not stack or indent != stack[-1][0] + INDENT:
                raise DefinitionError(f"indented {indent} spaces, not under a message or field")
            node = _Node(_field(words))
            stack[-1][1].fields.append(node.attrs)
            node.attrs["fields"] = node.fields
            stack.append((indent, node))
        except (DefinitionError, ValueError) as exc:
            raise DefinitionError(f"{source}:{number}: {exc}") from exc
    return [
        _finished(message, common, source)
        for message, common in zip(messages, commons, strict=True)
    ]


def _top_level(words: list[str], messages: list[_Node], commons: list[dict[str, _Node]]) -> _Node:
    kind = words[0]
    if kind == "struct":
        if len(words) != 2 or not messages:
            raise DefinitionError("a struct line is `struct <Name>`, after a message line")
        node = _Node({"name": words[1]})
        commons[-1][words[1]] = node
        return node
    if kind not in MESSAGE_KINDS or len(words) != 5:
        raise DefinitionError(
            "a message line is `request|response <Name> key=<n> valid=<v> flexible=<v>`"
        )
    values = _keywords(words[2:], ("key", "valid", "flexible"))
    node = _Node(
        {
            "apiKey": int(values["key"]),
            "type": kind,
            "name": words[1],
            "validVersions": values["valid"],
            "flexibleVersions": values["flexible"],
        }
    )
    messages.append(node)
    commons.append({})
    return node


def _keywords(words: list[str], names: Collection[str]) -> dict[str, str]:
    values = dict(word.split("=", 1) for word in words if "=" in word)
    if sorted(values) != sorted(names) or len(words) != len(names):
        raise DefinitionError(f"expected {', '.join(f'{n}=' for n in names)}, got {words}")
    return values


def _field(words: list[str]) -> dict[str, Any]:
    if len(words) < 3:
        raise DefinitionError("a field line is `<Name> <type> <versions> [attributes]`")
    name, type_, versions, *rest = words
    attrs: dict[str, Any] = {"name": name, "type": type_, "versions": versions}
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq and key in _FLAGS:
            attrs[key] = True
        elif eq and key == "tag":
            attrs["tag"] = int(value)
        elif eq and key in _ATTRIBUTES:
            attrs[_ATTRIBUTES[key]] = value
        else:
            raise DefinitionError(f"unknown attribute {word!r}")
    if ("tag" in attrs) != ("taggedVersions" in attrs):
        raise DefinitionError("a tagged field has both tag= and tagged=")
    return attrs


def _finished(message: _Node, common: dict[str, _Node], source: str) -> dict[str, Any]:
    message.attrs["fields"] = message.fields
    try:
        _resolve(message.fields, common)
    except DefinitionError as exc:
        raise DefinitionError(f"{source}: {message.attrs['name']}: {exc}") from exc
    return message.attrs


def _resolve(fields: list[dict[str, Any]], common: dict[str, _Node]) -> None:
    """Gives the fields that name a common struct its fields, and drops empty `fields`
    lists (kafka-python reads a `fields` key as "this is a struct")."""
    for attrs in fields:
        if "fields" not in attrs:  # resolved before, through a common struct
            continue
        struct_name = attrs["type"].removeprefix("[]")
        if not attrs["fields"]:
            if struct_name in common:
                attrs["fields"] = common[struct_name].fields
            elif struct_name[:1].isupper():
                raise DefinitionError(f"struct type {struct_name} has no fields")
            else:
                del attrs["fields"]
                continue
        _resolve(attrs["fields"], common)


class MessageClasses(dict[tuple[int, str], type[ApiMessage]]):
    """Message classes by (API key, "request"/"response"): those given; those of the
    kafka-python module named for an API key, imported when the key is first looked up; and
    for the other keys our definitions declare, classes built from them when first looked up.
    Nothing is built before it is used, which keeps `minibroker serve`'s start short."""

    def __init__(
        self,
        classes: Mapping[tuple[int, str], type[ApiMessage]],
        kafka_python_modules: Mapping[int, str] | None = None,
    ) -> None:
        super().__init__(classes)
        self._modules = dict(kafka_python_modules or {})
        self._files = {
            key: name
            for name, text in definition_files()
            for key in _message_keys(text, name)
            if key not in classes and key[0] not in self._modules
        }
        self._lock = threading.Lock()

    def __missing__(self, key: tuple[int, str]) -> type[ApiMessage]:
        module, name = self._modules.get(key[0]), self._files.get(key)
        if module is None and name is None:
            raise KeyError(key)
        with self._lock:
            if key not in self:
                if module is not None:
                    self._import(module)
                elif name is not None:
                    self._build(name)
        return dict.__getitem__(self, key)

    def _import(self, module_name: str) -> None:
        """The message classes a kafka-python module defines, under their keys."""
        for value in vars(importlib.import_module(module_name)).values():
            if (key := _message_key(value)) is not None:
                self.setdefault(key, value)

    def _build(self, name: str) -> None:
        text = importlib.resources.files(__package__).joinpath(name).read_text("utf-8")
        for schema in parse(text, name):
            if (defined := (schema["apiKey"], schema["type"])) in self._files:
                self[defined] = message_class(schema)

    def get(  # type: ignore[override]
        self, key: tuple[int, str], default: None = None
    ) -> type[ApiMessage] | None:
        try:
            return self[key]
        except KeyError:
            return default


def _message_key(value: object) -> tuple[int, str] | None:
    """(API key, kind) of a kafka-python message class (not one of its per-version
    subclasses, nor a base class), None for anything else."""
    if (
        isinstance(value, type)
        and issubclass(value, ApiMessage)
        and getattr(value, "_class_version", 0) is None
        and getattr(value, "_json", None)
    ):
        return getattr(value, "API_KEY"), getattr(value, "type")  # noqa: B009
    return None


def _message_keys(text: str, source: str) -> Iterator[tuple[int, str]]:
    """(API key, kind) of the messages a definition text declares, from its message lines."""
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words and words[0] in MESSAGE_KINDS and not line[0].isspace():
            try:
                yield int(_keywords(words[2:], ("key", "valid", "flexible"))["key"]), words[0]
            except (DefinitionError, ValueError) as exc:
                raise DefinitionError(f"{source}: {line}: {exc}") from exc
