"""Derive `minibroker/protocol/release_table.py`: the API ranges each Kafka release's broker
advertised to clients in ApiVersions.

    MINIBROKER_KAFKA_REPO=<clone of apache/kafka> \
        python -m tests.protocol.derive_releases > minibroker/protocol/release_table.py

2.8-3.9 are read from Kafka's request schemas at each release branch of the apache/kafka clone
named by `$MINIBROKER_KAFKA_REPO`: a key is listed when its `listeners` include the broker kind
the release is emulated as (ZooKeeper-mode `zkBroker` for 2.8-3.2, KRaft `broker` from 3.3, when
KRaft became production-ready) and it is not one of the inter-broker/controller APIs; a
`latestVersionUnstable` top version was not advertised. 4.3 comes from the schemas inside
kafka-clients-4.3.0.jar (tests/reference.py), and 3.9 can be checked against kafka-clients 3.9.0's.
4.0-4.2 are 3.9 with the changes each of those releases made (`CHANGES_4X`), as franz-go's
`pkg/kversion` records them with their KIPs and Kafka's 4.3 schema comments describe them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from minibroker.protocol.releases import ZOOKEEPER_RELEASES
from tests.reference import kafka_message_schemas

KAFKA_REPO = os.environ.get("MINIBROKER_KAFKA_REPO")
MESSAGE_DIR = "clients/src/main/resources/common/message"

KRAFT_RELEASES = ("3.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9")

# Broker-to-broker, controller and share-coordinator APIs: never answered to a client.
# WriteTxnMarkers is not one: brokers advertise it, and admin clients send it (KIP-664).
INTER_BROKER_KEYS = frozenset({4, 5, 6, 7, 52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82})

Ranges = dict[int, tuple[int, int]]

# (release, key, (min, max) or None when the key is gone), applied in order from 3.9's table.
CHANGES_4X: list[tuple[str, int, tuple[int, int] | None]] = [
    # KIP-896 removed the versions before Kafka 2.1; Produce is still advertised from 0
    # (KAFKA-18659). JoinGroup v0-1 came back in 4.0.1 (KAFKA-19444): the table keeps the
    # newest patch of each line.
    ("4.0", 0, (0, 12)),  # v12: KIP-890 transactions V2
    ("4.0", 1, (4, 17)),
    ("4.0", 2, (1, 10)),  # v10: KIP-1075
    ("4.0", 3, (0, 13)),  # v13: KIP-1102
    ("4.0", 8, (2, 9)),
    ("4.0", 9, (1, 9)),
    ("4.0", 15, (0, 6)),  # v6: KIP-1043
    ("4.0", 19, (2, 7)),
    ("4.0", 20, (1, 6)),
    ("4.0", 23, (2, 4)),
    ("4.0", 26, (0, 5)),  # v5: KIP-890 transactions V2
    ("4.0", 27, (1, 1)),
    ("4.0", 28, (0, 5)),  # v5: KIP-890 transactions V2
    ("4.0", 29, (1, 3)),
    ("4.0", 30, (1, 3)),
    ("4.0", 31, (1, 3)),
    ("4.0", 32, (1, 4)),
    ("4.0", 34, (1, 2)),
    ("4.0", 35, (1, 4)),
    ("4.0", 38, (1, 3)),
    ("4.0", 39, (1, 2)),
    ("4.0", 40, (1, 2)),
    ("4.0", 41, (1, 3)),
    ("4.0", 57, (0, 2)),
    ("4.0", 60, (0, 2)),
    ("4.0", 68, (0, 1)),  # KIP-848 generally available
    ("4.0", 69, (0, 1)),
    ("4.1", 0, (0, 13)),  # v13: KIP-516 topic ids
    ("4.1", 1, (4, 18)),  # v18: KIP-1166
    ("4.1", 45, (0, 1)),  # v1: KIP-860
    ("4.1", 66, (0, 2)),  # v2: KIP-1152
    ("4.1", 74, (0, 1)),  # ListClientMetricsResources renamed ListConfigResources (KIP-1142)
    ("4.1", 76, (1, 1)),  # KIP-932 share groups (preview): v0 was never stable
    ("4.1", 77, (1, 1)),
    ("4.1", 78, (1, 1)),
    ("4.1", 79, (1, 1)),
    ("4.1", 90, (0, 0)),
    ("4.1", 91, (0, 0)),
    ("4.1", 92, (0, 0)),
    ("4.1", 83, (0, 0)),  # KIP-932 share-coordinator RPCs (a broker listener serves them)
    ("4.1", 84, (0, 0)),
    ("4.1", 85, (0, 0)),
    ("4.1", 86, (0, 0)),
    ("4.1", 87, (0, 0)),
    ("4.2", 2, (1, 11)),  # v11: KIP-1023
    ("4.2", 8, (2, 10)),  # v10: KIP-848 (topic ids)
    ("4.2", 9, (1, 10)),
    ("4.2", 27, (1, 2)),  # v2: KIP-1228
    ("4.2", 78, (1, 2)),  # v2: KIP-1206, KIP-1222
    ("4.2", 79, (1, 2)),
    ("4.2", 80, (0, 1)),  # v1: KIP-1186
    ("4.2", 88, (0, 0)),  # KIP-1071 streams groups
    ("4.2", 89, (0, 0)),
    ("4.2", 90, (0, 1)),  # v1: KIP-1226
    ("4.2", 85, (0, 1)),  # v1: KIP-1226
    ("4.2", 87, (0, 1)),  # v1: KIP-1226
]


def without_comments(text: str) -> str:
    """Kafka's schema files are JSON with `//` line comments."""
    out: list[str] = []
    in_string = escaped = False
    i = 0
    while i < len(text):
        char = text[i]
        if in_string:
            out.append(char)
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        else:
            in_string = char == '"'
            out.append(char)
        i += 1
    return "".join(out)


