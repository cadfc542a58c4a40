"""The transaction APIs on the wire: advertised versions, error codes, fencing, timeouts,
transactional offsets, admin views and a restart, with hand-built requests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import request_class
from minibroker.protocol.errors import ErrorCode
from minibroker.records.batch import BatchHeader, split_batches
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.wirehelp import fetch_offsets, join_two_step, sync
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, describe_txn, unique, wait_for
from tests.wire import WireClient

E = ErrorCode
_ProduceTopic = request_class(ApiKey.Produce).TopicProduceData


# These are the transactions V1 (pre-KIP-890 part 2) paths: a TV1 cluster, where the
# coordinator's own aborts do not bump the epoch a second time (tests/txn/test_tv2.py: TV2).
TV1_SETTINGS = {**TXN_SETTINGS, "minibroker.transaction.version": "1"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=TV1_SETTINGS) as running:
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    create_topic(broker.bootstrap_servers, "t", 2)
    with WireClient(broker.bootstrap_servers) as connected:
        yield connected


def init(
    client: WireClient, txn_id: str, timeout_ms: int = 60_000, version: int = 4, **ids: int
) -> Any:
    return client.call(
        ApiKey.InitProducerId,
        version,
        transactional_id=txn_id,
        transaction_timeout_ms=timeout_ms,
        producer_id=ids.get("producer_id", -1),
        producer_epoch=ids.get("producer_epoch", -1),
    )


def init_ok(client: WireClient, txn_id: str, timeout_ms: int = 60_000) -> tuple[int, int]:
    response = init(client, txn_id, timeout_ms)
    assert response.error_code == E.NO_ERROR
    return response.producer_id, response.producer_epoch


def add_partitions(
    client: WireClient,
    txn_id: str,
    pid: int,
    epoch: int,
    partitions: dict[str, list[int]],
    version: int = 3,
) -> dict[tuple[str, int], int]:
    response = client.call(
        ApiKey.AddPartitionsToTxn,
        version,
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[{"name": n, "partitions": p} for n, p in partitions.items()],
    )
    return {
        (topic.name, result.partition_index): result.partition_error_code
        for topic in response.results_by_topic_v3_and_below
        for result in topic.results_by_partition
    }


def end_txn(
    client: WireClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3
) -> int:
    response = client.call(
        ApiKey.EndTxn,
        version,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    return int(response.error_code)


def add_offsets(client: WireClient, txn_id: str, pid: int, epoch: int, group: str) -> int:
    response = client.call(
        ApiKey.AddOffsetsToTxn,
        3,
        transactional_id=txn_id,
        producer_id=pid,
        producer_epoch=epoch,
        group_id=group,
    )
    return int(response.error_code)


def txn_offset_commit(
    client: WireClient,
    txn_id: str,
    pid: int,
    epoch: int,
    group: str,
    offset: int,
    *,
    member_id: str = "",
    generation: int = -1,
) -> int:
    response = client.call(
        ApiKey.TxnOffsetCommit,
        3,
        transactional_id=txn_id,
        group_id=group,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )
    return int(response.topics[0].partitions[0].error_code)


def produce_txn(client: WireClient, txn_id: str, pid: int, epoch: int, sequence: int = 0) -> Any:
    batch = build_batch(
        [(None, b"v", [], int(time.time() * 1000))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=True,
    )
    response = client.call(
        ApiKey.Produce,
        8,
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            _ProduceTopic(
                name="t",
                partition_data=[_ProduceTopic.PartitionProduceData(index=0, records=batch)],
            )
        ],
    )
    return response.responses[0].partition_responses[0]


def state_of(bootstrap: str, txn_id: str) -> str:
    return str(describe_txn(bootstrap, txn_id).transaction_state)


# -- versions and lookup -----------------------------------------------------------------------


def test_advertised_versions_and_the_transaction_version_feature(client: WireClient) -> None:
    response = client.call(
        ApiKey.ApiVersions, 3, client_software_name="t", client_software_version="1"
    )
    ranges = {key.api_key: (key.min_version, key.max_version) for key in response.api_keys}
    assert ranges[ApiKey.InitProducerId] == (0, 5)  # v6 (KIP-939) is unstable in Kafka 4.3
    assert ranges[ApiKey.AddPartitionsToTxn] == (0, 5)
    assert ranges[ApiKey.AddOffsetsToTxn] == (0, 4)
    assert ranges[ApiKey.EndTxn] == (0, 5)
    assert ranges[ApiKey.TxnOffsetCommit] == (0, 5)
    assert ranges[ApiKey.DescribeTransactions] == (0, 0)
    assert ranges[ApiKey.WriteTxnMarkers] == (1, 2)  # admin clients abort hanging transactions
    features = {f.name: f.max_version_level for f in response.finalized_features or []}
    assert features["transaction.version"] == 1  # this module's cluster; Kafka 4.3's default: 2


@pytest.mark.parametrize("version", [1, 3, 4])
def test_find_coordinator_for_a_transactional_id_creates_the_state_topic(
    client: WireClient, version: int
) -> None:
    if version >= 4:
        response = client.call(ApiKey.FindCoordinator, version, key_type=1, coordinator_keys=["tx"])
        found = response.coordinators[0]
    else:
        found = client.call(ApiKey.FindCoordinator, version, key="tx", key_type=1)
    assert found.error_code == E.NO_ERROR and found.node_id == 1
    metadata = client.call(ApiKey.Metadata, 9, topics=None, allow_auto_topic_creation=False)
    internal = {topic.name: topic.is_internal for topic in metadata.topics}
    assert internal["__transaction_state"] is True
    assert internal["t"] is False


# -- InitProducerId ------------------------------------------------------------------------------


def test_init_producer_id_errors_and_epoch_bumps(client: WireClient) -> None:
    assert init(client, "tx", timeout_ms=0).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(client, "tx", timeout_ms=900_001).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert init(client, "", timeout_ms=1000).error_code == E.INVALID_REQUEST
    pid, epoch = init_ok(client, "tx")
    assert epoch == 0
    assert init_ok(client, "tx") == (pid, 1)
    resumed = init(client, "tx", producer_id=pid, producer_epoch=1)
    assert (resumed.error_code, resumed.producer_epoch) == (E.NO_ERROR, 2)
    stale = init(client, "tx", producer_id=pid, producer_epoch=0)
    assert (stale.error_code, stale.producer_id) == (E.PRODUCER_FENCED, -1)
    old_version = init(client, "tx", version=3, producer_id=pid, producer_epoch=0)
    assert old_version.error_code == E.INVALID_PRODUCER_EPOCH


# -- bad sequences -------------------------------------------------------------------------------


def test_add_partitions_errors(client: WireClient) -> None:
    pid, epoch = init_ok(client, "tx")
    unknown = add_partitions(client, "tx", pid, epoch, {"t": [0], "nope": [0]})
    assert unknown == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert state_of(client_bootstrap(client), "tx") == "Empty"
    other = add_partitions(client, "other", pid, epoch, {"t": [0]})
    assert other == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert add_partitions(client, "tx", pid, epoch + 1, {"t": [0]}) == {("t", 0): E.PRODUCER_FENCED}
    assert add_partitions(client, "tx", pid, epoch + 1, {"t": [0]}, version=1) == {
        ("t", 0): E.INVALID_PRODUCER_EPOCH
    }
    assert add_partitions(client, "tx", pid, epoch, {"t": [0, 1]}) == {
        ("t", 0): E.NO_ERROR,
        ("t", 1): E.NO_ERROR,
    }


def client_bootstrap(client: WireClient) -> str:
    host, port = client.sock.getpeername()[:2]
    return f"{host}:{port}"


def test_end_txn_bad_sequences(client: WireClient) -> None:
    assert end_txn(client, "tx", 5, 0, True) == E.INVALID_PRODUCER_ID_MAPPING
    pid, epoch = init_ok(client, "tx")
    assert end_txn(client, "tx", pid, epoch, True) == E.INVALID_TXN_STATE
    assert add_partitions(client, "tx", pid, epoch, {"t": [0]})[("t", 0)] == E.NO_ERROR
    assert end_txn(client, "tx", pid, epoch + 1, True) == E.PRODUCER_FENCED
    assert end_txn(client, "tx", pid, epoch + 1, True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert end_txn(client, "tx", pid, epoch, True) == E.NO_ERROR
    bootstrap = client_bootstrap(client)
    wait_for(lambda: state_of(bootstrap, "tx") == "CompleteCommit", "the commit")
    assert end_txn(client, "tx", pid, epoch, True) == E.NO_ERROR  # a retry
    assert end_txn(client, "tx", pid, epoch, False) == E.INVALID_TXN_STATE


# -- fencing and timeouts ------------------------------------------------------------------------


def _stored_control_batches(broker: ThreadedBroker) -> list[BatchHeader]:
    assert broker.broker is not None
    partition = broker.broker.cluster.partition("t", 0)
    assert partition is not None
    data = partition.log.read(0, 1 << 20)
    return [h for h in map(BatchHeader.parse, split_batches(data)) if h.is_control]


def test_a_second_producer_fences_the_first_and_aborts_its_transaction(
    broker: ThreadedBroker, client: WireClient
) -> None:
    pid, epoch = init_ok(client, "tx")
    assert add_partitions(client, "tx", pid, epoch, {"t": [0]})[("t", 0)] == E.NO_ERROR
    assert produce_txn(client, "tx", pid, epoch).error_code == E.NO_ERROR
    assert init(client, "tx").error_code == E.CONCURRENT_TRANSACTIONS
    second = wait_for(lambda: (r := init(client, "tx")).error_code == E.NO_ERROR and r, "init")
    assert (second.producer_id, second.producer_epoch) == (pid, epoch + 2)
    assert end_txn(client, "tx", pid, epoch, True) == E.PRODUCER_FENCED
    assert add_partitions(client, "tx", pid, epoch, {"t": [0]})[("t", 0)] == E.PRODUCER_FENCED
    markers = _stored_control_batches(broker)
    assert [(m.producer_id, m.producer_epoch) for m in markers] == [(pid, epoch + 1)]


def test_a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced(
    broker: ThreadedBroker, client: WireClient
) -> None:
    bootstrap = broker.bootstrap_servers
    pid, epoch = init_ok(client, "slow", timeout_ms=300)
    assert add_partitions(client, "slow", pid, epoch, {"t": [0]})[("t", 0)] == E.NO_ERROR
    assert produce_txn(client, "slow", pid, epoch).error_code == E.NO_ERROR
    wait_for(lambda: state_of(bootstrap, "slow") == "CompleteAbort", "the broker's abort")
    described = describe_txn(bootstrap, "slow")
    assert (described.producer_id, described.producer_epoch) == (pid, epoch + 1)
    assert end_txn(client, "slow", pid, epoch, True) == E.PRODUCER_FENCED
    markers = _stored_control_batches(broker)
    assert [(m.producer_id, m.producer_epoch) for m in markers] == [(pid, epoch + 1)]


# -- transactional offsets ----------------------------------------------------------------------


def test_txn_offsets_are_visible_only_after_commit(client: WireClient) -> None:
    bootstrap = client_bootstrap(client)
    group = unique("g")
    pid, epoch = init_ok(client, "tx")
    assert add_partitions(client, "tx", pid, epoch, {"t": [0]})[("t", 0)] == E.NO_ERROR
    assert txn_offset_commit(client, "tx", pid, epoch, group, 5) == E.INVALID_TXN_STATE
    assert add_offsets(client, "tx", pid, epoch, group) == E.NO_ERROR
    assert txn_offset_commit(client, "tx", pid, epoch - 1, group, 5) == E.INVALID_PRODUCER_EPOCH
    assert txn_offset_commit(client, "tx", pid, epoch, group, 5) == E.NO_ERROR
    assert fetch_offsets(client, group, {"t": [0]})[("t", 0)][0] == -1
    assert end_txn(client, "tx", pid, epoch, False) == E.NO_ERROR
    wait_for(lambda: state_of(bootstrap, "tx") == "CompleteAbort", "the abort")
    assert fetch_offsets(client, group, {"t": [0]})[("t", 0)][0] == -1
    assert add_offsets(client, "tx", pid, epoch, group) == E.NO_ERROR
    assert txn_offset_commit(client, "tx", pid, epoch, group, 7) == E.NO_ERROR
    assert end_txn(client, "tx", pid, epoch, True) == E.NO_ERROR
    wait_for(lambda: fetch_offsets(client, group, {"t": [0]})[("t", 0)][0] == 7, "the offset")


def test_txn_offset_commit_checks_the_group_generation(client: WireClient) -> None:
    group = unique("g")
    member_id = join_two_step(client, group).member_id
    assert sync(client, group, member_id, 1, {member_id: b""}).error_code == E.NO_ERROR
    pid, epoch = init_ok(client, "tx")
    assert add_offsets(client, "tx", pid, epoch, group) == E.NO_ERROR
    commit = {"member_id": member_id}
    assert txn_offset_commit(client, "tx", pid, epoch, group, 1, generation=2, **commit) == (
        E.ILLEGAL_GENERATION
    )
    assert txn_offset_commit(
        client, "tx", pid, epoch, group, 1, member_id="zombie", generation=1
    ) == (E.UNKNOWN_MEMBER_ID)
    assert txn_offset_commit(client, "tx", pid, epoch, group, 1, generation=1, **commit) == (
        E.NO_ERROR
    )


# -- admin views -------------------------------------------------------------------------------


def test_list_and_describe_transactions(client: WireClient) -> None:
    bootstrap = client_bootstrap(client)
    init_ok(client, "idle")
    pid, epoch = init_ok(client, "busy", timeout_ms=45_000)
    add_partitions(client, "busy", pid, epoch, {"t": [1, 0]})
    described = describe_txn(bootstrap, "busy")
    assert described.error_code == E.NO_ERROR
    assert (described.transaction_state, described.transaction_timeout_ms) == ("Ongoing", 45_000)
    assert described.transaction_start_time_ms > 0
    assert [(t.topic, t.partitions) for t in described.topics] == [("t", [0, 1])]
    assert describe_txn(bootstrap, "nope").error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    listed = client.call(
        ApiKey.ListTransactions, 1, state_filters=[], producer_id_filters=[], duration_filter=-1
    )
    assert {(t.transactional_id, t.transaction_state) for t in listed.transaction_states} == {
        ("idle", "Empty"),
        ("busy", "Ongoing"),
    }
    filtered = client.call(
        ApiKey.ListTransactions, 0, state_filters=["Ongoing", "Bogus"], producer_id_filters=[]
    )
    assert [t.transactional_id for t in filtered.transaction_states] == ["busy"]
    assert filtered.unknown_state_filters == ["Bogus"]


# -- restart -------------------------------------------------------------------------------------


def test_an_open_transaction_survives_a_restart_and_still_times_out(
    broker: ThreadedBroker, client: WireClient
) -> None:
    pid, epoch = init_ok(client, "tx", timeout_ms=2000)
    assert add_partitions(client, "tx", pid, epoch, {"t": [0, 1]})[("t", 0)] == E.NO_ERROR
    assert produce_txn(client, "tx", pid, epoch).error_code == E.NO_ERROR
    client.close()
    broker.restart()
    bootstrap = broker.bootstrap_servers
    described = describe_txn(bootstrap, "tx")
    assert (described.transaction_state, described.producer_epoch) == ("Ongoing", epoch)
    assert [(t.topic, t.partitions) for t in described.topics] == [("t", [0, 1])]
    wait_for(lambda: state_of(bootstrap, "tx") == "CompleteAbort", "the abort after restart")
    assert describe_txn(bootstrap, "tx").producer_epoch == epoch + 1
