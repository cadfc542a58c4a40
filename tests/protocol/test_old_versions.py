"""The request and response versions Kafka 2.8-3.9 served that Kafka 4 removed (KIP-896).

kafka-python 3 builds its classes from Kafka 4.3's schemas, whose `validVersions` start above
these versions, but Kafka kept the old versions' fields in those schemas and kafka-python
decodes and encodes every version from 0: the codec serves the old versions with those
classes. These tests hold them to Kafka 3.9's layouts (recorded in `old_versions_kafka39.txt`
from the schemas in kafka-clients 3.9.0) and to kafka-python's legacy classes
(`kafka.protocol.old`, a separate, hand-written implementation of the old versions), in both
directions.

    python -m tests.protocol.test_old_versions > tests/protocol/old_versions_kafka39.txt
"""

from __future__ import annotations

import importlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from minibroker.protocol import codec
from minibroker.protocol.api_keys import ApiKey
from tests.protocol.test_definitions import _struct
from tests.reference import kafka_message_schemas

# API key -> the versions Kafka 2.8-3.9 served below the first version of Kafka 4.3's schema.
OLD_VERSIONS = {
    ApiKey.Produce: range(0, 3),
    ApiKey.Fetch: range(0, 4),
    ApiKey.ListOffsets: range(0, 1),
    ApiKey.OffsetCommit: range(0, 2),
    ApiKey.OffsetFetch: range(0, 1),
    ApiKey.CreateTopics: range(0, 2),
    ApiKey.DeleteTopics: range(0, 1),
    ApiKey.OffsetForLeaderEpoch: range(0, 2),
    ApiKey.DescribeAcls: range(0, 1),
    ApiKey.CreateAcls: range(0, 1),
    ApiKey.DeleteAcls: range(0, 1),
    ApiKey.DescribeConfigs: range(0, 1),
    ApiKey.AlterReplicaLogDirs: range(0, 1),
    ApiKey.DescribeLogDirs: range(0, 1),
}
KINDS = ("request", "response")
CASES = [
    (key, kind, version)
    for key, versions in OLD_VERSIONS.items()
    for kind in KINDS
    for version in versions
]
LAYOUTS = Path(__file__).with_name("old_versions_kafka39.txt")
LAYOUTS_HEADER = (
    "# The layout of each request and response version Kafka 2.8-3.9 served that Kafka 4 removed",
    "# (KIP-896), as Kafka 3.9's message schemas define it: `<Message> v<version>: <fields>`, each",
    "# field `Name:type` (`?` nullable, `#n` tagged with tag n, nested fields in parentheses).",
    "# Regenerate from kafka-clients 3.9.0's schemas: python -m tests.protocol.test_old_versions",
)
# kafka.protocol.old's module for each API (AlterReplicaLogDirs has none).
LEGACY_MODULES: dict[int, str] = {
    ApiKey.Produce: "produce",
    ApiKey.Fetch: "fetch",
    ApiKey.ListOffsets: "list_offsets",
    ApiKey.OffsetCommit: "commit",
    ApiKey.OffsetFetch: "commit",
    ApiKey.CreateTopics: "admin",
    ApiKey.DeleteTopics: "admin",
    ApiKey.OffsetForLeaderEpoch: "offset_for_leader_epoch",
    ApiKey.DescribeAcls: "admin",
    ApiKey.CreateAcls: "admin",
    ApiKey.DeleteAcls: "admin",
    ApiKey.DescribeConfigs: "admin",
    ApiKey.DescribeLogDirs: "admin",
}


def _case_id(case: tuple[int, str, int]) -> str:
    key, kind, version = case
    return f"{ApiKey.name_of(key)}{kind.title()}-v{version}"


def _class(key: int, kind: str) -> Any:
    return codec.request_class(key) if kind == "request" else codec.response_class(key)


def _in(spec: str | None, version: int) -> bool:
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def layout(fields: list[dict[str, Any]], version: int) -> str:
    """The fields of a schema present in `version`, in the recorded notation."""
    words = []
    for field in fields:
        if not _in(field["versions"], version):
            continue
        word = f"{field['name']}:{field['type']}"
        if _in(field.get("nullableVersions"), version):
            word += "?"
        if _in(field.get("taggedVersions"), version):
            word += f"#{field['tag']}"
        if "fields" in field:
            word += f"({layout(field['fields'], version)})"
        words.append(word)
    return " ".join(words)


def recorded_layouts() -> dict[str, str]:
    lines = LAYOUTS.read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line and not line.startswith("#"))


def kafka_3_9_layouts() -> list[str]:
    """The recorded lines, derived from Kafka 3.9's schemas in kafka-clients 3.9.0."""
    lines = []
    for key, kind, version in CASES:
        name = _class(key, kind).name
        text = kafka_message_schemas("3.9.0")[name]
        schema = json.loads(re.sub(r"(?m)//.*$", "", text))
        lines.append(f"{name} v{version}: {layout(schema['fields'], version)}")
    return lines


# --- the codec's classes have Kafka 3.9's layouts -----------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_codec_class_has_kafka_3_9s_layout(case: tuple[int, str, int]) -> None:
    key, kind, version = case
    cls = _class(key, kind)
    assert version < cls.valid_versions[0]  # a version Kafka 4.3's schema no longer lists
    assert not cls.flexible_version_q(version)
    assert layout(cls.json["fields"], version) == recorded_layouts()[f"{cls.name} v{version}"]


