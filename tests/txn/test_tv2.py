"""Transactions V2 (KIP-890 part 2) on the wire and with real clients: EndTxn v5 bumps the
producer epoch, Produce v12 adds partitions implicitly, TxnOffsetCommit v5 adds the offsets
partition, and under TV1 a transactional produce to a partition not in the transaction is
refused (verification), so no hanging transaction can be made."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing import KafkaBroker
from minibroker.txn.state import INT16_MAX, TxnState, TxnTransit
from minibroker.txn.state_log import decode_value, encode_value
from tests.clients.runner import run_ok
from tests.txn.test_txn_coord_coordinator import Setup, settle
from tests.txn.txn_wire import READ_UNCOMMITTED, fetch, headers
from tests.txn.txnhelp import TXN_SETTINGS, describe_txn, records, text, unique, wait_for
from tests.wire import WireClient

E = ErrorCode
TV1 = {**TXN_SETTINGS, "minibroker.transaction.version": "1"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    with KafkaBroker(data_dir=tmp_path / "data", config=TXN_SETTINGS) as running:
        running.create_topic("t", partitions=2)
        yield running


@pytest.fixture
def tv1_broker(tmp_path: Path) -> Iterator[KafkaBroker]:
    with KafkaBroker(data_dir=tmp_path / "data", config=TV1) as running:
        running.create_topic("t", partitions=2)
        yield running


def init(client: WireClient, txn_id: str) -> tuple[int, int]:
    response = client.call(
        ApiKey.InitProducerId,
        5,
        transactional_id=txn_id,
        transaction_timeout_ms=60_000,
        producer_id=-1,
        producer_epoch=-1,
    )
    assert response.error_code == E.NO_ERROR
    return response.producer_id, response.producer_epoch


def produce(
    client: WireClient,
    txn_id: str,
    pid: int,
    epoch: int,
    *,
    version: int = 12,
    partition: int = 0,
    sequence: int = 0,
) -> Any:
    batch = build_batch(
        [(None, b"v", [], int(time.time() * 1000))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )
    response = client.call(
        ApiKey.Produce,
        version,
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            {"name": "t", "partition_data": [{"index": partition, "records": batch}]},
        ],
    )
    return response.responses[0].partition_responses[0]


def end(client: WireClient, txn_id: str, pid: int, epoch: int, commit: bool) -> Any:
    return client.call(
        ApiKey.EndTxn,
        5,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )


def state_of(bootstrap: str, txn_id: str) -> str:
    return str(describe_txn(bootstrap, txn_id).transaction_state)


def partitions_of(bootstrap: str, txn_id: str) -> set[tuple[str, int]]:
    described = describe_txn(bootstrap, txn_id)
    return {(t.topic, p) for t in described.topics for p in t.partitions}


# ---- TV2 on the wire ------------------------------------------------------------------------


def test_produce_v12_adds_the_partition_and_end_txn_v5_bumps_the_epoch(
    broker: KafkaBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    with WireClient(bootstrap) as client:
        pid, epoch = init(client, "tx")
        assert produce(client, "tx", pid, epoch).error_code == E.NO_ERROR
        assert state_of(bootstrap, "tx") == "Ongoing"
        assert partitions_of(bootstrap, "tx") == {("t", 0)}
        ended = end(client, "tx", pid, epoch, commit=True)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (
            E.NO_ERROR,
            pid,
            epoch + 1,
        )
        wait_for(lambda: state_of(bootstrap, "tx") == "CompleteCommit", "the commit")
        # the COMMIT marker carries the bumped epoch
        batches = headers(fetch(bootstrap, "t", 0, READ_UNCOMMITTED).records)
        assert [(b.is_control, b.producer_epoch) for b in batches] == [
            (False, epoch),
            (True, epoch + 1),
        ]
        # a retry of the end (the previous epoch) answers the current epoch
        retried = end(client, "tx", pid, epoch, commit=True)
        assert (retried.error_code, retried.producer_epoch) == (E.NO_ERROR, epoch + 1)
        assert end(client, "tx", pid, epoch, commit=False).error_code == E.INVALID_TXN_STATE
        # the old epoch is fenced on the produce path; the new one starts at sequence 0
        assert produce(client, "tx", pid, epoch).error_code == E.INVALID_PRODUCER_EPOCH
        assert produce(client, "tx", pid, epoch + 1).error_code == E.NO_ERROR
        assert end(client, "tx", pid, epoch, commit=True).error_code == E.PRODUCER_FENCED


def test_an_abort_with_nothing_in_the_transaction_still_bumps_the_epoch(
    broker: KafkaBroker,
) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        pid, epoch = init(client, "empty")
        aborted = end(client, "empty", pid, epoch, commit=False)
        assert (aborted.error_code, aborted.producer_epoch) == (E.NO_ERROR, epoch + 1)
        wait_for(
            lambda: state_of(broker.bootstrap_servers, "empty") == "CompleteAbort", "the abort"
        )
        # a commit with nothing in the transaction is refused, as in TV1
        committed = end(client, "empty", pid, epoch + 1, commit=True)
        assert (committed.error_code, committed.producer_id) == (E.INVALID_TXN_STATE, -1)


def test_fencing_an_ongoing_tv2_transaction_bumps_twice(broker: KafkaBroker) -> None:
    """InitProducerId fences (epoch + 1) and the coordinator's abort follows the finalized TV2
    (epoch + 2, the markers' epoch); the retried InitProducerId bumps once more."""
    bootstrap = broker.bootstrap_servers
    with WireClient(bootstrap) as client:
        pid, epoch = init(client, "zombie")
        assert produce(client, "zombie", pid, epoch).error_code == E.NO_ERROR
        fencing = client.call(
            ApiKey.InitProducerId,
            5,
            transactional_id="zombie",
            transaction_timeout_ms=60_000,
            producer_id=-1,
            producer_epoch=-1,
        )
        assert fencing.error_code == E.CONCURRENT_TRANSACTIONS
        wait_for(lambda: state_of(bootstrap, "zombie") == "CompleteAbort", "the abort")
        assert describe_txn(bootstrap, "zombie").producer_epoch == epoch + 2
        assert init(client, "zombie") == (pid, epoch + 3)
        batches = headers(fetch(bootstrap, "t", 0, READ_UNCOMMITTED).records)
        assert [(b.is_control, b.producer_epoch) for b in batches] == [
            (False, epoch),
            (True, epoch + 2),
        ]
        assert produce(client, "zombie", pid, epoch, sequence=1).error_code == (
            E.INVALID_PRODUCER_EPOCH
        )


def test_txn_offset_commit_v5_adds_the_offsets_partition(broker: KafkaBroker) -> None:
    bootstrap = broker.bootstrap_servers
    with WireClient(bootstrap) as client:
        pid, epoch = init(client, "offsets")
        response = client.call(
            ApiKey.TxnOffsetCommit,
            5,
            transactional_id="offsets",
            group_id="g",
            producer_id=pid,
            producer_epoch=epoch,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            topics=[
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 7,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        )
        assert response.topics[0].partitions[0].error_code == E.NO_ERROR
        assert {topic for topic, _ in partitions_of(bootstrap, "offsets")} == {"__consumer_offsets"}
        assert end(client, "offsets", pid, epoch, commit=True).error_code == E.NO_ERROR
    wait_for(lambda: broker.committed_offsets("g") == {("t", 0): 7}, "the committed offset")


def test_add_partitions_v4_batches_transactions_and_verifies(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        pid, epoch = init(client, "a")
        other_pid, other_epoch = init(client, "b")

        def add(txn_id: str, pid: int, epoch: int, verify_only: bool) -> dict[str, Any]:
            return {
                "transactional_id": txn_id,
                "producer_id": pid,
                "producer_epoch": epoch,
                "verify_only": verify_only,
                "topics": [{"name": "t", "partitions": [0, 1]}],
            }

        response = client.call(
            ApiKey.AddPartitionsToTxn,
            5,
            transactions=[add("a", pid, epoch, False), add("b", other_pid, other_epoch, True)],
        )
        assert response.error_code == E.NO_ERROR
        answers = {
            (txn.transactional_id, p.partition_index): p.partition_error_code
            for txn in response.results_by_transaction
            for topic in txn.topic_results
            for p in topic.results_by_partition
        }
        assert answers == {
            ("a", 0): E.NO_ERROR,
            ("a", 1): E.NO_ERROR,
            ("b", 0): E.TRANSACTION_ABORTABLE,
            ("b", 1): E.TRANSACTION_ABORTABLE,
        }
        verified = client.call(
            ApiKey.AddPartitionsToTxn, 4, transactions=[add("a", pid, epoch + 1, True)]
        )
        codes = {
            p.partition_error_code
            for p in verified.results_by_transaction[0].topic_results[0].results_by_partition
        }
        assert codes == {E.PRODUCER_FENCED}


def test_tv2_transactions_are_stored_as_transaction_log_value_v1(broker: KafkaBroker) -> None:
    bootstrap = broker.bootstrap_servers
    with WireClient(bootstrap) as client:
        pid, epoch = init(client, "kept")
        assert produce(client, "kept", pid, epoch).error_code == E.NO_ERROR
    broker.restart()
    assert state_of(broker.bootstrap_servers, "kept") == "Ongoing"
    with WireClient(broker.bootstrap_servers) as client:
        ended = end(client, "kept", pid, epoch, commit=False)
    assert (ended.error_code, ended.producer_epoch) == (E.NO_ERROR, epoch + 1)
    transit = TxnTransit(7, 3, 2, 1, 60_000, TxnState.ONGOING, frozenset({("t", 0)}), 5, 6, 2)
    encoded = encode_value(transit, 1)
    assert encoded[:2] == b"\x00\x01"
    assert decode_value(encoded) == TxnTransit(
        7, 3, 2, -1, 60_000, TxnState.ONGOING, frozenset({("t", 0)}), 5, 6, 2
    )


# ---- TV1: verification ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "refused"),
    [(10, E.INVALID_TXN_STATE), (11, E.TRANSACTION_ABORTABLE), (12, E.TRANSACTION_ABORTABLE)],
)
def test_tv1_refuses_a_produce_to_a_partition_not_in_the_transaction(
    tv1_broker: KafkaBroker, version: int, refused: ErrorCode
) -> None:
    with WireClient(tv1_broker.bootstrap_servers) as client:
        pid, epoch = init(client, "tx")
        answer = produce(client, "tx", pid, epoch, version=version)
        assert answer.error_code == refused
        if refused == E.INVALID_TXN_STATE:
            assert answer.error_message == "Partition was not added to the transaction"
        assert tv1_broker.end_offsets("t") == {0: 0, 1: 0}
        assert state_of(tv1_broker.bootstrap_servers, "tx") == "Empty"  # nothing hangs
        added = client.call(
            ApiKey.AddPartitionsToTxn,
            3,
            v3_and_below_transactional_id="tx",
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[{"name": "t", "partitions": [0]}],
        )
        assert (
            added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        )
        assert produce(client, "tx", pid, epoch, version=version).error_code == E.NO_ERROR
        other = produce(client, "tx", pid, epoch, version=version, partition=1, sequence=1)
        assert other.error_code == refused
        wrong_id = produce(client, "unknown", pid, epoch, version=version, sequence=1)
        assert wrong_id.error_code == E.INVALID_PRODUCER_ID_MAPPING
        fenced = produce(client, "tx", pid, epoch + 1, version=version, sequence=0)
        assert fenced.error_code == E.INVALID_PRODUCER_EPOCH


# ---- real clients ---------------------------------------------------------------------------


def _transactions(client: str, bootstrap: str, topic: str) -> None:
    transactional_id = unique("tid", client)
    for ending in ("commit", "abort", "commit"):
        produced = run_ok(
            client,
            {
                "op": "produce",
                "bootstrap": bootstrap,
                "topic": topic,
                "records": records(ending, 2),
                "transactional_id": transactional_id,
                "transaction": ending,
            },
        )
        assert len(produced["results"]) == 2
    result = run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": 4,
            "from": "earliest",
            "isolation": "read_committed",
            "timeout_ms": 8000,
            "group": None,
        },
    )
    committed = ["commit-0", "commit-1"]
    assert [text(r["value"]) for r in result["records"]] == committed + committed


