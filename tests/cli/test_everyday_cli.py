"""The everyday CLI (`minibroker topic|produce|consume|group|cluster`) as a user runs it: the
real `python -m minibroker` in a subprocess, against an in-process broker and against an
in-process 3-node cluster (the stand-in for "another Kafka"): topics, a produce/consume round
trip with keys, headers and JSON lines, group lag and offset resets, the cluster view, and
the errors and exit codes a script relies on."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from kafka import KafkaConsumer

from minibroker.testing import KafkaBroker, KafkaCluster

SETTINGS = {"auto.create.topics.enable": "false"}
RUN_TIMEOUT_S = 60
ASSIGNMENT_TIMEOUT_S = 30


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaCluster]:
    with KafkaBroker(storage="memory", config=SETTINGS) as running:
        yield running


@pytest.fixture(scope="module", params=["broker", "cluster"])
def kafka(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """The single broker, then a 3-node cluster whose partitions have different leaders."""
    if request.param == "broker":
        yield request.getfixturevalue("broker")
        return
    with KafkaCluster(nodes=3, storage="memory", config=SETTINGS) as running:
        yield running


def cli(
    kafka: KafkaCluster | None, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`python -m minibroker ARGS`, bootstrapped through MINIBROKER_BOOTSTRAP."""
    env = dict(os.environ)
    if kafka is not None:
        env["MINIBROKER_BOOTSTRAP"] = kafka.bootstrap_servers
    return subprocess.run(
        [sys.executable, "-m", "minibroker", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=RUN_TIMEOUT_S,
    )


def ok(kafka: KafkaCluster | None, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    result = cli(kafka, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result


def table(text: str) -> list[dict[str, str]]:
    """The rows of the first aligned table in `text` (its header starts with an upper-case
    word like TOPIC), by column name."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] in (["TOPIC"], ["GROUP"]))
    header = lines[start].split()
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith(("Configs:", " ")):
            break
        rows.append(dict(zip(header, line.split(), strict=True)))
    return rows


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---- topics ------------------------------------------------------------------------------


def test_topic_create_describe_alter_delete(kafka: KafkaCluster) -> None:
    created = ok(kafka, "topic", "create", "lifecycle", "-p", "3", "-c", "retention.ms=86400000")
    assert "created topic 'lifecycle' with 3 partition(s)" in created.stderr
    assert "lifecycle" in ok(kafka, "topic", "list").stdout.split()

    described = ok(kafka, "topic", "describe", "lifecycle").stdout
    lines = described.splitlines()
    assert lines[0].startswith("Topic: lifecycle") and "Partitions: 3" in lines[0]
    partitions = [line.split() for line in lines[2:5]]
    assert [int(row[0]) for row in partitions] == [0, 1, 2]
    assert [int(row[1]) for row in partitions] == [kafka.leader("lifecycle", p) for p in range(3)]
    assert "  retention.ms=86400000" in lines

    altered = ok(
        kafka, "topic", "alter-config", "lifecycle", "--set", "cleanup.policy=compact",
        "--delete", "retention.ms",
    )  # fmt: skip
    assert "altered 2 config(s)" in altered.stderr
    configs = ok(kafka, "topic", "describe", "lifecycle").stdout.splitlines()
    assert "  cleanup.policy=compact" in configs
    assert not any("retention.ms" in line for line in configs)

    again = cli(kafka, "topic", "create", "lifecycle")
    assert (again.returncode, again.stderr) == (1, "minibroker: topic 'lifecycle' already exists\n")
    assert "deleted topic 'lifecycle'" in ok(kafka, "topic", "delete", "lifecycle").stderr
    assert "lifecycle" not in ok(kafka, "topic", "list").stdout.split()


# ---- produce and consume -----------------------------------------------------------------


def test_produce_consume_round_trip_with_keys_headers_and_json(kafka: KafkaCluster) -> None:
    kafka.create_topic("trip", partitions=2)
    lines = "user-1:signed up\nuser-2:paid\nuser-1:left\n"
    produced = ok(
        kafka, "produce", "trip", "--key-separator", ":", "-H", "source=cli", "-H", "n=1",
        "--compression", "zstd", stdin=lines,
    )  # fmt: skip
    assert produced.stderr.strip() == "3 record(s) acknowledged"
    assert produced.stdout == ""

    consumed = ok(kafka, "consume", "trip", "--from-beginning", "--format", "json", "-n", "3")
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    stored = kafka.records("trip")
    assert sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in records) == [
        (s.partition, s.offset, (s.key or b"").decode(), (s.value or b"").decode()) for s in stored
    ]
    assert sorted((r["key"], r["value"]) for r in records) == [
        ("user-1", "left"), ("user-1", "signed up"), ("user-2", "paid"),
    ]  # fmt: skip
    assert all(r["topic"] == "trip" and r["timestamp"] > 0 for r in records)
    assert all(
        r["headers"] == [{"key": "source", "value": "cli"}, {"key": "n", "value": "1"}]
        for r in records
    )
    assert consumed.stderr.strip() == "3 record(s) consumed"

    # The same key lands in the same partition, so its records keep their order.
    key_value = ok(kafka, "consume", "trip", "--from-beginning", "--format", "key-value", "-n", "3")
    user_1 = [line for line in key_value.stdout.splitlines() if line.startswith("user-1\t")]
    assert user_1 == ["user-1\tsigned up", "user-1\tleft"]


def test_produce_to_a_partition_with_every_compression(broker: KafkaCluster) -> None:
    broker.create_topic("codecs", partitions=2)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        ok(broker, "produce", "codecs", "--partition", "1", "--compression", codec, stdin=codec)
    assert broker.values("codecs", 1) == [b"none", b"gzip", b"snappy", b"lz4", b"zstd"]
    assert broker.values("codecs", 0) == []


def test_consume_from_offset_and_timestamp(broker: KafkaCluster) -> None:
    broker.create_topic("timed")
    for second in (1, 2, 3):
        broker.produce("timed", f"at-{second}", timestamp_ms=second * 1000)

    from_offset = ok(broker, "consume", "timed", "--offset", "1", "-n", "2")
    assert from_offset.stdout.splitlines() == ["at-2", "at-3"]
    by_ms = ok(broker, "consume", "timed", "--timestamp", "2000", "--timeout-ms", "300")
    assert by_ms.stdout.splitlines() == ["at-2", "at-3"]
    by_iso = ok(broker, "consume", "timed", "--timestamp", "1970-01-01T00:00:03Z", "-n", "1")
    assert by_iso.stdout.splitlines() == ["at-3"]
    # By default only new records: nothing arrives, so the idle timeout ends it.
    idle = ok(broker, "consume", "timed", "--timeout-ms", "300")
    assert (idle.stdout, idle.stderr.strip()) == ("", "0 record(s) consumed")


# ---- groups ------------------------------------------------------------------------------


def test_group_lag_reset_and_delete(kafka: KafkaCluster) -> None:
    kafka.create_topic("lagging", partitions=2)
    for index in range(5):
        kafka.produce("lagging", f"v{index}", partition=index % 2)  # 3 in p0, 2 in p1
    ok(kafka, "consume", "lagging", "--group", "lagger", "--from-beginning", "-n", "3")
    assert sum(kafka.committed_offsets("lagger").values()) == 3

    assert {"GROUP": "lagger", "STATE": "Empty", "TYPE": "classic"} in table(
        ok(kafka, "group", "list").stdout
    )
    described = ok(kafka, "group", "describe", "lagger").stdout
    assert described.startswith("Group: lagger  State: Empty  Type: classic  Members: 0")
    rows = table(described)
    assert [(row["PARTITION"], row["LOG-END-OFFSET"]) for row in rows] == [("0", "3"), ("1", "2")]
    assert sum(int(row["LAG"]) for row in rows) == 2
    assert all(
        int(row["LAG"]) == int(row["LOG-END-OFFSET"]) - int(row["CURRENT-OFFSET"]) for row in rows
    )

    before = kafka.committed_offsets("lagger")
    dry = ok(kafka, "group", "reset-offsets", "lagger", "--topic", "lagging", "--to-earliest")
    assert [row["NEW-OFFSET"] for row in table(dry.stdout)] == ["0", "0"]
    assert "dry run" in dry.stderr
    assert kafka.committed_offsets("lagger") == before

    ok(
        kafka,
        "group",
        "reset-offsets",
        "lagger",
        "--topic",
        "lagging",
        "--to-earliest",
        "--execute",
    )
    assert kafka.committed_offsets("lagger") == {("lagging", 0): 0, ("lagging", 1): 0}
    ok(kafka, "group", "reset-offsets", "lagger", "--all-topics", "--to-offset", "99", "--execute")
    assert kafka.committed_offsets("lagger") == {("lagging", 0): 3, ("lagging", 1): 2}
    by_time = ok(
        kafka, "group", "reset-offsets", "lagger", "--all-topics", "--to-datetime",
        "2001-01-01T00:00:00", "--dry-run",
    )  # fmt: skip
    assert [row["NEW-OFFSET"] for row in table(by_time.stdout)] == ["0", "0"]

    assert "deleted group 'lagger'" in ok(kafka, "group", "delete", "lagger").stderr
    gone = cli(kafka, "group", "describe", "lagger")
    assert (gone.returncode, gone.stderr) == (1, "minibroker: group 'lagger' does not exist\n")


def test_group_describe_shows_a_live_member_and_reset_waits_for_it(broker: KafkaCluster) -> None:
    broker.create_topic("watched", partitions=2)
    broker.produce("watched", "one")
    consumer = KafkaConsumer(
        "watched",
        bootstrap_servers=broker.bootstrap_servers,
        group_id="watchers",
        client_id="cli-test-member",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        deadline = time.monotonic() + ASSIGNMENT_TIMEOUT_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        consumer.commit()
        described = ok(broker, "group", "describe", "watchers").stdout
        assert described.startswith("Group: watchers  State: Stable  Type: classic  Members: 1")
        assert {row["CLIENT-ID"] for row in table(described)} == {"cli-test-member"}
        refused = cli(broker, "group", "reset-offsets", "watchers", "--all-topics",
                      "--to-earliest", "--execute")  # fmt: skip
        assert refused.returncode == 1
        assert "minibroker: group 'watchers' is Stable" in refused.stderr
        busy = cli(broker, "group", "delete", "watchers")
        assert (busy.returncode, busy.stderr) == (
            1,
            "minibroker: group 'watchers' has active members; stop them first\n",
        )
    finally:
        consumer.close()


def test_a_kip_848_group_shows_its_state_type_and_lag(broker: KafkaCluster) -> None:
    broker.create_topic("modern", partitions=2)
    broker.produce("modern", "one")
    broker.produce("modern", "two")
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": "modern-group",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["modern"])
        deadline = time.monotonic() + ASSIGNMENT_TIMEOUT_S
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.2)
        assert message is not None and message.error() is None
        consumer.commit(message=message, asynchronous=False)  # offset 1 of 2: lag 1
        described = ok(broker, "group", "describe", "modern-group")
        assert described.stdout.startswith(
            "Group: modern-group  State: Stable  Type: consumer  Members: -"
        )
        assert [(row["CURRENT-OFFSET"], row["LAG"]) for row in table(described.stdout)] == [
            ("1", "1")
        ]
        assert "ConsumerGroupDescribe" in described.stderr
        refused = cli(broker, "group", "reset-offsets", "modern-group", "--all-topics",
                      "--to-earliest", "--execute")  # fmt: skip
        assert refused.returncode == 1
    finally:
        consumer.close()


# ---- cluster -----------------------------------------------------------------------------


def test_cluster_lists_nodes_version_and_features(kafka: KafkaCluster) -> None:
    shown = ok(kafka, "cluster").stdout
    assert "Cluster id:" in shown and "Controller:" in shown
    assert "Kafka:" in shown
    nodes = [line.split()[0] for line in shown.splitlines() if line[:1].isdigit()]
    assert nodes == [str(node) for node in kafka.node_ids]
    assert any(line.startswith("metadata.version") for line in shown.splitlines())


# ---- errors, exit codes and help ---------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["topic", "describe", "nowhere"],
        ["topic", "delete", "nowhere"],
        ["topic", "alter-config", "nowhere", "--set", "retention.ms=1"],
        ["consume", "nowhere"],
        ["group", "reset-offsets", "any", "--topic", "nowhere", "--to-latest"],
    ],
)
def test_unknown_topic_is_one_line_and_exit_1(broker: KafkaCluster, args: list[str]) -> None:
    result = cli(broker, *args)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "minibroker: topic 'nowhere' does not exist\n"


def test_a_refused_request_is_one_line_with_kafka_s_error_name(broker: KafkaCluster) -> None:
    result = cli(broker, "topic", "create", "refused", "-c", "no.such.config=1")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("minibroker: topic 'refused': INVALID_CONFIG: ")
    assert len(result.stderr.splitlines()) == 1


def test_unknown_partition_is_one_line_and_exit_1(broker: KafkaCluster) -> None:
    broker.create_topic("narrow", partitions=2)
    for args, stdin in (
        (["consume", "narrow", "--partition", "2"], ""),
        (["produce", "narrow", "--partition", "5"], "x\n"),
    ):
        result = cli(broker, *args, stdin=stdin)
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr.startswith("minibroker: topic 'narrow' has no partition ")


def test_interrupted_consume_reports_its_count_and_exits_130(broker: KafkaCluster) -> None:
    broker.create_topic("interrupted")
    broker.produce("interrupted", "first")
    env = {**os.environ, "MINIBROKER_BOOTSTRAP": broker.bootstrap_servers}
    command = [sys.executable, "-m", "minibroker", "consume", "interrupted", "--from-beginning"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == "first\n"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=RUN_TIMEOUT_S) == 130
        assert process.stderr.read() == "1 record(s) consumed\n"


def test_connection_refused_names_the_address_and_exits_3() -> None:
    address = f"127.0.0.1:{closed_port()}"
    for args in (["topic", "list"], ["consume", "t"], ["cluster"]):
        result = cli(None, *args, "--bootstrap", address)
        assert (result.returncode, result.stdout) == (3, "")
        assert result.stderr.startswith(f"minibroker: cannot connect to {address} (")
        assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["topic"],
        ["consume"],
        ["produce", "t", "--compression", "brotli"],
        ["consume", "t", "--from-beginning", "--offset", "3"],
        ["group", "reset-offsets", "g", "--to-latest"],
    ],
)
def test_bad_arguments_exit_2(args: list[str]) -> None:
    result = cli(None, *args)
    assert result.returncode == 2
    assert "usage: minibroker" in result.stderr


def test_usage_errors_found_after_parsing_exit_2(broker: KafkaCluster) -> None:
    broker.create_topic("t2")
    for args, stdin, message in (
        (["topic", "create", "t2", "-c", "retention.ms"], "", "--config must be KEY=VALUE"),
        (["consume", "t2", "--group", "g", "--offset", "1"], "", "--group takes no --offset"),
        (["produce", "t2", "--key-separator", ":"], "no separator\n", "line 1 has no key"),
    ):
        result = cli(broker, *args, stdin=stdin)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"minibroker: {message}")


def test_help_lists_the_commands_and_shows_examples() -> None:
    top = cli(None, "--help")
    assert top.returncode == 0
    assert all(name in top.stdout for name in ("topic", "produce", "consume", "group", "cluster"))
    for args in (["produce", "--help"], ["group", "reset-offsets", "--help"], ["topic", "--help"]):
        shown = cli(None, *args)
        assert shown.returncode == 0
        assert "\nexamples:\n  " in shown.stdout
    assert "exit codes: 0 ok, 1 Kafka error" in cli(None, "consume", "--help").stdout
