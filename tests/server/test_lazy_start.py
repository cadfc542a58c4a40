"""A broker starts without the code its first requests do not need (issue 40): a handler module
is imported when its key is first requested, and the group and transaction coordinators,
share-group state, group configs and client telemetry when first used (server/broker.py), or at
start when their internal topic holds state to load. Checked by the modules imported, never by
time."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from minibroker.config import ConfigError
from minibroker.groups.consumer.assignors import ASSIGNORS
from minibroker.groups.settings import CONSUMER_ASSIGNORS
from minibroker.handlers import load_all
from minibroker.handlers.registry import HANDLER_MODULES, REGISTRY
from minibroker.testing import KafkaBroker

# Run in a fresh interpreter with serve's imports: a broker (in memory, or on the data directory
# given as argv[1]) is started, then each step named in argv[2:] is sent on one connection; the
# minibroker modules imported after the start and after each step are printed as JSON. Each
# step checks its answer, so a step also shows that what it first used works.
SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, uuid
    from minibroker.protocol.lazy_import import defer_package_init
    defer_package_init("kafka")
    defer_package_init("crc32c")
    import minibroker.cli
    from minibroker.config import BrokerConfig
    from minibroker.server.broker import Broker
    from tests.wire import WireClient

    def imported():
        return sorted(m for m in sys.modules if m.startswith("minibroker."))

    def api_versions(client):
        assert client.call(18, 3).error_code == 0

    def metadata(client):
        client.call(3, 12, topics=None)

    def create_topic(client):
        topic = {"name": "t", "num_partitions": 1, "replication_factor": 1}
        created = client.call(
            19, 4, topics=[{**topic, "assignments": [], "configs": []}], timeout_ms=5000
        )
        assert created.topics[0].error_code == 0, created

    def produce(client):
        from minibroker.records.records import build_batch

        batch = build_batch([(None, b"v", [], 0)])
        partition = {"index": 0, "records": batch}
        data = [{"name": "t", "partition_data": [partition]}]
        answer = client.call(0, 8, acks=-1, timeout_ms=5000, topic_data=data)
        assert answer.responses[0].partition_responses[0].error_code == 0, answer

    def find_group_coordinator(client):
        found = client.call(10, 4, key_type=0, coordinator_keys=["g"])
        assert found.coordinators[0].error_code == 0, found

    def commit_offset(client):
        partitions = [{"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}]
        committed = client.call(
            8,
            2,
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time_ms=-1,
            topics=[{"name": "t", "partitions": partitions}],
        )
        assert committed.topics[0].partitions[0].error_code == 0, committed

    def fetch_offset(client):
        topics = [{"name": "t", "partition_indexes": [0]}]
        fetched = client.call(9, 1, group_id="g", topics=topics)
        assert fetched.topics[0].partitions[0].committed_offset == 5, fetched

    def find_txn_coordinator(client):
        found = client.call(10, 4, key_type=1, coordinator_keys=["tx"])
        assert found.coordinators[0].error_code == 0, found

    def init_producer_id(client):
        answer = client.call(
            22,
            5,
            transactional_id="tx",
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert answer.error_code == 0 and answer.producer_id >= 0, answer
        print(json.dumps({"producer": [answer.producer_id, answer.producer_epoch]}))

    def telemetry(client):
        answer = client.call(71, 0, client_instance_id=uuid.UUID(int=0))
        assert answer.error_code == 0 and answer.client_instance_id != uuid.UUID(int=0), answer

    async def main():
        data_dir = sys.argv[1]
        settings = {"listeners": "PLAINTEXT://127.0.0.1:0"}
        if data_dir:
            settings["log.dirs"] = data_dir
        broker = Broker(BrokerConfig(settings), in_memory=not data_dir)
        await broker.start()
        steps = {"started": imported()}
        with WireClient(broker.bootstrap_servers) as client:
            for step in sys.argv[2:]:
                await asyncio.to_thread(globals()[step], client)
                steps[step] = imported()
        await broker.stop()
        print(json.dumps(steps))

    asyncio.run(main())
    """
)