def test_recorded_layouts_are_the_old_versions() -> None:
    names = {f"{_class(key, kind).name} v{version}" for key, kind, version in CASES}
    assert set(recorded_layouts()) == names


def test_recorded_layouts_are_kafka_3_9s() -> None:
    recorded = [f"{name}: {fields}" for name, fields in recorded_layouts().items()]
    assert recorded[0].startswith("ProduceRequest v0: Acks:int16 TimeoutMs:int32")
    assert kafka_3_9_layouts() == recorded


# --- both directions against kafka-python's legacy classes -----------------------------------

# kafka.protocol.old's DescribeLogDirsRequest_v0 reads Partitions as one int32, not []int32
# (Kafka's v0 schema, recorded above): left out here, its frame is checked below.
LEGACY_CASES = [
    case
    for case in CASES
    if case[0] in LEGACY_MODULES and case != (ApiKey.DescribeLogDirs, "request", 0)
]


def _legacy_class(key: int, kind: str, version: int) -> Any:
    module = importlib.import_module(f"kafka.protocol.old.{LEGACY_MODULES[key]}")
    name = f"{_class(key, kind).name}_v{version}"
    return getattr(module, name)


def _without_records(message: Any) -> Any:
    """Old message sets are parsed by the legacy classes: the generated records are left out."""
    for name in ("topic_data", "responses"):
        for topic in getattr(message, name, None) or []:
            for partition in getattr(topic, "partition_data", None) or getattr(
                topic, "partitions", []
            ):
                if hasattr(partition, "records"):
                    partition.records = None
    return message


@pytest.mark.parametrize("case", LEGACY_CASES, ids=_case_id)
def test_codec_and_legacy_classes_agree(case: tuple[int, str, int]) -> None:
    key, kind, version = case
    cls = _class(key, kind)
    legacy = _legacy_class(key, kind, version)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_struct(cls, cls.json["fields"], version).map(_without_records))
    def agree(message: Any) -> None:
        encoded = bytes(message.encode(version=version))
        stream = io.BytesIO(encoded)
        assert bytes(legacy.decode(stream).encode()) == encoded
        assert stream.tell() == len(encoded)  # the legacy class read exactly our bytes
        if kind == "request":
            decoded = codec.decode_body(key, version, memoryview(encoded), 0)
        else:
            decoded = cls.decode(encoded, version=version)
            decoded._header = None  # kafka-python's decoder leaves it unset, as codec.py knows
        assert bytes(decoded.encode(version=version)) == encoded

    agree()


def test_list_offsets_v0_golden_frame() -> None:
    # replica -1, topic "t", partition 3, timestamp -1 (latest), max 5 offsets
    body = b"\xff\xff\xff\xff" + b"\x00\x00\x00\x01\x00\x01t" + b"\x00\x00\x00\x01"
    body += b"\x00\x00\x00\x03" + b"\xff" * 8 + b"\x00\x00\x00\x05"
    request = codec.decode_body(ApiKey.ListOffsets, 0, memoryview(body), 0)
    (partition,) = request.topics[0].partitions
    assert (partition.partition_index, partition.timestamp, partition.max_num_offsets) == (3, -1, 5)
    response = codec.new_response(ApiKey.ListOffsets, 0, throttle_time_ms=0, topics=[])
    assert bytes(codec.encode_response(ApiKey.ListOffsets, 0, 7, response)) == (
        b"\x00\x00\x00\x08\x00\x00\x00\x07\x00\x00\x00\x00"
    )


def test_alter_replica_log_dirs_v0_golden_frame() -> None:
    # no legacy class: v0 is v1's layout (dir "/d", topic "t", partition 2)
    body = b"\x00\x00\x00\x01\x00\x02/d" + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01"
    body += b"\x00\x00\x00\x02"
    request = codec.decode_body(ApiKey.AlterReplicaLogDirs, 0, memoryview(body), 0)
    (directory,) = request.dirs
    assert (directory.path, directory.topics[0].name, directory.topics[0].partitions) == (
        "/d",
        "t",
        [2],
    )
    assert bytes(request.encode(version=0)) == body


def test_describe_log_dirs_v0_golden_frame() -> None:
    # topic "t", partitions [1, 2]: an array of int32, as Kafka's v0 schema has it
    body = b"\x00\x00\x00\x01\x00\x01t" + b"\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"
    request = codec.decode_body(ApiKey.DescribeLogDirs, 0, memoryview(body), 0)
    assert [(t.topic, t.partitions) for t in request.topics] == [("t", [1, 2])]
    assert bytes(request.encode(version=0)) == body


def test_a_cut_short_old_frame_is_malformed() -> None:
    body = b"\x00\x01g" + b"\x00\x00\x00\x01\x00\x01t" + b"\x00\x00\x00\x01\x00\x00\x00\x00"
    assert codec.decode_body(ApiKey.OffsetFetch, 0, memoryview(body), 0).group_id == "g"
    with pytest.raises(codec.MalformedRequest):
        codec.decode_body(ApiKey.OffsetFetch, 0, memoryview(body[:-3]), 0)


if __name__ == "__main__":
    print("\n".join([*LAYOUTS_HEADER, *kafka_3_9_layouts()]))
