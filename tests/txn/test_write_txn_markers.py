"""WriteTxnMarkers (key 27): aborting a hanging transaction with Java 4.3's Admin
(`describeProducers` -> `abortTransaction`, the flow of `kafka-transactions.sh abort`), and the
request's per-partition answers on the wire: unknown partitions, producer and coordinator
epoch checks, transactions V2's strict epoch check (v2, KIP-1228), cluster authorization and
a marker completing (or dropping) transactional offset commits in `__consumer_offsets`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_client, run_ok
from tests.txn.test_txn_coord_wire import add_offsets, init_ok, txn_offset_commit
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, describe_txn, records, text, unique
from tests.wire import WireClient

LATEST = -1
READ_COMMITTED = 1
LONG_TIMEOUT_MS = 600_000  # not aborted by the coordinator during the test


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=TXN_SETTINGS) as running:
        yield running


def last_stable_offset(bootstrap: str, topic: str) -> int:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.ListOffsets,
            7,
            replica_id=-1,
            isolation_level=READ_COMMITTED,
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": LATEST}
                    ],
                }
            ],
        )
    [partition] = response.topics[0].partitions
    assert partition.error_code == ErrorCode.NO_ERROR
    return int(partition.offset)


def leave_transaction_open(bootstrap: str, topic: str, transactional_id: str) -> None:
    """A transactional producer adds the partition, writes, and is abandoned (its JVM halts)."""
    run_ok(
        "java-4.3",
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "records": records("hanging", 2),
            "transactional_id": transactional_id,
            "transaction": "open",
            "transaction_timeout_ms": LONG_TIMEOUT_MS,
        },
    )


def committed_values(bootstrap: str, topic: str, count: int) -> list[str | None]:
    result = run_ok(
        "java-4.3",
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": count,
            "from": "earliest",
            "isolation": "read_committed",
            "timeout_ms": 5_000,
            "group": None,
        },
    )
    return [text(record["value"]) for record in result["records"]]


def producers(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    job = {"op": "describe_producers", "bootstrap": bootstrap, "topic": topic, "partition": 0}
    result: list[dict[str, Any]] = run_ok("java-4.3", job)["producers"]
    return result


@pytest.mark.clients
def test_java_admin_aborts_a_hanging_transaction_found_by_its_start_offset(
    broker: ThreadedBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("hanging")
    create_topic(bootstrap, topic)
    leave_transaction_open(bootstrap, topic, "abandoned")
    run_ok(
        "java-4.3",
        {
            "op": "produce",
            "bootstrap": bootstrap,
            "topic": topic,
            "records": records("later", 2),
            "transactional_id": "healthy",
        },
    )
    assert last_stable_offset(bootstrap, topic) == 0  # held back by the open transaction
    [hanging] = [
        p for p in producers(bootstrap, topic) if p["current_transaction_start_offset"] == 0
    ]
    assert hanging["coordinator_epoch"] == -1  # no marker of its yet

    aborted = run_ok(
        "java-4.3",
        {
            "op": "abort_hanging",
            "bootstrap": bootstrap,
            "topic": topic,
            "partition": 0,
            "start_offset": 0,
        },
    )

    assert (aborted["producer_id"], aborted["producer_epoch"], aborted["coordinator_epoch"]) == (
        hanging["producer_id"],
        hanging["producer_epoch"],
        0,
    )
    # 2 aborted records, the healthy transaction's 2 and its marker, the abort marker
    assert last_stable_offset(bootstrap, topic) == 6
    assert committed_values(bootstrap, topic, 3) == ["later-0", "later-1"]
    after = {p["producer_id"]: p for p in producers(bootstrap, topic)}
    assert after[hanging["producer_id"]]["current_transaction_start_offset"] == -1
    # the coordinator still has the transaction open: only the partition's side was ended
    assert describe_txn(bootstrap, "abandoned").transaction_state == "Ongoing"


@pytest.mark.clients
def test_java_admin_abort_with_a_stale_producer_epoch_fails(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("stale")
    create_topic(bootstrap, topic)
    leave_transaction_open(bootstrap, topic, "abandoned-stale")
    [hanging] = producers(bootstrap, topic)
    result = run_client(
        "java-4.3",
        {
            "op": "abort_transaction",
            "bootstrap": bootstrap,
            "topic": topic,
            "partition": 0,
            "producer_id": hanging["producer_id"],
            "producer_epoch": hanging["producer_epoch"] - 1,
            "coordinator_epoch": 0,
        },
    )
    assert not result["ok"]
    assert result["error_name"] == "INVALID_PRODUCER_EPOCH", result["error"]
    assert last_stable_offset(bootstrap, topic) == 0


# -- on the wire --------------------------------------------------------------------------------


def write_markers(
    bootstrap: str, version: int, markers: list[dict[str, Any]]
) -> dict[tuple[int, str, int], int]:
    with WireClient(bootstrap) as client:
        response = client.call(ApiKey.WriteTxnMarkers, version, markers=markers)
    return {
        (marker.producer_id, topic.name, partition.partition_index): partition.error_code
        for marker in response.markers
        for topic in marker.topics
        for partition in topic.partitions
    }


def marker(
    producer_id: int,
    producer_epoch: int,
    topics: dict[str, list[int]],
    *,
    commit: bool = False,
    coordinator_epoch: int = 0,
    transaction_version: int = 0,
) -> dict[str, Any]:
    return {
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "transaction_result": commit,
        "topics": [{"name": name, "partition_indexes": parts} for name, parts in topics.items()],
        "coordinator_epoch": coordinator_epoch,
        "transaction_version": transaction_version,
    }


def open_transaction(bootstrap: str, topic: str) -> tuple[int, int]:
    """A hanging transaction's producer id and epoch, from DescribeProducers."""
    leave_transaction_open(bootstrap, topic, unique("tid"))
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.DescribeProducers, 0, topics=[{"name": topic, "partition_indexes": [0]}]
        )
    [state] = response.topics[0].partitions[0].active_producers
    return int(state.producer_id), int(state.producer_epoch)