COORDINATORS = "minibroker.groups.coordinator"
TRANSACTIONS = "minibroker.txn.coordinator"
# Imported only when a lazily built subsystem (or the AlterConfigs targets, which change them) is
# built. Not group_configs.py: its config definitions are read by cluster/describe_configs.py,
# which CreateTopics imports.
LAZY_MODULES = (
    COORDINATORS,
    TRANSACTIONS,
    "minibroker.groups.share.delivery",
    "minibroker.telemetry.manager",
    "minibroker.cluster.alter_configs",
)


def _run(data_dir: Path | None, *steps: str) -> tuple[dict[str, list[str]], list[str]]:
    """The modules imported after each step, and the lines the steps printed."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data_dir or ""), *steps],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    *printed, last = done.stdout.splitlines()
    imported: dict[str, list[str]] = json.loads(last)
    return imported, printed


def _handlers(modules: list[str]) -> list[str]:
    return [m.removeprefix("minibroker.handlers.") for m in modules if "handlers." in m]


def _lazy(modules: list[str]) -> set[str]:
    return set(LAZY_MODULES) & set(modules)


def test_first_requests_import_only_their_handlers() -> None:
    steps, _ = _run(None, "api_versions", "metadata", "find_group_coordinator")
    assert _handlers(steps["started"]) == ["registry"]
    assert _handlers(steps["api_versions"]) == ["api_versions", "registry"]
    assert _handlers(steps["metadata"]) == ["api_versions", "metadata", "registry"]
    assert _handlers(steps["find_group_coordinator"]) == [
        "api_versions",
        "find_coordinator",
        "metadata",
        "registry",
    ]


def test_coordinators_are_built_by_their_first_request_and_work() -> None:
    steps, _ = _run(
        None,
        "api_versions",
        "metadata",
        "create_topic",
        "produce",
        "find_group_coordinator",
        "commit_offset",
        "fetch_offset",
        "find_txn_coordinator",
        "init_producer_id",
        "telemetry",
    )
    for step in ("started", "api_versions", "metadata", "create_topic", "produce"):
        assert _lazy(steps[step]) == set(), step
    assert _lazy(steps["find_group_coordinator"]) == {COORDINATORS}
    assert TRANSACTIONS not in steps["fetch_offset"]
    assert TRANSACTIONS in steps["find_txn_coordinator"]
    assert "minibroker.telemetry.manager" not in steps["init_producer_id"]
    assert "minibroker.telemetry.manager" in steps["telemetry"]


def test_coordinators_with_stored_state_load_it_at_start(tmp_path: Path) -> None:
    _, printed = _run(
        tmp_path, "create_topic", "commit_offset", "find_txn_coordinator", "init_producer_id"
    )
    [first] = [json.loads(line)["producer"] for line in printed]
    steps, printed = _run(tmp_path, "fetch_offset", "init_producer_id")
    # Built at start: their internal topics hold the group's offsets and the transactional id.
    assert {COORDINATORS, TRANSACTIONS} <= _lazy(steps["started"])
    assert "minibroker.telemetry.manager" not in steps["started"]
    [again] = [json.loads(line)["producer"] for line in printed]
    assert again == [first[0], first[1] + 1]


def test_every_registered_module_serves_its_key() -> None:
    load_all()
    for key, (module, low, high) in HANDLER_MODULES.items():
        spec = REGISTRY[key]
        assert (spec.module, spec.min_version, spec.max_version) == (module, low, high)
        assert spec.handler.__module__ == f"minibroker.handlers.{module}"


def test_the_settings_check_knows_every_consumer_assignor() -> None:
    """groups/settings.py checks `group.consumer.assignors` without importing the assignors."""
    assert tuple(ASSIGNORS) == CONSUMER_ASSIGNORS


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group.consumer.assignors": "sticky"}, "group.consumer.assignors: unknown assignors"),
        ({"group.consumer.max.size": "0"}, "group.consumer.max.size must be at least 1"),
        (
            {"group.consumer.heartbeat.interval.ms": "50000"},
            "group.consumer.heartbeat.interval.ms must be between",
        ),
        (
            {"group.consumer.migration.policy": "sideways"},
            "Invalid value sideways for configuration group.consumer.migration.policy",
        ),
    ],
)
def test_bad_group_settings_are_refused_at_start(settings: dict[str, str], message: str) -> None:
    """Though the group coordinator is built on first use (share-group settings:
    tests/groups/test_share_wire_heartbeat.py)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        KafkaBroker(storage="memory", config=settings).start()
