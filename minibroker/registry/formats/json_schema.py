"""JSON Schema (`schemaType` JSON), as Confluent's Schema Registry serves it.

Parsing and `$ref` resolution are the `jsonschema` and `referencing` libraries': the text must be
JSON (an object or a boolean), valid for the draft its `$schema` names (draft 7 when it names
none, as Confluent), and every `$ref` must resolve — within the document, to a reference given
with it (registered under its name, resolved against the root's `$id` as Confluent does), or to
a bundled meta-schema; nothing is fetched over the network.

The canonical text is Confluent's: the document written back as compact JSON, keys in the
order they came. `normalize=true` sorts object keys as Confluent's normalisation does.

Compatibility follows Confluent's `SchemaDiff` under its default STRICT policy: the writer's
schema is compared with the reader's, each difference gets one of Confluent's
`Difference.Type`s, and the differences outside the compatible set are the errors, written as
Confluent writes them. Their descriptions keep Confluent's two `%s` placeholders, which the
registry fills with the reader's and the writer's role ("new"/"old") as Confluent's
SchemaValidatorBuilder does. Schemas are seen as Confluent's loader (everit) sees them: a
`type` list is an anyOf of one schema per type, several kinds of keyword in one schema an allOf
of one schema per kind, `integer` a number that requires integers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urljoin

import referencing.jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.validators import Draft7Validator, validator_for
from jsonschema_specifications import REGISTRY as META_SCHEMAS
from referencing import Registry, Resource, Specification
from referencing._core import Resolver
from referencing.exceptions import Unresolvable

from minibroker.registry.formats.base import InvalidSchema, ParsedSchema

SCHEMA_TYPE = "JSON"

# Confluent's COMPATIBLE_CHANGES_STRICT: every other difference makes the reader incompatible.
# (Its changes of annotations, $id, title, description and default, are compatible and not
# looked for here.)
_COMPATIBLE = frozenset(
    {
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "MAX_LENGTH_INCREASED",
        "MAX_LENGTH_REMOVED",
        "MIN_LENGTH_DECREASED",
        "MIN_LENGTH_REMOVED",
        "PATTERN_REMOVED",
        "MAXIMUM_INCREASED",
        "MAXIMUM_REMOVED",
        "MINIMUM_DECREASED",
        "MINIMUM_REMOVED",
        "EXCLUSIVE_MAXIMUM_INCREASED",
        "EXCLUSIVE_MAXIMUM_REMOVED",
        "EXCLUSIVE_MINIMUM_DECREASED",
        "EXCLUSIVE_MINIMUM_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "MAX_PROPERTIES_INCREASED",
        "MAX_PROPERTIES_REMOVED",
        "MIN_PROPERTIES_DECREASED",
        "MIN_PROPERTIES_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "MAX_ITEMS_INCREASED",
        "MAX_ITEMS_REMOVED",
        "MIN_ITEMS_DECREASED",
        "MIN_ITEMS_REMOVED",
        "MAX_CONTAINS_INCREASED",
        "MAX_CONTAINS_REMOVED",
        "MIN_CONTAINS_DECREASED",
        "MIN_CONTAINS_REMOVED",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)


def _description(kind: str, path: str) -> str:
    """Confluent's description of an incompatible difference; `%s` are the reader's and the
    writer's roles."""
    if kind in _KEYWORD_ADDED_OR_REMOVED:
        return f"The keyword at path '{path}' in the %s schema is not present in the %s schema"
    if kind in _VALUE_INCREASED:
        return (
            f"The value at path '{path}' in the %s schema is more than its value in the %s schema"
        )
    if kind in _VALUE_DECREASED:
        return (
            f"The value at path '{path}' in the %s schema is less than its value in the %s schema"
        )
    if kind in _VALUE_CHANGED:
        return f"The value at path '{path}' is different between the %s and %s schema"
    if kind in _TYPE_NARROWED:
        return (
            f"An array or combined type at path '{path}' has fewer elements in the %s schema "
            "than the %s schema"
        )
    if kind in _TYPE_EXTENDED:
        return (
            f"An array or combined type at path '{path}' has more elements in the %s schema "
            "than the %s schema"
        )
    if kind in _TYPE_CHANGED:
        return f"A type at path '{path}' is different between the %s schema and the %s schema"
    return _PROPERTY_OR_ITEM_DESCRIPTIONS.get(kind, "").replace("{path}", path)