@pytest.mark.clients
def test_java_4_3_commits_and_aborts_under_tv2(broker: KafkaBroker) -> None:
    broker.create_topic("java", partitions=1)
    broker.clear_requests()
    _transactions("java-4.3", broker.bootstrap_servers, "java")
    assert {r.api_version for r in broker.requests(ApiKey.EndTxn)} == {5}
    produce_versions = {r.api_version for r in broker.requests(ApiKey.Produce)}
    assert produce_versions and min(produce_versions) >= 12
    assert broker.requests(ApiKey.AddPartitionsToTxn) == []


@pytest.mark.clients
def test_java_4_3_uses_tv1_when_tv2_is_not_finalized(tv1_broker: KafkaBroker) -> None:
    tv1_broker.create_topic("java", partitions=1)
    tv1_broker.clear_requests()
    _transactions("java-4.3", tv1_broker.bootstrap_servers, "java")
    assert max(r.api_version for r in tv1_broker.requests(ApiKey.EndTxn)) <= 4
    assert max(r.api_version for r in tv1_broker.requests(ApiKey.Produce)) <= 11
    assert tv1_broker.requests(ApiKey.AddPartitionsToTxn)


@pytest.mark.clients
@pytest.mark.parametrize("client", ["java-3.9", "confluent-kafka"])
def test_older_clients_keep_tv1_transactions_on_a_tv2_cluster(
    broker: KafkaBroker, client: str
) -> None:
    topic = unique("older", client)
    broker.create_topic(topic, partitions=1)
    broker.clear_requests()
    _transactions(client, broker.bootstrap_servers, topic)
    assert max(r.api_version for r in broker.requests(ApiKey.EndTxn)) <= 4
    assert broker.requests(ApiKey.AddPartitionsToTxn)


