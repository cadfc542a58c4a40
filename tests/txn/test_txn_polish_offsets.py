"""Transactional offset commits seen from outside: OffsetFetch `require_stable` answers
UNSTABLE_OFFSET_COMMIT while a transaction's offsets await their marker, and the
`__consumer_offsets` partition tracks those transactions (last stable offset, `.txnindex`)
while the broker runs exactly as after a restart or a rebuild from the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.wirehelp import commit, fetch_offsets
from tests.txn.test_txn_coord_wire import (
    add_offsets,
    end_txn,
    init_ok,
    state_of,
    txn_offset_commit,
)
from tests.txn.txn_wire import READ_COMMITTED, READ_UNCOMMITTED, aborted, fetch, list_offset
from tests.txn.txnhelp import TXN_SETTINGS, create_topic, unique, wait_for
from tests.wire import WireClient

E = ErrorCode
OFFSETS_TOPIC = "__consumer_offsets"
LATEST = -1
# One offsets partition: every group's records are in partition 0, where the helpers look.
SETTINGS = {**TXN_SETTINGS, "offsets.topic.num.partitions": "1"}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def broker(data_dir: Path) -> Iterator[ThreadedBroker]:
    with ThreadedBroker(data_dir=data_dir, settings=SETTINGS) as running:
        create_topic(running.bootstrap_servers, "t", 2)
        yield running


@pytest.fixture
def client(broker: ThreadedBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as connected:
        yield connected


def offset_fetch(
    client: WireClient, group: str, topics: dict[str, list[int]] | None, version: int = 7
) -> tuple[int, dict[tuple[str, int], tuple[int, int, int, str]]]:
    """(top-level error, {(topic, partition): (error, offset, leader epoch, metadata)})."""
    wanted = None
    if topics is not None:
        wanted = [{"name": name, "partition_indexes": parts} for name, parts in topics.items()]
    response = client.call(
        ApiKey.OffsetFetch, version, group_id=group, topics=wanted, require_stable=True
    )
    return response.error_code, _partitions(response.topics)


def _partitions(topics: Any) -> dict[tuple[str, int], tuple[int, int, int, str]]:
    return {
        (topic.name, p.partition_index): (
            p.error_code,
            p.committed_offset,
            p.committed_leader_epoch,
            p.metadata,
        )
        for topic in topics
        for p in topic.partitions
    }


def batched_fetch(
    client: WireClient, groups: dict[str, dict[str, list[int]] | None], version: int = 8
) -> dict[str, tuple[int, dict[tuple[str, int], tuple[int, int, int, str]]]]:
    """OffsetFetch v8+ with require_stable: {group: (group error, partitions as above)}."""
    response = client.call(
        ApiKey.OffsetFetch,
        version,
        groups=[
            {
                "group_id": group,
                "member_id": None,
                "member_epoch": -1,
                "topics": None
                if topics is None
                else [{"name": name, "partition_indexes": parts} for name, parts in topics.items()],
            }
            for group, topics in groups.items()
        ],
        require_stable=True,
    )
    return {g.group_id: (g.error_code, _partitions(g.topics)) for g in response.groups}


def offsets_partition_view(bootstrap: str) -> tuple[int, int, list[tuple[int, int]] | None]:
    """(high watermark, last stable offset, aborted transactions) of __consumer_offsets-0,
    from a read_committed Fetch and both ListOffsets isolation levels, which must agree."""
    fetched = fetch(bootstrap, OFFSETS_TOPIC, 0, READ_COMMITTED)
    assert list_offset(bootstrap, OFFSETS_TOPIC, LATEST, READ_UNCOMMITTED)[0] == (
        fetched.high_watermark
    )
    assert list_offset(bootstrap, OFFSETS_TOPIC, LATEST, READ_COMMITTED)[0] == (
        fetched.last_stable_offset
    )
    return fetched.high_watermark, fetched.last_stable_offset, aborted(fetched)


def pending_txn_commit(client: WireClient, txn_id: str, group: str, offset: int) -> tuple[int, int]:
    pid, epoch = init_ok(client, txn_id)
    assert add_offsets(client, txn_id, pid, epoch, group) == E.NO_ERROR
    assert txn_offset_commit(client, txn_id, pid, epoch, group, offset) == E.NO_ERROR
    return pid, epoch


def end_and_wait(
    client: WireClient, bootstrap: str, txn_id: str, pid: int, epoch: int, commit: bool
) -> None:
    assert end_txn(client, txn_id, pid, epoch, commit) == E.NO_ERROR
    final = "CompleteCommit" if commit else "CompleteAbort"
    wait_for(lambda: state_of(bootstrap, txn_id) == final, final)


# -- OffsetFetch require_stable -------------------------------------------------------------------


UNSTABLE = (E.UNSTABLE_OFFSET_COMMIT, -1, -1, "")


def test_require_stable_answers_unstable_for_pending_txn_offsets(
    broker: ThreadedBroker, client: WireClient
) -> None:
    group, other = unique("g"), unique("other")
    assert commit(client, group, {("t", 0): 3, ("t", 1): 4}) == {("t", 0): 0, ("t", 1): 0}
    assert commit(client, other, {("t", 0): 9}) == {("t", 0): 0}
    pid, epoch = pending_txn_commit(client, "tx", group, 5)

    assert offset_fetch(client, group, {"t": [0, 1]}) == (
        E.NO_ERROR,
        {("t", 0): UNSTABLE, ("t", 1): (E.NO_ERROR, 4, 3, "")},
    )
    assert offset_fetch(client, group, None) == (
        E.NO_ERROR,
        {("t", 0): UNSTABLE, ("t", 1): (E.NO_ERROR, 4, 3, "")},
    )
    # without require_stable (and before v7) the last committed offset comes back
    assert fetch_offsets(client, group, {"t": [0]})[("t", 0)][0] == 3
    assert fetch_offsets(client, group, {"t": [0]}, version=6)[("t", 0)][0] == 3

    assert batched_fetch(client, {group: {"t": [0, 1]}, other: None}) == {
        group: (E.NO_ERROR, {("t", 0): UNSTABLE, ("t", 1): (E.NO_ERROR, 4, 3, "")}),
        other: (E.NO_ERROR, {("t", 0): (E.NO_ERROR, 9, 3, "")}),
    }

    end_and_wait(client, broker.bootstrap_servers, "tx", pid, epoch, commit=True)
    assert offset_fetch(client, group, {"t": [0]}) == (
        E.NO_ERROR,
        {("t", 0): (E.NO_ERROR, 5, -1, "")},
    )


def test_aborted_txn_offsets_are_stable_again_with_the_old_offset(
    broker: ThreadedBroker, client: WireClient
) -> None:
    group = unique("g")
    assert commit(client, group, {("t", 0): 3}) == {("t", 0): 0}
    pid, epoch = pending_txn_commit(client, "tx", group, 5)
    assert batched_fetch(client, {group: {"t": [0]}}, version=9) == {
        group: (E.NO_ERROR, {("t", 0): UNSTABLE})
    }
    end_and_wait(client, broker.bootstrap_servers, "tx", pid, epoch, commit=False)
    assert offset_fetch(client, group, {"t": [0]}) == (
        E.NO_ERROR,
        {("t", 0): (E.NO_ERROR, 3, 3, "")},
    )


# -- __consumer_offsets: LSO and .txnindex ------------------------------------------------------


def test_txn_offset_commits_move_the_offsets_partition_lso(
    broker: ThreadedBroker, client: WireClient, data_dir: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    group = unique("g")
    assert commit(client, group, {("t", 1): 1}) == {("t", 1): 0}
    start = offsets_partition_view(bootstrap)[0]
    assert offsets_partition_view(bootstrap) == (start, start, [])

    pid, epoch = pending_txn_commit(client, "tx", group, 5)  # at `start`
    assert offsets_partition_view(bootstrap) == (start + 1, start, [])
    end_and_wait(client, bootstrap, "tx", pid, epoch, commit=False)  # ABORT at start + 1
    assert offsets_partition_view(bootstrap) == (start + 2, start + 2, [(pid, start)])

    assert add_offsets(client, "tx", pid, epoch, group) == E.NO_ERROR
    assert txn_offset_commit(client, "tx", pid, epoch, group, 7) == E.NO_ERROR  # start + 2
    assert offsets_partition_view(bootstrap) == (start + 3, start + 2, [(pid, start)])
    end_and_wait(client, bootstrap, "tx", pid, epoch, commit=True)  # COMMIT at start + 3
    settled = (start + 4, start + 4, [(pid, start)])
    assert offsets_partition_view(bootstrap) == settled
    assert (data_dir / f"{OFFSETS_TOPIC}-0" / f"{0:020d}.txnindex").stat().st_size == 34

    client.close()
    broker.restart()
    assert offsets_partition_view(broker.bootstrap_servers) == settled
    rebuild_from_the_log(broker, data_dir)
    assert offsets_partition_view(broker.bootstrap_servers) == settled
    with WireClient(broker.bootstrap_servers) as again:
        assert offset_fetch(again, group, {"t": [0, 1]})[1] == {
            ("t", 0): (E.NO_ERROR, 7, -1, ""),
            ("t", 1): (E.NO_ERROR, 1, 3, ""),
        }


def rebuild_from_the_log(broker: ThreadedBroker, data_dir: Path) -> None:
    """Restart as after a crash, without producer snapshots or `.txnindex` files."""
    broker.stop()
    partition_dir = data_dir / f"{OFFSETS_TOPIC}-0"
    for path in [*partition_dir.glob("*.snapshot"), *partition_dir.glob("*.txnindex")]:
        path.unlink()
    (data_dir / ".kafka_cleanshutdown").unlink()
    broker.start()


def test_pending_txn_offsets_stay_unstable_across_a_restart(
    broker: ThreadedBroker, client: WireClient
) -> None:
    bootstrap = broker.bootstrap_servers
    group = unique("g")
    pid, epoch = pending_txn_commit(client, "tx", group, 5)
    during = offsets_partition_view(bootstrap)
    assert during[1] == during[0] - 1
    client.close()
    broker.restart()
    assert offsets_partition_view(broker.bootstrap_servers) == during
    with WireClient(broker.bootstrap_servers) as again:
        assert offset_fetch(again, group, {"t": [0]})[1] == {("t", 0): UNSTABLE}
        end_and_wait(again, broker.bootstrap_servers, "tx", pid, epoch, commit=True)
        assert offset_fetch(again, group, {"t": [0]})[1] == {("t", 0): (E.NO_ERROR, 5, -1, "")}
    high_watermark = during[0] + 1
    assert offsets_partition_view(broker.bootstrap_servers) == (high_watermark, high_watermark, [])


# -- InitProducerId: Kafka's request checks come before the coordinator ---------------------------


@pytest.mark.parametrize("transactional_id", [None, "tx"])
@pytest.mark.parametrize(("producer_id", "epoch"), [(-1, 0), (5, -1)])
def test_producer_id_without_epoch_is_invalid(
    client: WireClient, transactional_id: str | None, producer_id: int, epoch: int
) -> None:
    response = client.call(
        ApiKey.InitProducerId,
        4,
        transactional_id=transactional_id,
        transaction_timeout_ms=60_000,
        producer_id=producer_id,
        producer_epoch=epoch,
    )
    assert (response.error_code, response.producer_id, response.producer_epoch) == (
        E.INVALID_REQUEST,
        -1,
        -1,
    )


def test_idempotent_producer_passing_its_id_gets_a_new_one(client: WireClient) -> None:
    def init(producer_id: int, epoch: int) -> tuple[int, int, int]:
        response = client.call(
            ApiKey.InitProducerId,
            4,
            transactional_id=None,
            transaction_timeout_ms=60_000,
            producer_id=producer_id,
            producer_epoch=epoch,
        )
        return response.error_code, response.producer_id, response.producer_epoch

    error, first, epoch = init(-1, -1)
    assert (error, epoch) == (E.NO_ERROR, 0)
    error, second, epoch = init(first, 0)
    assert (error, epoch) == (E.NO_ERROR, 0)
    assert second > first
    transactional_id, _ = init_ok(client, unique("tx"))
    assert transactional_id > second