_KEYWORD_ADDED_OR_REMOVED = frozenset(
    {
        "MAXIMUM_ADDED",
        "MINIMUM_ADDED",
        "EXCLUSIVE_MAXIMUM_ADDED",
        "EXCLUSIVE_MINIMUM_ADDED",
        "MULTIPLE_OF_ADDED",
        "MAX_LENGTH_ADDED",
        "MIN_LENGTH_ADDED",
        "PATTERN_ADDED",
        "REQUIRED_ATTRIBUTE_ADDED",
        "MAX_PROPERTIES_ADDED",
        "MIN_PROPERTIES_ADDED",
        "DEPENDENCY_ARRAY_ADDED",
        "DEPENDENCY_SCHEMA_ADDED",
        "MAX_ITEMS_ADDED",
        "MIN_ITEMS_ADDED",
        "MAX_CONTAINS_ADDED",
        "MIN_CONTAINS_ADDED",
        "UNIQUE_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_REMOVED",
        "ADDITIONAL_PROPERTIES_REMOVED",
        "UNEVALUATED_PROPERTIES_REMOVED",
        "UNEVALUATED_ITEMS_REMOVED",
    }
)
_VALUE_INCREASED = frozenset(
    {
        "MIN_LENGTH_INCREASED",
        "MINIMUM_INCREASED",
        "EXCLUSIVE_MINIMUM_INCREASED",
        "MIN_PROPERTIES_INCREASED",
        "MULTIPLE_OF_EXPANDED",
        "MIN_ITEMS_INCREASED",
        "MIN_CONTAINS_INCREASED",
    }
)
_VALUE_DECREASED = frozenset(
    {
        "MAX_LENGTH_DECREASED",
        "MAXIMUM_DECREASED",
        "MAX_ITEMS_DECREASED",
        "MAX_CONTAINS_DECREASED",
        "EXCLUSIVE_MAXIMUM_DECREASED",
        "MAX_PROPERTIES_DECREASED",
    }
)
_VALUE_CHANGED = frozenset({"PATTERN_CHANGED", "MULTIPLE_OF_CHANGED", "DEPENDENCY_ARRAY_CHANGED"})
_TYPE_NARROWED = frozenset(
    {
        "ADDITIONAL_ITEMS_NARROWED",
        "ENUM_ARRAY_NARROWED",
        "SUM_TYPE_NARROWED",
        "ADDITIONAL_PROPERTIES_NARROWED",
        "UNEVALUATED_PROPERTIES_NARROWED",
        "UNEVALUATED_ITEMS_NARROWED",
    }
)
_TYPE_EXTENDED = frozenset(
    {
        "DEPENDENCY_ARRAY_EXTENDED",
        "PRODUCT_TYPE_EXTENDED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_EXTENDED",
    }
)
_TYPE_CHANGED = frozenset(
    {
        "TYPE_CHANGED",
        "TYPE_NARROWED",
        "COMBINED_TYPE_CHANGED",
        "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
        "ENUM_ARRAY_CHANGED",
    }
)
_ADDED_TO_OPEN = (
    "The %s schema has an open content model and has a property or item at path '{path}' "
    "which is missing in the %s schema"
)
_REMOVED_FROM_CLOSED = (
    "The %s has a closed content model and is missing a property or item present at path "
    "'{path}' in the %s schema"
)
_REMOVED_NOT_COVERED = (
    "A property or item is missing in the %s schema but present at path '{path}' in the %s "
    "schema and is not covered by its partially open content model"
)
_ADDED_NOT_COVERED = (
    "The %s schema has a property or item at path '{path}' which is missing in the %s schema "
    "and is not covered by its partially open content model"
)
_PROPERTY_OR_ITEM_DESCRIPTIONS = {
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": _ADDED_TO_OPEN,
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL": _ADDED_TO_OPEN,
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": _ADDED_TO_OPEN,
    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL": _ADDED_TO_OPEN,
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "The %s schema has an unopen content model and has a required property at path "
        "'{path}' which is missing in the %s schema"
    ),
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": _REMOVED_FROM_CLOSED,
    "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL": _REMOVED_FROM_CLOSED,
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": _REMOVED_NOT_COVERED,
    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": _REMOVED_NOT_COVERED,
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": _ADDED_NOT_COVERED,
    "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": _ADDED_NOT_COVERED,
}


def _error_message(kind: str, path: str) -> str:
    # Confluent's Difference.toString, unbalanced quotes included.
    return f'{{errorType:"{kind}", description:"{_description(kind, path)}\'}}'


# --- parsing ---------------------------------------------------------------------------------


def _invalid(detail: str) -> InvalidSchema:
    return InvalidSchema(f"Invalid schema of type {SCHEMA_TYPE}, details: {detail}")


def _load_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _invalid(f"Invalid JSON in {what}: {e}") from e


def _specification_of(document: Any) -> Specification[Any]:
    dialect = document.get("$schema") if isinstance(document, dict) else None
    if not isinstance(dialect, str):
        return referencing.jsonschema.DRAFT7
    return referencing.jsonschema.specification_with(dialect, default=referencing.jsonschema.DRAFT7)


def _check_schema(document: Any) -> None:
    if not isinstance(document, dict | bool):
        raise _invalid(
            f"Invalid JSON schema: expected an object or boolean at the root, found "
            f"{type(document).__name__}"
        )
    validator = validator_for(document, default=Draft7Validator)
    try:
        validator.check_schema(document)
    except SchemaError as e:
        location = "/".join(str(part) for part in e.path)
        raise _invalid(f"#/{location}: {e.message}") from e


def _referenced(references: Mapping[str, str], root_id: str) -> list[tuple[str, Resource[Any]]]:
    """The referenced schemas under their names, as written and resolved against the root's
    `$id` (Confluent's loader registers the latter)."""
    resources: list[tuple[str, Resource[Any]]] = []
    for name, text in references.items():
        contents = _load_json(text, f"reference '{name}'")
        resource = Resource.from_contents(
            contents, default_specification=referencing.jsonschema.DRAFT7
        )
        resources.append((urljoin(root_id, name), resource))
        resources.append((name, resource))
    return resources


def _check_references(resource: Resource[Any], resolver: Resolver[Any]) -> None:
    """Every `$ref` of the document must resolve: Confluent's loader refuses the schema
    otherwise."""
    contents = resource.contents
    if isinstance(contents, dict) and isinstance(contents.get("$ref"), str):
        try:
            resolver.lookup(contents["$ref"])
        except Unresolvable as e:
            raise _invalid(f"Unresolved $ref '{contents['$ref']}'") from e
    for subresource in resource.subresources():
        _check_references(subresource, resolver.in_subresource(subresource))


