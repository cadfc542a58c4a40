"""Errors for some entries of a request, the rest answered by the handler: pushed errors with a
topic/partition, and NOT_COORDINATOR per group or transactional id in a cluster (raw frames)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from minibroker.records.records import build_batch
from minibroker.testing import ApiKey, ErrorCode, KafkaBroker, KafkaCluster
from tests.wire import WireClient


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        running.create_topic("t", partitions=3)
        running.create_topic("u", partitions=1)
        yield running


def _produce(client: WireClient, partitions: dict[str, list[int]]) -> dict[tuple[str, int], Any]:
    batch = build_batch([(None, b"v", (), 1_700_000_000_000)])
    response = client.call(
        ApiKey.Produce,
        9,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            {"name": topic, "partition_data": [{"index": p, "records": batch} for p in indexes]}
            for topic, indexes in partitions.items()
        ],
    )
    return {
        (topic.name, p.index): p for topic in response.responses for p in topic.partition_responses
    }


def test_pushed_error_answers_only_the_named_partition_of_a_produce(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.Produce, ErrorCode.NOT_ENOUGH_REPLICAS, topic="t", partition=1)
    with WireClient(kafka.bootstrap_servers) as client:
        first = _produce(client, {"t": [0, 1, 2], "u": [0]})
        second = _produce(client, {"t": [1]})
    assert list(first) == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]  # the request's order
    assert {key: p.error_code for key, p in first.items()} == {
        ("t", 0): ErrorCode.NO_ERROR,
        ("t", 1): ErrorCode.NOT_ENOUGH_REPLICAS,
        ("t", 2): ErrorCode.NO_ERROR,
        ("u", 0): ErrorCode.NO_ERROR,
    }
    assert first[("t", 1)].base_offset == -1
    assert second[("t", 1)].error_code == ErrorCode.NO_ERROR
    assert kafka.end_offsets("t") == {0: 1, 1: 1, 2: 1}  # t-1 written by the second only
    recorded = kafka.requests(ApiKey.Produce)[0]
    assert recorded.partitions() == {("t", 0), ("t", 1), ("t", 2), ("u", 0)}  # as sent


def test_pushes_for_several_partitions_apply_to_one_request(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.Produce, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="t", partition=0)
    kafka.push_errors(ApiKey.Produce, ErrorCode.KAFKA_STORAGE_ERROR, topic="u")
    with WireClient(kafka.bootstrap_servers) as client:
        answered = _produce(client, {"t": [0, 2], "u": [0]})
        only_errors = _produce(client, {"t": [0]})  # nothing pending any more
    assert {key: p.error_code for key, p in answered.items()} == {
        ("t", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ("t", 2): ErrorCode.NO_ERROR,
        ("u", 0): ErrorCode.KAFKA_STORAGE_ERROR,
    }
    assert only_errors[("t", 0)].error_code == ErrorCode.NO_ERROR
    assert kafka.end_offsets("u") == {0: 0}


def test_a_request_whose_every_partition_matches_is_not_handled(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.Produce, ErrorCode.NOT_ENOUGH_REPLICAS, topic="t")
    with WireClient(kafka.bootstrap_servers) as client:
        answered = _produce(client, {"t": [0, 1]})
    assert [p.error_code for p in answered.values()] == [ErrorCode.NOT_ENOUGH_REPLICAS] * 2
    assert kafka.end_offsets("t") == {0: 0, 1: 0, 2: 0}


def _fetch(client: WireClient, partitions: list[int], max_wait_ms: int) -> dict[int, Any]:
    response = client.call(
        ApiKey.Fetch,
        12,
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition": p,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                    for p in partitions
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id="",
    )
    return {p.partition_index: p for p in response.responses[0].partitions}


def test_pushed_error_answers_only_the_named_partition_of_a_fetch(kafka: KafkaBroker) -> None:
    kafka.produce("t", b"kept", partition=0)
    kafka.push_errors(ApiKey.Fetch, ErrorCode.NOT_LEADER_OR_FOLLOWER, partition=2)
    with WireClient(kafka.bootstrap_servers) as client:
        # partition 1 is empty: the error answers at once instead of a minute's long poll
        # (the client gives up after 10 s).
        answered = _fetch(client, [0, 1, 2], max_wait_ms=60_000)
    assert list(answered) == [0, 1, 2]
    assert answered[0].error_code == ErrorCode.NO_ERROR
    assert answered[0].high_watermark == 1
    assert b"kept" in bytes(answered[0].records)
    assert answered[1].error_code == ErrorCode.NO_ERROR
    assert answered[2].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert answered[2].high_watermark == -1


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        running.create_topic("t", partitions=1)
        running.set_coordinator(1)
        running.set_coordinator(2, group="elsewhere")
        running.set_coordinator(3, transactional_id="tx-elsewhere")
        yield running


def test_batched_offset_fetch_answers_not_coordinator_per_group(cluster: KafkaCluster) -> None:
    commit = {
        "group_id": "here",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7}]}],
    }
    groups = [
        {"group_id": name, "member_id": None, "member_epoch": -1, "topics": None}
        for name in ["elsewhere", "here"]
    ]
    with WireClient(cluster.address(1)) as client:
        assert client.call(ApiKey.OffsetCommit, 8, **commit).topics[0].partitions[0].error_code == 0
        fetched = client.call(ApiKey.OffsetFetch, 8, groups=groups, require_stable=False)
    assert [(g.group_id, g.error_code) for g in fetched.groups] == [
        ("elsewhere", ErrorCode.NOT_COORDINATOR),
        ("here", ErrorCode.NO_ERROR),
    ]
    assert fetched.groups[0].topics == []
    assert fetched.groups[1].topics[0].partitions[0].committed_offset == 7
    with WireClient(cluster.address(2)) as client:
        fetched = client.call(ApiKey.OffsetFetch, 8, groups=groups, require_stable=False)
    assert [(g.group_id, g.error_code) for g in fetched.groups] == [
        ("elsewhere", ErrorCode.NO_ERROR),
        ("here", ErrorCode.NOT_COORDINATOR),
    ]


def test_describe_and_delete_groups_answer_not_coordinator_per_group(
    cluster: KafkaCluster,
) -> None:
    with WireClient(cluster.address(1)) as client:
        described = client.call(
            ApiKey.DescribeGroups,
            5,
            groups=["elsewhere", "here"],
            include_authorized_operations=False,
        )
        deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["here", "elsewhere"])
    assert [(g.group_id, g.error_code) for g in described.groups] == [
        ("elsewhere", ErrorCode.NOT_COORDINATOR),
        ("here", ErrorCode.NO_ERROR),
    ]
    assert described.groups[1].group_state == "Dead"
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("here", ErrorCode.GROUP_ID_NOT_FOUND),
        ("elsewhere", ErrorCode.NOT_COORDINATOR),
    ]


def test_transaction_requests_answer_not_coordinator_per_transactional_id(
    cluster: KafkaCluster,
) -> None:
    with WireClient(cluster.address(1)) as client:
        added = client.call(
            ApiKey.AddPartitionsToTxn,
            3,
            v3_and_below_transactional_id="tx-elsewhere",
            v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[{"name": "t", "partitions": [0]}],
        )
        described = client.call(
            ApiKey.DescribeTransactions, 0, transactional_ids=["tx-elsewhere", "tx-here"]
        )
    results = added.results_by_topic_v3_and_below
    assert [
        (r.name, [(p.partition_index, p.partition_error_code) for p in r.results_by_partition])
        for r in results
    ] == [("t", [(0, ErrorCode.NOT_COORDINATOR)])]
    assert [(s.transactional_id, s.error_code) for s in described.transaction_states] == [
        ("tx-elsewhere", ErrorCode.NOT_COORDINATOR),
        ("tx-here", ErrorCode.TRANSACTIONAL_ID_NOT_FOUND),
    ]
    with WireClient(cluster.address(3)) as client:
        added = client.call(
            ApiKey.AddPartitionsToTxn,
            3,
            v3_and_below_transactional_id="tx-elsewhere",
            v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=0,
            v3_and_below_topics=[{"name": "t", "partitions": [0]}],
        )
    error = added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    assert error != ErrorCode.NOT_COORDINATOR  # the coordinator handles it