def parse_schema(text: str) -> dict[str, object]:
    # raw_decode: 2.8's DescribeProducersRequest.json has stray brackets after its object.
    schema, _ = json.JSONDecoder().raw_decode(without_comments(text).strip())
    assert isinstance(schema, dict)
    return schema


def advertised(schema: dict[str, object], listener: str) -> tuple[int, tuple[int, int]] | None:
    """(key, range) a broker of this kind advertised for a request schema, or None."""
    key = schema["apiKey"]
    assert isinstance(key, int)
    listeners = schema.get("listeners") or []
    valid = str(schema["validVersions"])
    if key in INTER_BROKER_KEYS or listener not in listeners or valid == "none":
        return None
    low, _, high = valid.partition("-")
    top = int(high or low)
    if schema.get("latestVersionUnstable"):
        top -= 1
    if top < int(low):
        return None
    return key, (int(low), top)


def ranges_of(schemas: list[dict[str, object]], listener: str) -> Ranges:
    found = (advertised(schema, listener) for schema in schemas)
    return dict(sorted(item for item in found if item is not None))


def mirror_schemas(branch: str) -> list[dict[str, object]]:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(KAFKA_REPO), *args], capture_output=True, text=True, check=True
        ).stdout

    names = git("ls-tree", "--name-only", f"{branch}:{MESSAGE_DIR}/").split()
    return [
        parse_schema(git("show", f"{branch}:{MESSAGE_DIR}/{name}"))
        for name in names
        if name.endswith("Request.json")
    ]


def release_ranges_3x() -> dict[str, Ranges]:
    table = {
        release: ranges_of(mirror_schemas(release), "zkBroker") for release in ZOOKEEPER_RELEASES
    }
    table.update(
        {release: ranges_of(mirror_schemas(release), "broker") for release in KRAFT_RELEASES}
    )
    return table


def jar_schemas(kafka_version: str) -> list[dict[str, object]]:
    schemas = kafka_message_schemas(kafka_version)
    return [
        parse_schema(text) for name, text in sorted(schemas.items()) if name.endswith("Request")
    ]


def release_ranges_3_9_from_jar() -> Ranges:
    return ranges_of(jar_schemas("3.9.0"), "broker")


def release_ranges_4_3() -> Ranges:
    ranges = ranges_of(jar_schemas("4.3.0"), "broker")
    ranges[0] = (0, ranges[0][1])  # KAFKA-18659: Produce advertised from v0, v0-2 refused
    return ranges


def release_ranges_4x(ranges_3_9: Ranges) -> dict[str, Ranges]:
    table: dict[str, Ranges] = {}
    current = dict(ranges_3_9)
    for release in ("4.0", "4.1", "4.2"):
        for _, key, change in (c for c in CHANGES_4X if c[0] == release):
            if change is None:
                current.pop(key, None)
            else:
                current[key] = change
        table[release] = dict(sorted(current.items()))
    return table


def all_release_ranges() -> dict[str, Ranges]:
    table = release_ranges_3x()
    table.update(release_ranges_4x(table["3.9"]))
    table["4.3"] = release_ranges_4_3()
    return table


def encoded(ranges: Ranges) -> str:
    return " ".join(
        f"{key}:{low}" if low == high else f"{key}:{low}-{high}"
        for key, (low, high) in ranges.items()
    )


def render(table: dict[str, Ranges]) -> str:
    lines = [
        '"""The API keys and version ranges each Kafka release\'s broker advertised to clients.',
        "",
        "Generated by `python -m tests.protocol.derive_releases` (see there for the sources);",
        "do not edit by hand. Each value lists `key:min-max` (or `key:version`) pairs.",
        '"""',
        "",
        "RELEASE_API_RANGES: dict[str, str] = {",
    ]
    for release, ranges in table.items():
        words = encoded(ranges).split(" ")
        chunks: list[str] = []
        for word in words:
            if chunks and len(chunks[-1]) + len(word) < 80:
                chunks[-1] += " " + word
            else:
                chunks.append(word)
        lines.append(f'    "{release}": (')
        lines.extend(
            f'        "{chunk}{" " if n < len(chunks) - 1 else ""}"'
            for n, chunk in enumerate(chunks)
        )
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(all_release_ranges()))