@dataclass(frozen=True)
class _Node:
    """A schema inside a document, with what resolves the `$ref`s written in it."""

    contents: Any
    resolver: Resolver[Any]
    specification: Specification[Any]
    # The node stands for its keywords beside `$ref` (the referenced schema is shaped apart).
    ref_applied: bool = False

    def child(self, contents: Any) -> _Node:
        subresource = self.specification.create_resource(contents)
        return _Node(contents, self.resolver.in_subresource(subresource), self.specification)

    def child_at(self, keyword: str) -> _Node | None:
        if not isinstance(self.contents, dict) or keyword not in self.contents:
            return None
        return self.child(self.contents[keyword])

    @property
    def modern(self) -> bool:
        """2019-09 or later: Confluent reads unevaluated* and the split dependency keywords."""
        return self.specification in (
            referencing.jsonschema.DRAFT201909,
            referencing.jsonschema.DRAFT202012,
        )


class JsonSchemaFormat:
    def parse(self, text: str, references: Mapping[str, str]) -> ParsedJsonSchema:
        try:
            return self._parse(text, references)
        except RecursionError as e:
            raise _invalid("the schema is nested too deeply") from e

    def _parse(self, text: str, references: Mapping[str, str]) -> ParsedJsonSchema:
        document = _load_json(text, "schema")
        _check_schema(document)
        specification = _specification_of(document)
        root = specification.create_resource(document)
        referenced = _referenced(references, root.id() or "")
        registry: Registry[Any] = META_SCHEMAS.with_resources(referenced).crawl()
        resolver = registry.resolver_with_root(root)
        _check_references(root, resolver)
        for uri, resource in referenced:
            _check_references(resource, registry.resolver(uri).in_subresource(resource))
        return ParsedJsonSchema(document, _Node(document, resolver, specification))


JSON_FORMAT = JsonSchemaFormat()


