"""The Protobuf schema format: parsing .proto text and base64 descriptors with protoc, the
canonical rendering, Confluent's compatibility rules, and decoding Confluent-framed values."""

from __future__ import annotations

import base64
import importlib
import subprocess
import sys
from types import ModuleType

import pytest
from confluent_kafka.schema_registry.common.protobuf import (
    _create_index_array,
    _init_pool,
    _schema_to_str,
    _str_to_proto,
)
from confluent_kafka.schema_registry.common.serde import SchemaId
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from minibroker.registry.formats.base import InvalidSchema
from minibroker.registry.formats.protobuf import (
    PROTOBUF_FORMAT,
    ProtobufSchema,
    decode_message,
    read_message_indexes,
)

parse = PROTOBUF_FORMAT.parse

CUSTOMER = """\
syntax = "proto3";
package mbtest.common;

message Customer {
  string name = 1;
  int32 tier = 2;
}
"""

ORDERS = """\
syntax = "proto3";
package mbtest.orders;

import "mbtest/common/customer.proto";
import "google/protobuf/timestamp.proto";

message Order {
  string id = 1;
  mbtest.common.Customer customer = 2;
  google.protobuf.Timestamp placed = 3;
  map<string, int64> quantities = 4;
  oneof payment {
    string card = 5;
    int64 voucher = 6;
  }
  Status status = 7;
  enum Status {
    NEW = 0;
    PAID = 1;
  }
}

message Batch {
  message Entry {
    Order order = 1;
    optional string remark = 2;
  }
  repeated Entry entries = 1;
}
"""

CUSTOMER_REFS = {"mbtest/common/customer.proto": CUSTOMER}


# Schemas whose canonical text must parse back to the very same descriptor.
ROUND_TRIP = {
    "proto2 with defaults, groups, extensions and custom options": """
syntax = "proto2";
package shop.v1;
import "google/protobuf/descriptor.proto";
option java_package = "com.example.shop";
option optimize_for = SPEED;
extend google.protobuf.FieldOptions { optional string label = 50001; }
message Order {
  required string id = 1 [(label) = "key"];
  optional int32 qty = 2 [default = 1];
  optional string note = 3 [default = "a \\"quoted\\" note\\n"];
  optional bytes raw = 4 [default = "\\001\\377"];
  optional double ratio = 5 [default = inf];
  optional Status status = 6 [default = ACTIVE, deprecated = true];
  enum Status { ACTIVE = 1; CLOSED = 2; }
  repeated group Line = 7 { required int32 n = 8; }
  extensions 100 to 199;
  optional float f = 9 [json_name = "eff"];
  reserved 20 to 30, 40;
  reserved "old_name";
}
extend Order { optional int32 extra = 100; }
""",
    "names that shadow a package": """
syntax = "proto3";
package a.b;
message b { message c { int32 x = 1; } }
message c { string top = 1; }
message M { b.c one = 1; a.b.b.c two = 2; }
message N { message c { string y = 1; } c inner = 1; .a.b.c outer = 2; }
""",
    "nested types and maps in declaration order": """
syntax = "proto3";
package ord;
message W {
  map<string, int32> first = 1;
  message Mid { int32 v = 1; }
  map<int64, Mid> second = 2;
  Mid direct = 3;
  message Last {}
  optional string maybe = 4;
  oneof pick { Last l = 5; string s = 6; }
  repeated sint64 packed_values = 7 [packed = false];
}
""",
    "services and enums": """
syntax = "proto3";
package svc;
enum Color { option allow_alias = true; RED = 0; CRIMSON = 0; BLUE = 1 [deprecated = true];
  reserved 5 to 9, 100 to max; reserved "GREEN"; }
message Ping { Color color = 1; }
service Pinger {
  rpc Ping(svc.Ping) returns (svc.Ping);
  rpc Stream(stream svc.Ping) returns (stream svc.Ping) {
    option idempotency_level = NO_SIDE_EFFECTS;
  }
}
""",
    "no syntax line (proto2)": "message Plain { optional int32 x = 1; }",
}


@pytest.mark.parametrize("text", ROUND_TRIP.values(), ids=ROUND_TRIP.keys())
def test_canonical_text_parses_back_to_the_same_descriptor(text: str) -> None:
    parsed = parse(text, {})
    again = parse(parsed.canonical(), {})
    assert again.file == parsed.file
    assert again.canonical() == parsed.canonical()


