"""AddRaftVoter (80) and RemoveRaftVoter (81), KIP-853, with Java 4.3's `Admin.addRaftVoter`,
`removeRaftVoter` and `describeMetadataQuorum` in a three-node in-process cluster: refused
under kraft.version 0 (a static quorum), allowed once UpdateFeatures finalizes kraft.version 1,
and DescribeQuorum's voters, observers, nodes, leader and high watermark follow each change;
the request checks on the wire (cluster id, invalid voters, listeners, authorization); the
voter set kept across a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.cluster.quorum import directory_id, java_uuid
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker, KafkaCluster
from tests.clients.runner import run_client, run_ok
from tests.wire import WireClient

STATIC_DIRECTORY = java_uuid(uuid.UUID(int=0))


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        yield running


def java(cluster: KafkaCluster, op: str, **fields: Any) -> dict[str, Any]:
    return run_client("java-4.3", {"op": op, "bootstrap": cluster.address(1), **fields})


def quorum(cluster: KafkaCluster) -> dict[str, Any]:
    return run_ok("java-4.3", {"op": "describe_quorum_voters", "bootstrap": cluster.address(1)})


def replicas(states: list[dict[str, Any]]) -> dict[int, str]:
    return {state["replica_id"]: state["directory_id"] for state in states}


def endpoints(cluster: KafkaCluster, node: int) -> list[dict[str, Any]]:
    host, _, port = cluster.address(node).rpartition(":")
    return [{"name": "PLAINTEXT", "host": host, "port": int(port)}]


def upgrade_kraft_version(cluster: KafkaCluster) -> None:
    with WireClient(cluster.address(1)) as client:
        response = client.call(
            ApiKey.UpdateFeatures,
            1,
            timeout_ms=5000,
            feature_updates=[
                {"feature": "kraft.version", "max_version_level": 1, "upgrade_type": 1}
            ],
            validate_only=False,
        )
    assert response.error_code == ErrorCode.NO_ERROR, response.error_message


@pytest.mark.clients
def test_voters_are_added_and_removed_once_kraft_version_is_1(cluster: KafkaCluster) -> None:
    static = quorum(cluster)
    assert replicas(static["voters"]) == {1: STATIC_DIRECTORY}
    observers = replicas(static["observers"])
    assert sorted(observers) == [2, 3]
    refused = java(
        cluster,
        "add_raft_voter",
        voter_id=2,
        directory_id=observers[2],
        endpoints=endpoints(cluster, 2),
    )
    assert refused["error_name"] == "UNSUPPORTED_VERSION", refused
    assert "the kraft.version feature is 0" in refused["error"]

    upgrade_kraft_version(cluster)
    dynamic = quorum(cluster)
    [first] = dynamic["voters"]
    assert first["replica_id"] == 1 and first["directory_id"] != STATIC_DIRECTORY
    added = java(
        cluster,
        "add_raft_voter",
        voter_id=2,
        directory_id=observers[2],
        endpoints=endpoints(cluster, 2),
    )
    assert added["ok"], added

    grown = quorum(cluster)
    assert replicas(grown["voters"]) == {1: first["directory_id"], 2: observers[2]}
    assert replicas(grown["observers"]) == {3: observers[3]}
    assert [node["id"] for node in grown["nodes"]] == [1, 2]
    assert grown["nodes"][1]["endpoints"] == endpoints(cluster, 2)
    assert (grown["leader_id"], grown["leader_epoch"]) == (1, 1)
    duplicate = java(
        cluster,
        "add_raft_voter",
        voter_id=2,
        directory_id=observers[2],
        endpoints=endpoints(cluster, 2),
    )
    assert duplicate["error_name"] == "DUPLICATE_VOTER", duplicate

    removed = java(cluster, "remove_raft_voter", voter_id=1, directory_id=first["directory_id"])
    assert removed["ok"], removed
    shrunk = quorum(cluster)
    assert replicas(shrunk["voters"]) == {2: observers[2]}
    assert sorted(replicas(shrunk["observers"])) == [1, 3]
    # the leader left the voters: the remaining voter leads, in a new epoch
    assert (shrunk["leader_id"], shrunk["leader_epoch"]) == (2, 2)
    assert [voter["log_end_offset"] for voter in shrunk["voters"]] == [2]
    again = java(cluster, "remove_raft_voter", voter_id=1, directory_id=first["directory_id"])
    assert again["error_name"] == "VOTER_NOT_FOUND", again
    last = java(cluster, "remove_raft_voter", voter_id=2, directory_id=observers[2])
    assert last["error_name"] == "VOTER_NOT_FOUND", last


def add_voter(client: WireClient, **fields: Any) -> Any:
    request = {
        "cluster_id": None,
        "timeout_ms": 1000,
        "voter_id": 2,
        "voter_directory_id": uuid.uuid4(),
        "listeners": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092}],
        "ack_when_committed": True,
        **fields,
    }
    return client.call(ApiKey.AddRaftVoter, 1, **request)


def test_add_voter_request_checks_on_the_wire(cluster: KafkaCluster) -> None:
    upgrade_kraft_version(cluster)
    cluster_id = cluster.node(1).cluster_id
    with WireClient(cluster.address(1)) as client:
        wrong_cluster = add_voter(client, cluster_id="other")
        no_directory = add_voter(client, voter_directory_id=uuid.UUID(int=0))
        no_listener = add_voter(
            client, listeners=[{"name": "CONTROLLER", "host": "h", "port": 9093}]
        )
        lagging = add_voter(client, voter_directory_id=uuid.UUID(int=7))
        unknown_node = add_voter(client, voter_id=9, cluster_id=cluster_id)
        remove_missing = client.call(
            ApiKey.RemoveRaftVoter, 0, cluster_id=None, voter_id=3, voter_directory_id=uuid.uuid4()
        )
    assert (wrong_cluster.error_code, wrong_cluster.error_message) == (
        ErrorCode.INCONSISTENT_CLUSTER_ID,
        f'The given id "other" doesn\'t match the cluster id "{cluster_id}"',
    )
    assert (no_directory.error_code, no_directory.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Add voter request didn't include a valid voter",
    )
    assert (no_listener.error_code, no_listener.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Add voter request didn't include the endpoint (Endpoints(endpoints="
        "{ListenerName(CONTROLLER)=h/<unresolved>:9093})) for the default listener PLAINTEXT",
    )
    expected_key = f"ReplicaKey(id=2, directoryId=Optional[{java_uuid(uuid.UUID(int=7))}])"
    assert (lagging.error_code, lagging.error_message) == (
        ErrorCode.REQUEST_TIMED_OUT,
        f"Aborted add voter operation for {expected_key} since it is lagging behind",
    )
    assert unknown_node.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert remove_missing.error_code == ErrorCode.VOTER_NOT_FOUND


def test_voter_changes_need_alter_on_the_cluster() -> None:
    with (
        KafkaBroker(storage="memory", config=AUTHORIZER_CONFIG) as kafka,
        WireClient(kafka.bootstrap_servers) as client,
    ):
        added = add_voter(client)
        removed = client.call(
            ApiKey.RemoveRaftVoter, 0, cluster_id=None, voter_id=1, voter_directory_id=uuid.uuid4()
        )
    for response in (added, removed):
        assert (response.error_code, response.error_message) == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        )


def describe_voters(bootstrap: str) -> tuple[int, int, list[tuple[int, uuid.UUID]]]:
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.DescribeQuorum,
            2,
            topics=[{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}],
        )
    [partition] = response.topics[0].partitions
    voters = [(v.replica_id, v.replica_directory_id) for v in partition.current_voters]
    return partition.leader_epoch, partition.high_watermark, voters


def test_the_voter_set_survives_a_restart(tmp_path: Path) -> None:
    with KafkaCluster(nodes=3, data_dir=tmp_path / "kafka") as cluster:
        upgrade_kraft_version(cluster)
        cluster_id = cluster.node(1).cluster_id
        node_2 = directory_id(cluster_id, 2)
        with WireClient(cluster.address(1)) as client:
            added = add_voter(client, voter_directory_id=node_2, listeners=endpoints(cluster, 2))
        assert added.error_code == ErrorCode.NO_ERROR
        before = describe_voters(cluster.address(1))
        cluster.restart()
        assert describe_voters(cluster.address(1)) == before
    assert before == (1, 1, [(1, directory_id(cluster_id, 1)), (2, node_2)])