@dataclass(frozen=True)
class ParsedJsonSchema:
    document: Any
    root: _Node = field(compare=False)

    @property
    def schema_type(self) -> str:
        return SCHEMA_TYPE

    def canonical(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.document, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def formatted(self, fmt: str | None) -> str:
        return self.canonical()

    def reading_errors(self, writer: ParsedSchema) -> list[str]:
        if not isinstance(writer, ParsedJsonSchema):
            return ["Incompatible because of different schema type"]
        try:
            diff = _differences(writer.root, self.root)
        except RecursionError:
            return ["Incompatible because the schemas are nested too deeply to compare"]
        return [_error_message(kind, path) for kind, path in diff.incompatible()]


# --- the schemas as Confluent's loader sees them ---------------------------------------------

_NUMBER_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
_STRING_KEYWORDS = frozenset({"minLength", "maxLength", "pattern", "format"})
_ARRAY_KEYWORDS = frozenset(
    {"items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains", "prefixItems"}
    | {"unevaluatedItems", "minContains", "maxContains"}
)
_OBJECT_KEYWORDS = frozenset(
    {"properties", "required", "minProperties", "maxProperties", "dependencies"}
    | {"patternProperties", "additionalProperties", "propertyNames"}
    | {"dependentRequired", "dependentSchemas", "unevaluatedProperties"}
)
_KEYWORDS_OF_TYPE = {
    "number": _NUMBER_KEYWORDS,
    "integer": _NUMBER_KEYWORDS,
    "string": _STRING_KEYWORDS,
    "array": _ARRAY_KEYWORDS,
    "object": _OBJECT_KEYWORDS,
}
_SNIFFED_KINDS = (
    ("array", _ARRAY_KEYWORDS),
    ("object", _OBJECT_KEYWORDS),
    ("number", _NUMBER_KEYWORDS),
    ("string", _STRING_KEYWORDS),
)
_CRITERIA = ("allOf", "anyOf", "oneOf")
_MAX_REF_HOPS = 64


@dataclass(frozen=True)
class _Shape:
    """One of everit's schema classes over a node: empty, false, boolean, null, number, string,
    array, object, enum, const, not, conditional, or combined (with a criterion and members)."""

    kind: str
    node: _Node
    criterion: str = ""
    # Members made by the loader (a `type` list, several kinds of keyword) rather than written
    # under allOf/anyOf/oneOf, whose members are shaped only when compared (they may recurse).
    synthetic: tuple[_Shape, ...] | None = None
    integer: bool = False

    @property
    def members(self) -> tuple[_Shape, ...]:
        if self.synthetic is not None:
            return self.synthetic
        return tuple(
            _shape(self.node.child(member)) for member in self.node.contents[self.criterion]
        )

    def identity(self) -> tuple[str, str, bool, bool, str]:
        contents = json.dumps(self.node.contents, sort_keys=True)
        return (self.kind, self.criterion, self.synthetic is None, self.integer, contents)


def _shape(node: _Node, hops: int = 0) -> _Shape:
    contents = node.contents
    ref = contents.get("$ref") if isinstance(contents, dict) and not node.ref_applied else None
    if isinstance(ref, str):
        if hops == _MAX_REF_HOPS:
            return _Shape("empty", node)
        resolved = node.resolver.lookup(ref)
        target = _shape(_Node(resolved.contents, resolved.resolver, node.specification), hops + 1)
        # Before 2019-09 a $ref replaces its siblings; since, they apply too: both must hold.
        beside = _shape(replace(node, ref_applied=True)) if node.modern else None
        if beside is None or beside.kind == "empty":
            return target
        return _Shape("combined", node, criterion="allOf", synthetic=(target, beside))
    if contents is False:
        return _Shape("false", node)
    parts = _shapes_by_keyword(node) if isinstance(contents, dict) else []
    if not parts:
        return _Shape("empty", node)
    if len(parts) == 1:
        return parts[0]
    return _Shape("combined", node, criterion="allOf", synthetic=tuple(parts))


def _shapes_by_keyword(node: _Node) -> list[_Shape]:
    contents: dict[str, Any] = node.contents
    parts: list[_Shape] = []
    if "enum" in contents:
        parts.append(_Shape("enum", node))
    for criterion in _CRITERIA:
        if isinstance(contents.get(criterion), list):
            parts.append(_Shape("combined", node, criterion=criterion))
    if "not" in contents:
        parts.append(_Shape("not", node))
    if "const" in contents and node.specification is not referencing.jsonschema.DRAFT4:
        parts.append(_Shape("const", node))
    types = contents.get("type")
    type_names = [types] if isinstance(types, str) else types if isinstance(types, list) else []
    typed = [_typed_shape(node, name) for name in type_names if isinstance(name, str)]
    if isinstance(types, list):
        parts.append(_Shape("combined", node, criterion="anyOf", synthetic=tuple(typed)))
    else:
        parts.extend(typed)
    consumed = {keyword for name in type_names for keyword in _KEYWORDS_OF_TYPE.get(name, ())}
    for kind, keywords in _SNIFFED_KINDS:
        if (keywords - consumed) & contents.keys():
            parts.append(_Shape(kind, node))
    if contents.keys() & {"if", "then", "else"}:
        parts.append(_Shape("conditional", node))
    return parts


def _typed_shape(node: _Node, type_name: str) -> _Shape:
    if type_name == "integer":
        return _Shape("number", node, integer=True)
    return _Shape(type_name, node)


def _is_empty(node: _Node) -> bool:
    if node.contents is True:
        return True
    return (
        isinstance(node.contents, dict)
        and "$ref" not in node.contents
        and _shape(node).kind == "empty"
    )


# --- comparison ------------------------------------------------------------------------------


_Pair = tuple[Any, ...]
_Found = tuple[str, tuple[str, ...]]


@dataclass
class _Comparison:
    """What all branches of one comparison share: the pairs of schemas being compared (a pair
    met again inside its own comparison is a recursive schema), and each compared pair's
    differences, relative to the pair, so that schemas referring to one another many times are
    compared once (Confluent's Context memo)."""

    known_incompatible: dict[_Pair, list[_Found]]
    in_progress: set[_Pair] = field(default_factory=set)
    results: dict[_Pair, list[_Found]] = field(default_factory=dict)
    assumed_compatible: bool = False

    def incompatible_pairs(self) -> dict[_Pair, list[_Found]]:
        return {
            pair: found
            for pair, found in self.results.items()
            if any(kind not in _COMPATIBLE for kind, _ in found)
        }


@dataclass
class _Diff:
    """Confluent's diff Context: where the comparison is, and the differences found."""

    comparison: _Comparison
    path: list[str] = field(default_factory=list)
    found: list[_Found] = field(default_factory=list)

    def add(self, kind: str, attribute: str | None = None) -> None:
        where = (*self.path, attribute) if attribute is not None else tuple(self.path)
        self.found.append((kind, where))

    def add_relative(self, found: list[_Found]) -> None:
        self.found.extend((kind, (*self.path, *where)) for kind, where in found)

    @contextmanager
    def at(self, segment: str) -> Iterator[None]:
        self.path.append(segment)
        try:
            yield
        finally:
            self.path.pop()

    def sub(self) -> _Diff:
        return _Diff(self.comparison, list(self.path))

    def absorb(self, other: _Diff) -> None:
        self.found.extend(other.found)

    def incompatible(self) -> list[tuple[str, str]]:
        return [
            (kind, "#/" + "/".join(where)) for kind, where in self.found if kind not in _COMPATIBLE
        ]

    def is_compatible(self) -> bool:
        return all(kind in _COMPATIBLE for kind, _ in self.found)


def _differences(writer: _Node, reader: _Node) -> _Diff:
    """Compare, assuming a recursive pair compatible where it recurs; then again, knowing the
    pairs found incompatible, until they are all known (Confluent's fixpoint)."""
    known: dict[_Pair, list[_Found]] = {}
    while True:
        diff = _Diff(_Comparison(known))
        _compare(diff, writer, reader)
        incompatible = diff.comparison.incompatible_pairs()
        if not diff.comparison.assumed_compatible or incompatible.keys() <= known.keys():
            return diff
        known = {**known, **incompatible}


def _compare(diff: _Diff, original: _Node | None, update: _Node | None) -> None:
    """Compare the writer's schema (`original`) with the reader's (`update`)."""
    if original is None or update is None:
        if original is not None:
            diff.add("SCHEMA_REMOVED")
        elif update is not None:
            diff.add("SCHEMA_ADDED")
        return
    _compare_shapes(diff, _shape(original), _shape(update))


def _compare_shapes(diff: _Diff, original: _Shape, update: _Shape) -> None:
    pair = (*_cycle_key(original), *_cycle_key(update))
    comparison = diff.comparison
    known = comparison.results.get(pair)
    if known is None and pair in comparison.in_progress:
        known = comparison.known_incompatible.get(pair)
        comparison.assumed_compatible |= known is None
    if known is not None or pair in comparison.in_progress:
        diff.add_relative(known or [])
        return
    comparison.in_progress.add(pair)
    try:
        pair_diff = _Diff(comparison)
        _compare_shape_pair(pair_diff, original, update)
    finally:
        comparison.in_progress.discard(pair)
    comparison.results[pair] = pair_diff.found
    diff.add_relative(pair_diff.found)


def _cycle_key(shape: _Shape) -> tuple[int, bool, str, str, bool]:
    node = shape.node
    return (
        id(node.contents),
        node.ref_applied,
        shape.kind,
        shape.criterion,
        shape.synthetic is None,
    )


def _compare_shape_pair(diff: _Diff, original: _Shape, update: _Shape) -> None:
    if _matched_across_combination(diff, original, update):
        return
    if original.kind != update.kind:
        if (
            original.kind == "false"
            or update.kind == "empty"
            or _both_connect_bytes(original, update)
        ):
            return
        diff.add("TYPE_CHANGED")
        return
    compare = _COMPARE_BY_KIND.get(original.kind)
    if compare is not None:
        compare(diff, original, update)


def _matched_across_combination(diff: _Diff, original: _Shape, update: _Shape) -> bool:
    """A plain schema read as one branch of a union, or a product read through one of its
    factors."""
    if original.kind != "combined" and update.kind == "combined":
        if len(update.members) == 1:
            return _absorb_if_compatible(diff, original, update.members[0], None)
        if update.criterion in ("anyOf", "oneOf"):
            return any(
                _absorb_if_compatible(diff, original, member, "SUM_TYPE_EXTENDED")
                for member in update.members
            )
    elif original.kind == "combined" and update.kind != "combined":
        if len(original.members) == 1:
            return _absorb_if_compatible(diff, original.members[0], update, None)
        if original.criterion == "allOf":
            return any(
                _absorb_if_compatible(diff, member, update, "PRODUCT_TYPE_NARROWED")
                for member in original.members
            )
    return False


def _absorb_if_compatible(diff: _Diff, original: _Shape, update: _Shape, kind: str | None) -> bool:
    sub = diff.sub()
    _compare_shapes(sub, original, update)
    if not sub.is_compatible():
        return False
    diff.absorb(sub)
    if kind is not None:
        diff.add(kind)
    return True


def _both_connect_bytes(original: _Shape, update: _Shape) -> bool:
    # Kafka Connect's JSON converter changed how it writes decimals; Confluent lets two schemas
    # that both say connect.type bytes stand for each other.
    return all(
        isinstance(shape.node.contents, dict) and shape.node.contents.get("connect.type") == "bytes"
        for shape in (original, update)
    )


def _keyword(shape: _Shape, name: str) -> Any:
    return shape.node.contents.get(name) if isinstance(shape.node.contents, dict) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _compare_limit(diff: _Diff, keyword: str, kind: str, original: Any, update: Any) -> None:
    """minLength, maximum, maxItems ...: added, removed, increased or decreased."""
    before, after = _number(original), _number(update)
    if before == after:
        return
    if before is None:
        diff.add(f"{kind}_ADDED", keyword)
    elif after is None:
        diff.add(f"{kind}_REMOVED", keyword)
    elif before < after:
        diff.add(f"{kind}_INCREASED", keyword)
    else:
        diff.add(f"{kind}_DECREASED", keyword)


def _compare_limits(
    diff: _Diff, original: _Shape, update: _Shape, limits: Mapping[str, str]
) -> None:
    for keyword, kind in limits.items():
        _compare_limit(diff, keyword, kind, _keyword(original, keyword), _keyword(update, keyword))


def _compare_string(diff: _Diff, original: _Shape, update: _Shape) -> None:
    _compare_limits(diff, original, update, {"maxLength": "MAX_LENGTH", "minLength": "MIN_LENGTH"})
    before, after = _keyword(original, "pattern"), _keyword(update, "pattern")
    if before is None and after is not None:
        diff.add("PATTERN_ADDED", "pattern")
    elif before is not None and after is None:
        diff.add("PATTERN_REMOVED", "pattern")
    elif before != after:
        diff.add("PATTERN_CHANGED", "pattern")


def _exclusive_limit(shape: _Shape, keyword: str) -> Any:
    value = _keyword(shape, keyword)
    # Draft 4's boolean exclusiveMaximum only qualifies maximum; it is no limit of its own.
    return None if isinstance(value, bool) else value


def _compare_number(diff: _Diff, original: _Shape, update: _Shape) -> None:
    _compare_limits(diff, original, update, {"maximum": "MAXIMUM", "minimum": "MINIMUM"})
    for keyword, kind in (
        ("exclusiveMaximum", "EXCLUSIVE_MAXIMUM"),
        ("exclusiveMinimum", "EXCLUSIVE_MINIMUM"),
    ):
        before, after = _exclusive_limit(original, keyword), _exclusive_limit(update, keyword)
        _compare_limit(diff, keyword, kind, before, after)
    _compare_multiple_of(diff, _keyword(original, "multipleOf"), _keyword(update, "multipleOf"))
    if original.integer and not update.integer:
        diff.add("TYPE_EXTENDED")
    elif update.integer and not original.integer:
        diff.add("TYPE_NARROWED")


def _decimal(value: Any) -> Decimal | None:
    if _number(value) is None:
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _compare_multiple_of(diff: _Diff, original: Any, update: Any) -> None:
    before, after = _decimal(original), _decimal(update)
    if before == after:
        return
    if before is None:
        diff.add("MULTIPLE_OF_ADDED", "multipleOf")
    elif after is None:
        diff.add("MULTIPLE_OF_REMOVED", "multipleOf")
    elif before != 0 and after % before == 0:
        diff.add("MULTIPLE_OF_EXPANDED", "multipleOf")
    elif after != 0 and before % after == 0:
        diff.add("MULTIPLE_OF_REDUCED", "multipleOf")
    else:
        diff.add("MULTIPLE_OF_CHANGED", "multipleOf")


def _json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _compare_enum(diff: _Diff, original: _Shape, update: _Shape) -> None:
    before_values, after_values = _keyword(original, "enum"), _keyword(update, "enum")
    before = {_json_key(v) for v in before_values} if isinstance(before_values, list) else set()
    after = {_json_key(v) for v in after_values} if isinstance(after_values, list) else set()
    if before == after:
        return
    if after >= before:
        diff.add("ENUM_ARRAY_EXTENDED", "enum")
    elif before >= after:
        diff.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        diff.add("ENUM_ARRAY_CHANGED", "enum")


def _compare_const(diff: _Diff, original: _Shape, update: _Shape) -> None:
    if _json_key(_keyword(original, "const")) != _json_key(_keyword(update, "const")):
        diff.add("ENUM_ARRAY_CHANGED", "const")


def _compare_not(diff: _Diff, original: _Shape, update: _Shape) -> None:
    with diff.at("not"):
        sub = diff.sub()
        # What the reader refuses must be refused by the writer too: compare the other way.
        _compare(sub, update.node.child_at("not"), original.node.child_at("not"))
        diff.add("NOT_TYPE_NARROWED" if sub.is_compatible() else "NOT_TYPE_EXTENDED")


def _compare_combined(diff: _Diff, original: _Shape, update: _Shape) -> None:
    if _compare_criteria(diff, original, update) == "COMBINED_TYPE_CHANGED":
        return
    before = list({member.identity(): member for member in original.members}.values())
    after = list({member.identity(): member for member in update.members}.values())
    if len(before) < len(after):
        diff.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(before) > len(after):
        diff.add("PRODUCT_TYPE_NARROWED" if original.criterion == "allOf" else "SUM_TYPE_NARROWED")
    readable_by: list[list[int]] = []
    for index, written in enumerate(before):
        with diff.at(f"{original.criterion}/{index}"):
            readable_by.append([j for j, read in enumerate(after) if _reads(diff, written, read)])
    if _maximum_matching(readable_by, len(after)) < min(len(before), len(after)):
        diff.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _reads(diff: _Diff, written: _Shape, read: _Shape) -> bool:
    sub = diff.sub()
    _compare_shapes(sub, written, read)
    return sub.is_compatible()


def _maximum_matching(edges: list[list[int]], right_size: int) -> int:
    """Size of a maximum matching of a bipartite graph (Kuhn's augmenting paths)."""
    matched_to: list[int | None] = [None] * right_size

    def augment(left: int, seen: set[int]) -> bool:
        for right in edges[left]:
            if right in seen:
                continue
            seen.add(right)
            current = matched_to[right]
            if current is None or augment(current, seen):
                matched_to[right] = left
                return True
        return False

    return sum(1 for left in range(len(edges)) if augment(left, set()))


def _compare_criteria(diff: _Diff, original: _Shape, update: _Shape) -> str | None:
    if original.criterion == update.criterion:
        return None
    single_before, single_after = len(original.members) == 1, len(update.members) == 1
    extended = (
        update.criterion == "anyOf"
        or (single_before and single_after)
        or (single_before and update.criterion == "oneOf")
        or (single_after and original.criterion == "allOf")
    )
    kind = "COMBINED_TYPE_EXTENDED" if extended else "COMBINED_TYPE_CHANGED"
    diff.add(kind)
    return kind


# --- objects ---


def _schema_map(shape: _Shape, keyword: str) -> dict[str, _Node]:
    value = _keyword(shape, keyword)
    if not isinstance(value, dict):
        return {}
    return {name: shape.node.child(schema) for name, schema in value.items()}


def _required(shape: _Shape) -> set[str]:
    value = _keyword(shape, "required")
    return {name for name in value if isinstance(name, str)} if isinstance(value, list) else set()


def _has_default(node: _Node) -> bool:
    return isinstance(node.contents, dict) and "default" in node.contents


def _additional(shape: _Shape, keyword: str) -> tuple[bool, _Node | None]:
    """(whether additional properties or items are allowed, the schema they must match)."""
    value = _keyword(shape, keyword)
    if value is False:
        return False, None
    if isinstance(value, dict):
        return True, shape.node.child(value)
    return True, None


def _unevaluated(shape: _Shape, keyword: str) -> _Node | None:
    if not shape.node.modern:
        return None
    return (
        shape.node.child_at(keyword) if isinstance(_keyword(shape, keyword), dict | bool) else None
    )


def _is_open_object(shape: _Shape) -> bool:
    allowed, schema = _additional(shape, "additionalProperties")
    if not allowed or schema is not None or _schema_map(shape, "patternProperties"):
        return False
    unevaluated = _unevaluated(shape, "unevaluatedProperties")
    return unevaluated is None or _is_empty(unevaluated)


def _pattern_matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def _partially_open_schema(shape: _Shape, name: str) -> _Node | None:
    """The schema a property outside `properties` must match, if the object takes any."""
    for pattern, schema in _schema_map(shape, "patternProperties").items():
        if _pattern_matches(pattern, name):
            return schema
    allowed, additional = _additional(shape, "additionalProperties")
    if additional is not None:
        return additional
    unevaluated = _unevaluated(shape, "unevaluatedProperties")
    if (
        allowed
        and unevaluated is not None
        and unevaluated.contents is not False
        and not _is_empty(unevaluated)
    ):
        return unevaluated
    return None


def _compare_object(diff: _Diff, original: _Shape, update: _Shape) -> None:
    _compare_required(diff, original, update)
    _compare_properties(diff, original, update)
    _compare_dependencies(diff, original, update)
    with diff.at("additionalProperties"):
        _compare_additional(diff, original, update, "additionalProperties", "ADDITIONAL_PROPERTIES")
    _compare_unevaluated(diff, original, update, "unevaluatedProperties", "UNEVALUATED_PROPERTIES")
    _compare_limits(
        diff,
        original,
        update,
        {"maxProperties": "MAX_PROPERTIES", "minProperties": "MIN_PROPERTIES"},
    )


def _compare_required(diff: _Diff, original: _Shape, update: _Shape) -> None:
    before, after = _required(original), _required(update)
    update_properties = _schema_map(update, "properties")
    with diff.at("required"):
        for name in _schema_map(original, "properties"):
            if name not in update_properties:
                continue
            if name in before and name not in after:
                diff.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif name in after and name not in before:
                with_default = _has_default(update_properties[name])
                diff.add(
                    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                    if with_default
                    else "REQUIRED_ATTRIBUTE_ADDED",
                    name,
                )


def _compare_properties(diff: _Diff, original: _Shape, update: _Shape) -> None:
    before, after = _schema_map(original, "properties"), _schema_map(update, "properties")
    with diff.at("properties"):
        for name in [*before, *(name for name in after if name not in before)]:
            with diff.at(name):
                if name not in after:
                    _property_removed(diff, update, name, before[name])
                elif name not in before:
                    _property_added(diff, original, update, name, after[name])
                else:
                    _compare(diff, before[name], after[name])


def _property_removed(diff: _Diff, update: _Shape, name: str, written: _Node) -> None:
    _member_removed(
        diff, "PROPERTY", _is_open_object(update), _partially_open_schema(update, name), written
    )


def _member_removed(
    diff: _Diff, member: str, open_model: bool, partial: _Node | None, written: _Node
) -> None:
    """A property or an item (`member`) of the writer's schema missing from the reader's."""
    if open_model:
        diff.add(f"{member}_REMOVED_FROM_OPEN_CONTENT_MODEL")
        return
    if partial is not None:
        covered = _compare_covered(diff, written, partial)
        coverage = "IS_COVERED_BY" if covered else "NOT_COVERED_BY"
        diff.add(f"{member}_REMOVED_{coverage}_PARTIALLY_OPEN_CONTENT_MODEL")
    elif written.contents is False:
        diff.add(f"{member}_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        diff.add(f"{member}_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _property_added(diff: _Diff, original: _Shape, update: _Shape, name: str, read: _Node) -> None:
    required = name in _required(update)
    if _is_open_object(original):
        if _is_empty(read):
            diff.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL")
        elif required and _has_default(read):
            diff.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL")
        elif required:
            diff.add("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
        else:
            diff.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL")
        return
    partial = _partially_open_schema(original, name)
    if partial is not None:
        covered = _compare_covered(diff, partial, read)
        diff.add(
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            if covered
            else "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        )
    if required and _has_default(read):
        diff.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL")
    elif required:
        diff.add("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        diff.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")


def _compare_covered(diff: _Diff, written: _Node, read: _Node) -> bool:
    """Compare a property or item with the schema that covers it on the other side; keep the
    differences and say whether they are all compatible."""
    sub = diff.sub()
    _compare(sub, written, read)
    diff.absorb(sub)
    return sub.is_compatible()


def _property_dependencies(shape: _Shape) -> dict[str, set[str]]:
    keyword = "dependentRequired" if shape.node.modern else "dependencies"
    value = _keyword(shape, keyword)
    if not isinstance(value, dict):
        return {}
    return {name: set(names) for name, names in value.items() if isinstance(names, list)}


def _schema_dependencies(shape: _Shape) -> dict[str, _Node]:
    keyword = "dependentSchemas" if shape.node.modern else "dependencies"
    value = _keyword(shape, keyword)
    if not isinstance(value, dict):
        return {}
    return {
        name: shape.node.child(schema)
        for name, schema in value.items()
        if isinstance(schema, dict | bool)
    }


def _compare_dependencies(diff: _Diff, original: _Shape, update: _Shape) -> None:
    with diff.at("dependencies"):
        before, after = _property_dependencies(original), _property_dependencies(update)
        for name in [*before, *(name for name in after if name not in before)]:
            with diff.at(name):
                _compare_dependency_array(diff, before.get(name), after.get(name))
        before_schemas, after_schemas = _schema_dependencies(original), _schema_dependencies(update)
        for name in [
            *before_schemas,
            *(name for name in after_schemas if name not in before_schemas),
        ]:
            with diff.at(name):
                if name not in after_schemas:
                    diff.add("DEPENDENCY_SCHEMA_REMOVED")
                elif name not in before_schemas:
                    diff.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    _compare(diff, before_schemas[name], after_schemas[name])


def _compare_dependency_array(diff: _Diff, before: set[str] | None, after: set[str] | None) -> None:
    if after is None:
        diff.add("DEPENDENCY_ARRAY_REMOVED")
    elif before is None:
        diff.add("DEPENDENCY_ARRAY_ADDED")
    elif before != after:
        if after >= before:
            diff.add("DEPENDENCY_ARRAY_EXTENDED")
        elif before >= after:
            diff.add("DEPENDENCY_ARRAY_NARROWED")
        else:
            diff.add("DEPENDENCY_ARRAY_CHANGED")


def _compare_additional(
    diff: _Diff, original: _Shape, update: _Shape, keyword: str, kind: str
) -> None:
    """additionalProperties / additionalItems: allowed or not, and the schema they match."""
    (allowed_before, before), (allowed_after, after) = (
        _additional(original, keyword),
        _additional(update, keyword),
    )
    if allowed_before != allowed_after:
        diff.add(f"{kind}_ADDED" if allowed_after else f"{kind}_REMOVED")
    elif before is None and after is not None:
        diff.add(f"{kind}_NARROWED")
    elif before is not None and after is None:
        diff.add(f"{kind}_EXTENDED")
    elif before is not None and after is not None:
        _compare(diff, before, after)


def _compare_unevaluated(
    diff: _Diff, original: _Shape, update: _Shape, keyword: str, kind: str
) -> None:
    before, after = _unevaluated(original, keyword), _unevaluated(update, keyword)
    if before is None and after is None:
        return
    with diff.at(keyword):
        if before is None or after is None:
            present = after if before is None else before
            refuses = present is not None and present.contents is False
            if before is None:
                diff.add(f"{kind}_REMOVED" if refuses else f"{kind}_NARROWED")
            else:
                diff.add(f"{kind}_ADDED" if refuses else f"{kind}_EXTENDED")
        elif before.contents is False and after.contents is not False:
            diff.add(f"{kind}_ADDED")
        elif before.contents is not False and after.contents is False:
            diff.add(f"{kind}_REMOVED")
        elif _is_empty(before) and not _is_empty(after):
            diff.add(f"{kind}_NARROWED")
        elif not _is_empty(before) and _is_empty(after):
            diff.add(f"{kind}_EXTENDED")
        else:
            _compare(diff, before, after)


# --- arrays ---


@dataclass(frozen=True)
class _Items:
    every: _Node | None
    positional: list[_Node]
    additional_allowed: bool
    additional: _Node | None


def _items(shape: _Shape) -> _Items:
    if shape.node.specification is referencing.jsonschema.DRAFT202012:
        prefix = _keyword(shape, "prefixItems")
        positional = [shape.node.child(item) for item in prefix] if isinstance(prefix, list) else []
        # 2020-12's `items` is draft 7's additionalItems after prefixItems, and always a boolean.
        if positional or isinstance(_keyword(shape, "items"), bool):
            allowed, additional = _additional(shape, "items")
            return _Items(None, positional, allowed, additional)
        return _Items(shape.node.child_at("items"), [], True, None)
    items = _keyword(shape, "items")
    allowed, additional = _additional(shape, "additionalItems")
    if isinstance(items, list):
        return _Items(None, [shape.node.child(item) for item in items], allowed, additional)
    return _Items(shape.node.child_at("items"), [], allowed, additional)


def _is_open_array(items: _Items, shape: _Shape) -> bool:
    if not items.additional_allowed or items.additional is not None:
        return False
    unevaluated = _unevaluated(shape, "unevaluatedItems")
    return unevaluated is None or _is_empty(unevaluated)


def _partially_open_items(items: _Items, shape: _Shape) -> _Node | None:
    if items.additional is not None:
        return items.additional
    unevaluated = _unevaluated(shape, "unevaluatedItems")
    if items.additional_allowed and unevaluated is not None and unevaluated.contents is not False:
        return None if _is_empty(unevaluated) else unevaluated
    return None


def _compare_array(diff: _Diff, original: _Shape, update: _Shape) -> None:
    before, after = _items(original), _items(update)
    with diff.at("items"):
        _compare(diff, before.every, after.every)
    _compare_positional_items(diff, (original, before), (update, after))
    with diff.at("additionalItems"):
        _compare_additional_items(diff, before, after)
    _compare_unevaluated(diff, original, update, "unevaluatedItems", "UNEVALUATED_ITEMS")
    _compare_limits(diff, original, update, {"maxItems": "MAX_ITEMS", "minItems": "MIN_ITEMS"})
    unique_before, unique_after = (
        _keyword(original, "uniqueItems") is True,
        _keyword(update, "uniqueItems") is True,
    )
    if unique_before and not unique_after:
        diff.add("UNIQUE_ITEMS_REMOVED", "uniqueItems")
    elif unique_after and not unique_before:
        diff.add("UNIQUE_ITEMS_ADDED", "uniqueItems")
    _compare_limits(
        diff, original, update, {"maxContains": "MAX_CONTAINS", "minContains": "MIN_CONTAINS"}
    )


def _compare_additional_items(diff: _Diff, before: _Items, after: _Items) -> None:
    if before.additional_allowed != after.additional_allowed:
        diff.add(
            "ADDITIONAL_ITEMS_REMOVED" if before.additional_allowed else "ADDITIONAL_ITEMS_ADDED"
        )
    elif before.additional is None and after.additional is not None:
        diff.add("ADDITIONAL_ITEMS_NARROWED")
    elif before.additional is not None and after.additional is None:
        diff.add("ADDITIONAL_ITEMS_EXTENDED")
    elif before.additional is not None and after.additional is not None:
        _compare(diff, before.additional, after.additional)


def _compare_positional_items(
    diff: _Diff, original: tuple[_Shape, _Items], update: tuple[_Shape, _Items]
) -> None:
    (original_shape, before), (update_shape, after) = original, update
    for index in range(max(len(before.positional), len(after.positional))):
        with diff.at(f"items/{index}"):
            if index < len(before.positional) and index < len(after.positional):
                _compare(diff, before.positional[index], after.positional[index])
            elif index < len(before.positional):
                _item_removed(diff, update_shape, after, before.positional[index])
            else:
                _item_added(diff, original_shape, before, after.positional[index])


def _item_removed(diff: _Diff, update: _Shape, after: _Items, written: _Node) -> None:
    open_model = _is_open_array(after, update)
    partial = None if open_model else _partially_open_items(after, update)
    _member_removed(diff, "ITEM", open_model, partial, written)


def _item_added(diff: _Diff, original: _Shape, before: _Items, read: _Node) -> None:
    if _is_open_array(before, original):
        diff.add(
            "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
            if _is_empty(read)
            else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
        )
        return
    partial = _partially_open_items(before, original)
    if partial is None:
        diff.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")
        return
    covered = _compare_covered(diff, partial, read)
    diff.add(
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        if covered
        else "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
    )


_COMPARE_BY_KIND: dict[str, Callable[[_Diff, _Shape, _Shape], None]] = {
    "string": _compare_string,
    "number": _compare_number,
    "enum": _compare_enum,
    "const": _compare_const,
    "combined": _compare_combined,
    "not": _compare_not,
    "object": _compare_object,
    "array": _compare_array,
}