def test_canonical_text_is_protos_own_layout() -> None:
    parsed = parse("syntax='proto3'; package p; message A{int32 x=1;map<string,A> m=2;}", {})
    assert parsed.canonical() == (
        'syntax = "proto3";\n'
        "package p;\n"
        "\n"
        "message A {\n"
        "  int32 x = 1;\n"
        "  map<string, A> m = 2;\n"
        "}\n"
    )
    assert parsed.normalized() == parsed.formatted(None) == parsed.canonical()
    assert parsed.schema_type == "PROTOBUF"


def test_text_and_base64_of_one_schema_have_one_canonical_text() -> None:
    from_text = parse(ORDERS, CUSTOMER_REFS)
    serialized = from_text.formatted("serialized")
    from_base64 = parse(serialized, CUSTOMER_REFS)
    assert from_base64.canonical() == from_text.canonical()
    assert base64.b64decode(serialized) == from_text.file.SerializeToString()


def test_references_resolve_imported_types() -> None:
    parsed = parse(ORDERS, CUSTOMER_REFS)
    customer = parsed.pool.FindMessageTypeByName("mbtest.orders.Order").fields_by_name["customer"]
    assert customer.message_type.full_name == "mbtest.common.Customer"
    assert 'import "mbtest/common/customer.proto";' in parsed.canonical()


def test_a_reference_importing_another_reference() -> None:
    middle = 'syntax = "proto3";\nimport "base.proto";\nmessage Middle { Base base = 1; }\n'
    refs = {"base.proto": 'syntax = "proto3";\nmessage Base {}\n', "middle.proto": middle}
    parsed = parse(
        'syntax = "proto3";\nimport "middle.proto";\nmessage Top { Middle m = 1; }', refs
    )
    assert [f.name for f in parsed.files] == ["base.proto", "middle.proto", "default.proto"]


def test_well_known_types_need_no_references() -> None:
    text = """
syntax = "proto3";
import "google/protobuf/any.proto";
import "google/protobuf/wrappers.proto";
import "google/type/date.proto";
import "confluent/meta.proto";
message Event {
  google.protobuf.Any payload = 1;
  google.protobuf.StringValue note = 2 [(confluent.field_meta).doc = "free text"];
  google.type.Date day = 3;
}
"""
    parsed = parse(text, {})
    assert '[(.confluent.field_meta) = { doc: "free text" }]' in parsed.canonical()
    assert parse(parsed.canonical(), {}).file == parsed.file


def test_a_reference_named_like_a_well_known_file_uses_the_well_known_file() -> None:
    refs = {"google/protobuf/timestamp.proto": "this is not even protobuf"}
    text = 'syntax = "proto3";\nimport "google/protobuf/timestamp.proto";\n'
    parsed = parse(text + "message T { google.protobuf.Timestamp at = 1; }", refs)
    assert parsed.pool.FindMessageTypeByName("google.protobuf.Timestamp").fields_by_name["nanos"]


def test_invalid_text_names_protocs_complaint() -> None:
    with pytest.raises(InvalidSchema) as raised:
        parse('syntax = "proto3";\nmessage Broken {\n  int32 x = 1\n}\n', {})
    message = raised.value.message
    assert message.startswith("Invalid schema of type PROTOBUF, details: ")
    assert 'default.proto:4:1: Expected ";".' in message


def test_unknown_type_is_invalid() -> None:
    with pytest.raises(InvalidSchema, match='"Missing" is not defined'):
        parse('syntax = "proto3";\nmessage A { Missing m = 1; }', {})


def test_missing_reference_is_invalid() -> None:
    with pytest.raises(InvalidSchema, match=r"other\.proto: File not found"):
        parse('syntax = "proto3";\nimport "other.proto";\nmessage A {}', {})


def test_base64_alphabet_that_is_no_descriptor_is_invalid() -> None:
    with pytest.raises(InvalidSchema, match="Invalid schema of type PROTOBUF"):
        parse("AAAA", {})


def test_base64_descriptor_with_an_unresolvable_import_is_invalid() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="x.proto", syntax="proto3")
    file.dependency.append("nowhere.proto")
    file.message_type.add(name="X")
    serialized = base64.b64encode(file.SerializeToString()).decode()
    with pytest.raises(InvalidSchema, match=r"nowhere\.proto"):
        parse(serialized, {})


@pytest.mark.parametrize("name", ["../escape.proto", "/etc/escape.proto", "nul\0.proto", ""])
def test_reference_names_cannot_leave_the_source_tree(name: str) -> None:
    with pytest.raises(InvalidSchema, match="bad reference name"):
        parse('syntax = "proto3";\nmessage A {}', {name: "message E {}"})