# ---- the coordinator in-process: an exhausted epoch -----------------------------------------


async def test_an_exhausted_epoch_hands_over_to_a_new_producer_id() -> None:
    setup = Setup()
    coordinator = setup.coordinator
    pid, _ = setup.init()
    coordinator.transactions["t"].producer_epoch = INT16_MAX - 1
    last = INT16_MAX - 1
    added = coordinator.add_partitions("t", pid, last, [("a", 0)], client_transaction_version=2)
    assert added == E.NO_ERROR
    ended = coordinator.end_txn_v2("t", pid, last, commit=True)
    # as Kafka: the answer carries the prepared epoch; the markers are written with it
    assert (ended.error, ended.producer_id, ended.producer_epoch) == (E.NO_ERROR, pid, INT16_MAX)
    await settle(coordinator)
    assert setup.recorder.markers == [("a", 0, pid, INT16_MAX, True)]
    txn = coordinator.transactions["t"]
    new_pid = txn.producer_id
    assert (new_pid != pid, txn.producer_epoch, txn.last_producer_id) == (True, 0, pid)
    retried = coordinator.end_txn_v2("t", pid, last, commit=True)  # a retry after the overflow
    assert (retried.error, retried.producer_id, retried.producer_epoch) == (E.NO_ERROR, new_pid, 0)
    assert coordinator.add_partitions("t", new_pid, 0, [("a", 1)], 2) == E.NO_ERROR


