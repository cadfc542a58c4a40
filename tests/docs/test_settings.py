"""The settings reference (docs/reference/settings.md) documents every setting the broker
reads: its generated tables come from minibroker's definitions at build time, and this checks
that the code reads no setting outside them.

Two ways of finding what the broker reads: every name given as a literal (or a module-level
constant) to the config accessors in minibroker/ (`get_int`, `get_bool`, `get_str`, `raw`;
the name argument of `topic_value` and `listener_value`), and every name actually asked of a
broker's config while brokers and a cluster start, take records and serve a group and a
transaction."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.config import BrokerConfig
from tests.docs.pages import DOCS, REPO, hook

FIRST_ARGUMENT = {"get_int", "get_bool", "get_str", "raw"}
SECOND_ARGUMENT = {"topic_value", "listener_value"}
CODE = re.compile(r"`([^`\s]+)`")


def documented() -> set[str]:
    """Every name in code spans on the rendered settings page."""
    page = hook().render((DOCS / "reference" / "settings.md").read_text())
    return set(CODE.findall(page))


def _constants(tree: ast.Module) -> dict[str, str]:
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted((REPO / "minibroker").rglob("*.py")):
        yield path, ast.parse(path.read_text())


def names_read_in_code() -> dict[str, str]:
    """Setting name -> where the code reads it."""
    modules = list(_modules())
    constants: dict[str, str] = {}
    for _, tree in modules:
        constants.update(_constants(tree))
    found: dict[str, str] = {}
    for path, tree in modules:
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            index = (
                0
                if node.func.attr in FIRST_ARGUMENT
                else 1
                if node.func.attr in SECOND_ARGUMENT
                else None
            )
            if index is None or len(node.args) <= index:
                continue
            argument = node.args[index]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                name = argument.value
            elif isinstance(argument, ast.Name) and argument.id in constants:
                name = constants[argument.id]
            else:
                continue
            if "." in name:
                found.setdefault(name, f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_the_scan_finds_the_accessors() -> None:
    found = names_read_in_code()
    assert {"num.partitions", "minibroker.max.decompressed.batch.bytes"} <= set(found)
    assert "minibroker.scram.credentials" in found  # through a module constant
    assert len(found) > 60


def test_every_setting_read_in_the_code_is_documented() -> None:
    missing = {n: where for n, where in names_read_in_code().items() if n not in documented()}
    assert not missing, f"settings read but not on docs/reference/settings.md: {missing}"


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    names: set[str] = set()
    raw = BrokerConfig.raw

    def recording(self: BrokerConfig, name: str) -> str | None:
        names.add(name)
        return raw(self, name)

    monkeypatch.setattr(BrokerConfig, "raw", recording)
    return names


def test_every_setting_a_running_broker_reads_is_documented(asked: set[str]) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    from minibroker.testing import KafkaBroker, KafkaCluster

    with KafkaBroker(config={"num.partitions": 2}) as kafka:
        kafka.create_topic("orders", config={"cleanup.policy": "compact,delete"})
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, transactional_id="docs")
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("orders", key=b"k", value=b"v")
        producer.commit_transaction()
        producer.close()
        consumer = KafkaConsumer(
            "orders",
            bootstrap_servers=kafka.bootstrap_servers,
            group_id="docs",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        while not consumer.poll(timeout_ms=1000):
            pass
        consumer.commit()
        consumer.close()
        kafka.restart()
    with KafkaCluster(nodes=3, storage="memory") as cluster:
        cluster.create_topic("orders", partitions=2, replication_factor=3)
        cluster.produce("orders", b"v", partition=0)
        cluster.wait_in_sync("orders")
    assert len(asked) > 40
    missing = sorted(asked - documented())
    assert not missing, f"settings a broker read but not on docs/reference/settings.md: {missing}"