def test_references_that_cannot_be_laid_out_as_files_are_invalid() -> None:
    refs = {"a.proto": 'syntax = "proto3";', "a.proto/b.proto": 'syntax = "proto3";'}
    with pytest.raises(InvalidSchema, match="cannot lay out the references"):
        parse('syntax = "proto3";\nimport "a.proto/b.proto";\nmessage A {}', refs)


# -- compatibility: reading_errors(self=reader, writer) ---------------------------------------


def error_types(reader: str, writer: str) -> list[str]:
    errors = parse(reader, {}).reading_errors(parse(writer, {}))
    return [error.split('"')[1] for error in errors]


def proto3(body: str, package: str = "p") -> str:
    return f'syntax = "proto3";\npackage {package};\n{body}'


def proto2(body: str) -> str:
    return f'syntax = "proto2";\npackage p;\n{body}'


COMPATIBLE = {
    "identical": (proto3("message A { int32 x = 1; }"), proto3("message A { int32 x = 1; }")),
    "field added": (proto3("message A { int32 x = 1; string y = 2; }"), proto3("message A {}")),
    "field removed": (proto3("message A {}"), proto3("message A { int32 x = 1; }")),
    "field renamed": (proto3("message A { int32 y = 1; }"), proto3("message A { int32 x = 1; }")),
    "message added": (proto3("message A {} message B {}"), proto3("message A {}")),
    "messages reordered": (
        proto3("message B {} message A {}"),
        proto3("message A {} message B {}"),
    ),
    "int32 to int64": (proto3("message A { int64 x = 1; }"), proto3("message A { int32 x = 1; }")),
    "string to bytes": (
        proto3("message A { bytes x = 1; }"),
        proto3("message A { string x = 1; }"),
    ),
    "fixed32 to sfixed32": (
        proto3("message A { sfixed32 x = 1; }"),
        proto3("message A { fixed32 x = 1; }"),
    ),
    "enum to int32": (
        proto3("message A { int32 x = 1; }"),
        proto3("message A { E x = 1; } enum E { Z = 0; }"),
    ),
    "enum constant added and removed": (
        proto3("enum E { Z = 0; TWO = 2; }"),
        proto3("enum E { Z = 0; ONE = 1; }"),
    ),
    "field moved into a new oneof": (
        proto3("message A { oneof o { int32 x = 1; } string y = 2; }"),
        proto3("message A { int32 x = 1; string y = 2; }"),
    ),
    "oneof field moved to top level": (
        proto3("message A { int32 x = 1; oneof o { string y = 2; } }"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
    ),
    "oneof field added": (
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { oneof o { int32 x = 1; } }"),
    ),
    "whole oneof removed": (
        proto3("message A {}"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
    ),
    "string label changed": (
        proto2("message A { repeated string x = 1; }"),
        proto2("message A { optional string x = 1; }"),
    ),
    "optional field added in proto2": (
        proto2("message A { optional int32 x = 1; }"),
        proto2("message A {}"),
    ),
}


@pytest.mark.parametrize(("reader", "writer"), COMPATIBLE.values(), ids=COMPATIBLE.keys())
def test_compatible_changes(reader: str, writer: str) -> None:
    assert error_types(reader, writer) == []


INCOMPATIBLE = {
    "package changed": (
        proto3("message A {}", package="q"),
        proto3("message A {}"),
        ["PACKAGE_CHANGED"],
    ),
    "message removed": (
        proto3("message A {}"),
        proto3("message A {} message B {}"),
        ["MESSAGE_REMOVED"],
    ),
    "nested message removed": (
        proto3("message A {}"),
        proto3("message A { message Inner {} }"),
        ["MESSAGE_REMOVED"],
    ),
    "scalar to message": (
        proto3("message A { B x = 1; } message B {}"),
        proto3("message A { int32 x = 1; } message B {}"),
        ["FIELD_KIND_CHANGED"],
    ),
    "scalar to map": (
        proto3("message A { map<string, string> x = 1; }"),
        proto3("message A { string x = 1; }"),
        ["FIELD_KIND_CHANGED"],
    ),
    "int32 to string": (
        proto3("message A { string x = 1; }"),
        proto3("message A { int32 x = 1; }"),
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    "int32 to sint32": (
        proto3("message A { sint32 x = 1; }"),
        proto3("message A { int32 x = 1; }"),
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    "map value kind": (
        proto3("message A { map<string, string> x = 1; }"),
        proto3("message A { map<string, int32> x = 1; }"),
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    "message type renamed": (
        proto3("message A { C x = 1; } message B {} message C {}"),
        proto3("message A { B x = 1; } message B {} message C {}"),
        ["FIELD_NAMED_TYPE_CHANGED"],
    ),
    "numeric label changed": (
        proto2("message A { repeated int32 x = 1; }"),
        proto2("message A { optional int32 x = 1; }"),
        ["FIELD_NUMERIC_LABEL_CHANGED"],
    ),
    "required field added": (
        proto2("message A { required int32 x = 1; }"),
        proto2("message A {}"),
        ["REQUIRED_FIELD_ADDED"],
    ),
    "required field removed": (
        proto2("message A {}"),
        proto2("message A { required int32 x = 1; }"),
        ["REQUIRED_FIELD_REMOVED"],
    ),
    "oneof field removed": (
        proto3("message A { oneof o { int32 x = 1; } }"),
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        ["ONEOF_FIELD_REMOVED"],
    ),
    "two fields moved into one oneof": (
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { int32 x = 1; string y = 2; }"),
        ["MULTIPLE_FIELDS_MOVED_TO_ONEOF"],
    ),
    "field moved into an existing oneof": (
        proto3("message A { oneof o { int32 x = 1; string y = 2; } }"),
        proto3("message A { oneof o { int32 x = 1; } string y = 2; }"),
        ["FIELD_MOVED_TO_EXISTING_ONEOF"],
    ),
}


@pytest.mark.parametrize(
    ("reader", "writer", "expected"), INCOMPATIBLE.values(), ids=INCOMPATIBLE.keys()
)
def test_incompatible_changes(reader: str, writer: str, expected: list[str]) -> None:
    assert error_types(reader, writer) == expected


def test_direction_reader_is_self() -> None:
    with_required = proto2("message A { required int32 x = 1; }")
    without = proto2("message A {}")
    assert error_types(with_required, without) == ["REQUIRED_FIELD_ADDED"]
    assert error_types(without, with_required) == ["REQUIRED_FIELD_REMOVED"]


def test_errors_are_written_as_confluent_writes_them() -> None:
    reader = parse(proto3("message A { oneof o { string x = 1; } }"), {})
    writer = parse(proto3("message A { oneof o { int32 x = 1; string y = 2; } }"), {})
    assert reader.reading_errors(writer) == [
        '{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at '
        "path '#/A/o/1' in the %s schema does not match its kind in the %s schema\"}",
        '{errorType:"ONEOF_FIELD_REMOVED", description:"The %s schema is missing a oneof field '
        "at path '#/A/o/2' in the %s schema\"}",
    ]
    removed = parse(proto3("message A {}"), {}).reading_errors(
        parse(proto3("message A { message B {} }"), {})
    )
    assert "at path '#/A/B' in the %s schema" in removed[0]


def test_a_referenced_type_changed_incompatibly() -> None:
    user = proto3('import "dep.proto";\nmessage Use { dep.D d = 1; }')
    old_dep = proto3("message D { int32 v = 1; }", package="dep")
    new_dep = proto3("message D { string v = 1; }", package="dep")
    reader = parse(user, {"dep.proto": new_dep})
    writer = parse(user, {"dep.proto": old_dep})
    errors = reader.reading_errors(writer)
    assert [e.split('"')[1] for e in errors] == [
        "FIELD_SCALAR_KIND_CHANGED",
        "FIELD_NAMED_TYPE_CHANGED",
    ]
    assert "'#/D/1'" in errors[0]
    assert "'#/Use/1'" in errors[1]
    assert reader.reading_errors(parse(user, {"dep.proto": new_dep})) == []


def test_a_recursive_referenced_type_is_compared_once() -> None:
    user = proto3('import "tree.proto";\nmessage Use { tree.Node root = 1; }')
    old_tree = proto3("message Node { repeated Node children = 1; int32 v = 2; }", "tree")
    new_tree = proto3("message Node { repeated Node children = 1; string v = 2; }", "tree")
    errors = parse(user, {"tree.proto": new_tree}).reading_errors(
        parse(user, {"tree.proto": old_tree})
    )
    assert [e.split('"')[1] for e in errors] == [
        "FIELD_SCALAR_KIND_CHANGED",
        "FIELD_NAMED_TYPE_CHANGED",
    ]


def test_text_and_base64_registrations_are_compatible_with_each_other() -> None:
    from_text = parse(ORDERS, CUSTOMER_REFS)
    from_base64 = parse(from_text.formatted("serialized"), CUSTOMER_REFS)
    assert from_text.reading_errors(from_base64) == []
    assert from_base64.reading_errors(from_text) == []


# -- decoding Confluent-framed values ---------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, ModuleType]:
    """ORDERS and CUSTOMER compiled by protoc into Python modules, as an application using
    confluent-kafka's ProtobufSerializer has them."""
    root = tmp_path_factory.mktemp("generated")
    (root / "mbtest" / "common").mkdir(parents=True)
    (root / "mbtest" / "orders.proto").write_text(ORDERS)
    (root / "mbtest" / "common" / "customer.proto").write_text(CUSTOMER)
    protoc = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"--python_out={root}"]
    subprocess.run(
        [*protoc, "mbtest/orders.proto", "mbtest/common/customer.proto"], check=True, cwd=root
    )
    sys.path.insert(0, str(root))
    try:
        return (
            importlib.import_module("mbtest.orders_pb2"),
            importlib.import_module("mbtest.common.customer_pb2"),
        )
    finally:
        sys.path.remove(str(root))


def register_like_the_serializer(orders: ModuleType, customer: ModuleType) -> ProtobufSchema:
    """What ProtobufSerializer registers: the dependency on its own (a reference named by its
    import path) and the file itself, both as base64 of the generated descriptors."""
    dependency = parse(_schema_to_str(customer.DESCRIPTOR), {})
    refs = {"mbtest/common/customer.proto": dependency.canonical()}
    return parse(_schema_to_str(orders.DESCRIPTOR), refs)


def test_the_serializers_registration_matches_the_text(
    generated: tuple[ModuleType, ModuleType],
) -> None:
    registered = register_like_the_serializer(*generated)
    assert registered.canonical() == parse(ORDERS, CUSTOMER_REFS).canonical()


def test_decode_a_framed_value_with_the_schema_from_canonical_text(
    generated: tuple[ModuleType, ModuleType],
) -> None:
    orders, customer = generated
    entry_type = orders.Batch.Entry
    order = orders.Order(id="o-1", card="4111", quantities={"apple": 3})
    order.customer.CopyFrom(customer.Customer(name="Ada", tier=2))
    value = entry_type(order=order, remark="first")
    indexes = _create_index_array(entry_type.DESCRIPTOR)
    assert indexes == [1, 0]
    framed = SchemaId("PROTOBUF", 7, None, indexes).id_to_bytes() + value.SerializeToString()

    registered = register_like_the_serializer(*generated)
    stored = parse(registered.canonical(), {"mbtest/common/customer.proto": CUSTOMER})
    read, used = read_message_indexes(framed[5:])
    assert read == [1, 0]
    assert decode_message(stored, read, framed[5 + used :]) == {
        "order": {
            "id": "o-1",
            "customer": {"name": "Ada", "tier": 2},
            "quantities": {"apple": "3"},
            "card": "4111",
        },
        "remark": "first",
    }


def test_the_deserializer_reads_the_serialized_format(
    generated: tuple[ModuleType, ModuleType],
) -> None:
    """What ProtobufDeserializer does with `format=serialized`: the file and its references
    into a pool, then the message class from it."""
    orders, _ = generated
    stored = parse(ORDERS, CUSTOMER_REFS)
    dependency = parse(CUSTOMER, {})
    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)
    ref_name = "mbtest/common/customer.proto"
    pool.Add(_str_to_proto(ref_name, dependency.formatted("serialized")))
    pool.Add(_str_to_proto("default", stored.formatted("serialized")))
    order_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("mbtest.orders.Order"))
    written = orders.Order(id="o-2", voucher=5, status=orders.Order.PAID)
    read = order_class.FromString(written.SerializeToString())
    assert (read.id, read.voucher, read.status) == ("o-2", 5, 1)


def test_decode_rejects_an_index_outside_the_schema() -> None:
    parsed = parse(ORDERS, CUSTOMER_REFS)
    with pytest.raises(ValueError, match="message index 5 out of range"):
        decode_message(parsed, [5], b"")
    with pytest.raises(ValueError, match=r"not a mbtest\.orders\.Order message"):
        decode_message(parsed, [0], b"\xff\xff")


@pytest.mark.parametrize(
    ("data", "indexes", "used"),
    [
        (b"\x00rest", [0], 1),
        (b"\x04\x02\x00rest", [1, 0], 3),
        (b"\x02\x96\x01", [75], 3),
    ],
)
def test_read_message_indexes(data: bytes, indexes: list[int], used: int) -> None:
    assert read_message_indexes(data) == (indexes, used)


@pytest.mark.parametrize("data", [b"", b"\x04\x02", b"\x80", b"\x7f"])
def test_read_message_indexes_rejects_bad_input(data: bytes) -> None:
    with pytest.raises(ValueError):
        read_message_indexes(data)