@pytest.mark.clients
def test_unknown_partitions_and_epoch_checks_per_partition(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("wire")
    create_topic(bootstrap, topic)
    producer_id, epoch = open_transaction(bootstrap, topic)
    errors = write_markers(
        bootstrap,
        1,
        [
            marker(producer_id, epoch - 1, {topic: [0, 7], "no-such-topic": [0]}),
            marker(producer_id + 1000, 0, {"no-such-topic": [1]}),
        ],
    )
    assert errors == {
        (producer_id, topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH,
        (producer_id, topic, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (producer_id, "no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (producer_id + 1000, "no-such-topic", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert last_stable_offset(bootstrap, topic) == 0
    # a marker from coordinator epoch 5, then one from an older coordinator: fenced
    assert write_markers(
        bootstrap, 1, [marker(producer_id, epoch, {topic: [0]}, coordinator_epoch=5)]
    ) == {(producer_id, topic, 0): ErrorCode.NO_ERROR}
    assert last_stable_offset(bootstrap, topic) == 3
    assert write_markers(
        bootstrap, 1, [marker(producer_id, epoch, {topic: [0]}, coordinator_epoch=4)]
    ) == {(producer_id, topic, 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}


@pytest.mark.clients
def test_v2_transaction_version_2_markers_must_bump_the_epoch(broker: ThreadedBroker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = unique("tv2")
    create_topic(bootstrap, topic)
    producer_id, epoch = open_transaction(bootstrap, topic)
    same_epoch = marker(producer_id, epoch, {topic: [0]}, transaction_version=2)
    assert write_markers(bootstrap, 2, [same_epoch]) == {
        (producer_id, topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH
    }
    # v1 has no transaction version: the same marker is a legacy one, its epoch may be equal
    assert write_markers(bootstrap, 1, [same_epoch]) == {
        (producer_id, topic, 0): ErrorCode.NO_ERROR
    }
    bumped = marker(producer_id, epoch + 1, {topic: [0]}, transaction_version=2)
    assert write_markers(bootstrap, 2, [bumped]) == {(producer_id, topic, 0): ErrorCode.NO_ERROR}


def test_without_cluster_alter_or_cluster_action_every_partition_is_refused(
    tmp_path: Path,
) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=AUTHORIZER_CONFIG) as running:
        errors = write_markers(
            running.bootstrap_servers, 1, [marker(7, 0, {"a": [0, 1]}), marker(8, 0, {"b": [2]})]
        )
    assert errors == {
        (7, "a", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        (7, "a", 1): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        (8, "b", 2): ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    }


def java_hash(text: str) -> int:
    """Java's `String.hashCode` (Kafka places a group's offsets by it)."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def offsets_partition(group: str) -> int:
    return (java_hash(group) & 0x7FFFFFFF) % int(TXN_SETTINGS["offsets.topic.num.partitions"])


def stable_offset(client: WireClient, group: str) -> tuple[int, int]:
    response = client.call(
        ApiKey.OffsetFetch,
        7,
        group_id=group,
        topics=[{"name": "t", "partition_indexes": [0]}],
        require_stable=True,
    )
    [partition] = response.topics[0].partitions
    return int(partition.error_code), int(partition.committed_offset)


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_a_marker_in_consumer_offsets_completes_transactional_offsets(
    broker: ThreadedBroker, commit: bool
) -> None:
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "t")
    with WireClient(bootstrap) as client:
        producer_id, epoch = init_ok(client, "offsets-txn")
        assert add_offsets(client, "offsets-txn", producer_id, epoch, "g") == ErrorCode.NO_ERROR
        assert txn_offset_commit(client, "offsets-txn", producer_id, epoch, "g", 42) == 0
        assert stable_offset(client, "g") == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
        offsets = {"__consumer_offsets": [offsets_partition("g")]}
        errors = write_markers(bootstrap, 1, [marker(producer_id, epoch, offsets, commit=commit)])
        assert set(errors.values()) == {ErrorCode.NO_ERROR}
        assert stable_offset(client, "g") == (ErrorCode.NO_ERROR, 42 if commit else -1)