@pytest.mark.clients
def test_java_4_3_sends_offsets_to_a_tv2_transaction_without_add_offsets(
    broker: KafkaBroker,
) -> None:
    bootstrap = broker.bootstrap_servers
    names = {"input": "in", "output": "out", "group": "eos", "transactional_id": "eos-tid"}
    broker.create_topic("in", partitions=1)
    broker.create_topic("out", partitions=1)
    for i in range(6):
        broker.produce("in", f"in-{i}".encode(), partition=0)
    broker.clear_requests()
    result = run_ok(
        "java-4.3",
        {
            "op": "transform",
            "bootstrap": bootstrap,
            "batch": 3,
            "count": 6,
            "instance_id": "eos-1",
            "timeout_ms": 40_000,
            **names,
        },
    )
    assert (result["crashed"], result["committed"]) == (False, 6)
    assert broker.committed_offsets("eos") == {("in", 0): 6}
    assert {r.api_version for r in broker.requests(ApiKey.TxnOffsetCommit)} == {5}
    assert broker.requests(ApiKey.AddOffsetsToTxn) == []
    assert broker.requests(ApiKey.AddPartitionsToTxn) == []
    assert {r.api_version for r in broker.requests(ApiKey.EndTxn)} == {5}


@pytest.mark.clients
def test_update_features_switches_java_4_3_back_to_tv1(broker: KafkaBroker) -> None:
    with WireClient(broker.bootstrap_servers) as client:
        downgraded = client.call(
            ApiKey.UpdateFeatures,
            2,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "transaction.version", "max_version_level": 1, "upgrade_type": 2}
            ],
            validate_only=False,
        )
    assert downgraded.error_code == E.NO_ERROR
    broker.create_topic("java", partitions=1)
    broker.clear_requests()
    _transactions("java-4.3", broker.bootstrap_servers, "java")
    assert max(r.api_version for r in broker.requests(ApiKey.EndTxn)) <= 4
    assert broker.requests(ApiKey.AddPartitionsToTxn)
