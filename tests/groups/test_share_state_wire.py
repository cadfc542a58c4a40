"""The share-coordinator RPCs (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary, keys 83-87) over raw requests, with the cases of Kafka 4.3's
`ShareCoordinatorShardTest`, `ShareCoordinatorServiceTest` and `PersisterStateBatchCombinerTest`,
and their state being the one ShareFetch and ShareAcknowledge keep."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import AUTHORIZER_CONFIG, KafkaBroker, KafkaCluster
from tests.groups.test_share_wire_fetch import (
    ACCEPT,
    REJECT,
    RELEASE,
    acquired,
    new_topic,
    produce,
    share_acknowledge,
    share_fetch,
)
from tests.wire import WireClient

E = ErrorCode
AVAILABLE, ACQUIRED, ACKED, ARCHIVED = 0, 1, 2, 4
NEGATIVE_PARTITION = "The partition id cannot be a negative number."
UNKNOWN_TOPIC = "This server does not host this topic-partition."
Batch = tuple[int, int, int, int]  # first offset, last offset, delivery state, delivery count


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as running:
        yield running


@pytest.fixture
def client(broker: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(broker.bootstrap_servers) as wire:
        yield wire


_groups = iter(range(1_000_000))


def new_group() -> str:
    return f"state-{next(_groups)}"


def topic(broker: KafkaBroker, client: WireClient) -> uuid.UUID:
    return new_topic(broker, client)[1]


# ---- the RPCs ------------------------------------------------------------------------------


def _request(group: str, topic_id: uuid.UUID, partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"group_id": group, "topics": [{"topic_id": topic_id, "partitions": partitions}]}


def initialize(
    client: WireClient,
    group: str,
    topic_id: uuid.UUID,
    start: int,
    state_epoch: int = 0,
    p: int = 0,
) -> Any:
    partition = {"partition": p, "state_epoch": state_epoch, "start_offset": start}
    return client.call(
        ApiKey.InitializeShareGroupState, 0, **_request(group, topic_id, [partition])
    )


def read(client: WireClient, group: str, topic_id: uuid.UUID, leader: int = -1, p: int = 0) -> Any:
    partition = {"partition": p, "leader_epoch": leader}
    return client.call(ApiKey.ReadShareGroupState, 0, **_request(group, topic_id, [partition]))


def write(
    client: WireClient,
    group: str,
    topic_id: uuid.UUID,
    start: int,
    batches: list[Batch],
    *,
    state_epoch: int = 0,
    leader: int = 0,
    complete: int = -1,
    p: int = 0,
    version: int = 1,
) -> Any:
    partition = {
        "partition": p,
        "state_epoch": state_epoch,
        "leader_epoch": leader,
        "start_offset": start,
        "delivery_complete_count": complete,
        "state_batches": [
            {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
            for f, last, s, c in batches
        ],
    }
    return client.call(
        ApiKey.WriteShareGroupState, version, **_request(group, topic_id, [partition])
    )


def delete(client: WireClient, group: str, topic_id: uuid.UUID, p: int = 0) -> Any:
    partitions = [{"partition": p}]
    return client.call(ApiKey.DeleteShareGroupState, 0, **_request(group, topic_id, partitions))


def summary(
    client: WireClient, group: str, topic_id: uuid.UUID, p: int = 0, version: int = 1
) -> Any:
    partition = {"partition": p, "leader_epoch": 0}
    request = _request(group, topic_id, [partition])
    return client.call(ApiKey.ReadShareGroupStateSummary, version, **request)


def only(response: Any) -> Any:
    [result] = response.results
    [partition] = result.partitions
    return partition


def error(response: Any) -> tuple[int, str | None]:
    partition = only(response)
    return partition.error_code, partition.error_message


def state(response: Any) -> tuple[int, int, list[Batch]]:
    """A successful read: state epoch, start offset, batches."""
    partition = only(response)
    assert (partition.error_code, partition.error_message) == (E.NO_ERROR, None)
    batches = [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in partition.state_batches
    ]
    return partition.state_epoch, partition.start_offset, batches


def summarized(response: Any) -> tuple[int, int, int, int]:
    """A successful summary: state epoch, leader epoch, start offset, delivery complete count."""
    p = only(response)
    assert p.error_code == E.NO_ERROR
    return p.state_epoch, p.leader_epoch, p.start_offset, p.delivery_complete_count


OK = (E.NO_ERROR, None)


# ---- uninitialized share partitions ---------------------------------------------------------


def test_reading_an_uninitialized_share_partition_is_invalid_request(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic_id = topic(broker, client)
    answer = read(client, new_group(), topic_id, leader=1)
    assert [r.topic_id for r in answer.results] == [topic_id]
    partition = only(answer)
    assert (partition.partition, partition.error_code, partition.error_message) == (
        0,
        E.INVALID_REQUEST,
        "Read operation on uninitialized share partition not allowed.",
    )
    # Kafka's error entry keeps the fields' defaults.
    assert (partition.state_epoch, partition.start_offset, partition.state_batches) == (0, 0, [])


def test_writing_an_uninitialized_share_partition_is_invalid_request(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic_id = new_group(), topic(broker, client)
    answer = write(client, group, topic_id, 0, [(0, 10, AVAILABLE, 1)], complete=11)
    assert error(answer) == (
        E.INVALID_REQUEST,
        "Write operation on uninitialized share partition not allowed.",
    )
    assert summarized(summary(client, group, topic_id)) == (0, 0, -1, -1)  # nothing written


def test_the_summary_of_an_uninitialized_share_partition_is_no_error(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic_id = new_group(), topic(broker, client)
    assert summarized(summary(client, group, topic_id)) == (0, 0, -1, -1)
    v0 = only(summary(client, group, topic_id, version=0))
    assert (v0.error_code, v0.start_offset, v0.delivery_complete_count) == (0, -1, -1)


def test_requests_without_topics_partitions_or_group_id_answer_nothing(
    broker: KafkaBroker, client: WireClient
) -> None:
    topic_id = topic(broker, client)
    initialized = {"partition": 0, "state_epoch": 0, "start_offset": 0}
    calls: list[tuple[ApiKey, int, dict[str, Any]]] = [
        (ApiKey.InitializeShareGroupState, 0, initialized),
        (ApiKey.ReadShareGroupState, 0, {"partition": 0, "leader_epoch": 0}),
        (ApiKey.WriteShareGroupState, 1, {"partition": 0, "state_epoch": 0, "leader_epoch": 0,
                                          "start_offset": 0, "state_batches": []}),
        (ApiKey.DeleteShareGroupState, 0, {"partition": 0}),
        (ApiKey.ReadShareGroupStateSummary, 1, {"partition": 0, "leader_epoch": 0}),
    ]  # fmt: skip
    for key, version, partition in calls:
        no_topics = client.call(key, version, group_id="g", topics=[])
        no_partitions = client.call(key, version, **_request("g", topic_id, []))
        no_group = client.call(key, version, **_request("", topic_id, [partition]))
        assert [no_topics.results, no_partitions.results, no_group.results] == [[], [], []], key


def test_a_negative_partition_is_invalid_request(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    answers = [
        initialize(client, group, topic_id, 0, p=-1),
        read(client, group, topic_id, p=-1),
        write(client, group, topic_id, 0, [], p=-1),
        delete(client, group, topic_id, p=-1),
        summary(client, group, topic_id, p=-1),
    ]
    assert [error(a) for a in answers] == [(E.INVALID_REQUEST, NEGATIVE_PARTITION)] * 5
    assert [only(a).partition for a in answers] == [-1] * 5


def test_unknown_topics_and_partitions(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    unknown = (E.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC)
    for target, p in ((uuid.uuid4(), 0), (topic_id, 1)):  # an unknown topic; a partition past it
        assert error(initialize(client, group, target, 0, p=p)) == unknown
        assert error(delete(client, group, target, p=p)) == unknown
        assert error(summary(client, group, target, p=p)) == unknown
        # Read and Write look at the state first: there is none.
        assert error(read(client, group, target, p=p))[0] == E.INVALID_REQUEST
        assert error(write(client, group, target, 0, [], p=p))[0] == E.INVALID_REQUEST


# ---- initialize, read, write, delete ----------------------------------------------------------


def test_initialize_then_read_and_summary(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    assert error(initialize(client, group, topic_id, 10, state_epoch=5)) == OK
    assert state(read(client, group, topic_id)) == (5, 10, [])
    assert summarized(summary(client, group, topic_id)) == (5, 0, 10, 0)
    # Initialized without a start offset: -1, and the delivery complete count unknown.
    other = new_group()
    assert error(initialize(client, other, topic_id, -1)) == OK
    assert state(read(client, other, topic_id)) == (0, -1, [])
    assert summarized(summary(client, other, topic_id)) == (0, 0, -1, -1)


def test_writes_combine_state_batches_as_kafkas_persister(
    broker: KafkaBroker, client: WireClient
) -> None:
    group, topic_id = new_group(), topic(broker, client)
    initialize(client, group, topic_id, 0)
    # testSubsequentWriteStateSnapshotEpochUpdatesSuccessfully: contiguous batches of one state
    # and delivery count become one.
    assert error(write(client, group, topic_id, 0, [(0, 10, AVAILABLE, 1)], complete=11)) == OK
    assert error(write(client, group, topic_id, 0, [(11, 20, AVAILABLE, 1)], complete=21)) == OK
    assert state(read(client, group, topic_id)) == (0, 0, [(0, 20, AVAILABLE, 1)])
    assert summarized(summary(client, group, topic_id)) == (0, 0, 0, 21)
    # A higher delivery count wins the offsets both batches cover, whichever comes first.
    write(client, group, topic_id, -1, [(5, 8, AVAILABLE, 2)])
    write(client, group, topic_id, -1, [(0, 6, AVAILABLE, 1)])
    assert state(read(client, group, topic_id))[2] == [
        (0, 4, AVAILABLE, 1),
        (5, 8, AVAILABLE, 2),
        (9, 20, AVAILABLE, 1),
    ]


def test_non_sequential_batch_updates_lose_no_batch(
    broker: KafkaBroker, client: WireClient
) -> None:
    """Kafka's testNonSequentialBatchUpdates: the start offset moves past batch 1 while batch 3
    is acknowledged, and batch 2 (still in flight) is kept."""
    group, topic_id = new_group(), topic(broker, client)
    initialize(client, group, topic_id, 0)
    write(
        client,
        group,
        topic_id,
        100,
        [(100, 109, ACQUIRED, 1), (110, 119, ACQUIRED, 2), (120, 129, ACQUIRED, 0)],
        complete=0,
    )
    write(client, group, topic_id, -1, [(100, 109, ACKED, 1)], complete=10)
    write(client, group, topic_id, 110, [(120, 129, ACKED, 1)], complete=10)
    assert state(read(client, group, topic_id)) == (
        0,
        110,
        [(110, 119, ACQUIRED, 2), (120, 129, ACKED, 1)],
    )
    assert summarized(summary(client, group, topic_id))[2:] == (110, 10)


def test_fenced_leader_epochs(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    initialize(client, group, topic_id, 0)
    fenced = (
        E.FENCED_LEADER_EPOCH,
        "The leader epoch in the request is older than the epoch on the broker.",
    )
    assert state(read(client, group, topic_id, leader=5)) == (0, 0, [])  # epoch 5 recorded
    assert summarized(summary(client, group, topic_id))[1] == 5
    assert error(read(client, group, topic_id, leader=3)) == fenced
    assert error(write(client, group, topic_id, 0, [(0, 1, ACKED, 1)], leader=4)) == fenced
    assert error(read(client, group, topic_id, leader=-1)) == OK  # -1: not checked
    assert error(write(client, group, topic_id, 0, [(0, 1, ACKED, 1)], leader=-1)) == OK
    assert error(write(client, group, topic_id, 0, [(2, 3, ACKED, 1)], leader=6)) == OK
    assert error(read(client, group, topic_id, leader=5)) == fenced
    assert state(read(client, group, topic_id, leader=6))[2] == [(0, 3, ACKED, 1)]


def test_fenced_state_epochs(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    fenced = (
        E.FENCED_STATE_EPOCH,
        "The share coordinator rejected the request because the share-group state epoch did not "
        "match.",
    )
    initialize(client, group, topic_id, 0, state_epoch=1)
    assert (
        error(write(client, group, topic_id, 0, [(11, 20, AVAILABLE, 1)], state_epoch=0)) == fenced
    )
    assert error(initialize(client, group, topic_id, 0, state_epoch=0)) == fenced
    assert state(read(client, group, topic_id)) == (1, 0, [])  # nothing changed
    # A new state epoch initializes the share partition afresh.
    write(client, group, topic_id, 0, [(0, 4, ACKED, 1)], state_epoch=1)
    assert error(initialize(client, group, topic_id, 7, state_epoch=2)) == OK
    assert state(read(client, group, topic_id)) == (2, 7, [])


def test_delete_uninitializes(broker: KafkaBroker, client: WireClient) -> None:
    group, topic_id = new_group(), topic(broker, client)
    assert error(delete(client, group, topic_id)) == OK  # no state: nothing to delete
    initialize(client, group, topic_id, 3, state_epoch=4)
    read(client, group, topic_id, leader=9)
    assert error(delete(client, group, topic_id)) == OK
    assert error(read(client, group, topic_id))[0] == E.INVALID_REQUEST
    assert summarized(summary(client, group, topic_id)) == (0, 0, -1, -1)
    # The epochs went with the state: an older state epoch initializes again.
    assert error(initialize(client, group, topic_id, 0, state_epoch=1)) == OK
    assert error(read(client, group, topic_id, leader=1)) == OK


def test_results_are_one_per_topic_in_request_order(
    broker: KafkaBroker, client: WireClient
) -> None:
    group = new_group()
    first, second = topic(broker, client), topic(broker, client)
    partition = {"partition": 0, "state_epoch": 0, "start_offset": 0}
    answer = client.call(
        ApiKey.InitializeShareGroupState,
        0,
        group_id=group,
        topics=[
            {"topic_id": second, "partitions": [partition]},
            {"topic_id": first, "partitions": [partition, {**partition, "partition": 3}]},
        ],
    )
    assert [
        (r.topic_id, [(p.partition, p.error_code) for p in r.partitions]) for r in answer.results
    ] == [
        (second, [(0, E.NO_ERROR)]),
        (first, [(0, E.NO_ERROR), (3, E.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]


# ---- one state with ShareFetch and ShareAcknowledge -------------------------------------------


def test_a_share_consumer_reads_from_the_start_offset_initialized(
    broker: KafkaBroker, client: WireClient
) -> None:
    group = new_group()
    name, topic_id = new_topic(broker, client)
    produce(broker, name, 10)
    assert error(initialize(client, group, topic_id, 6, state_epoch=1)) == OK
    assert acquired(share_fetch(client, "m1", 0, topic_id, group=group)) == [(6, 9, 1)]


def test_a_share_consumer_gets_what_was_written(broker: KafkaBroker, client: WireClient) -> None:
    group = new_group()
    name, topic_id = new_topic(broker, client)
    produce(broker, name, 8)
    initialize(client, group, topic_id, 0)
    # Offsets 2-3 acknowledged, 4 archived, 5 available after two deliveries, the rest new.
    batches = [(2, 3, ACKED, 1), (4, 4, ARCHIVED, 1), (5, 5, AVAILABLE, 2)]
    assert error(write(client, group, topic_id, 2, batches, complete=3)) == OK
    fetched = share_fetch(client, "m1", 0, topic_id, group=group)
    assert acquired(fetched) == [(5, 5, 3)]  # the available record comes first, redelivered
    assert acquired(share_fetch(client, "m1", 1, group=group)) == [(6, 7, 1)]


def test_share_fetch_and_acknowledge_are_read_through_the_rpcs(
    broker: KafkaBroker, client: WireClient
) -> None:
    group = new_group()
    name, topic_id = new_topic(broker, client)
    share_fetch(client, "m1", 0, topic_id, group=group)  # starts at the log end, 0
    produce(broker, name, 6)
    assert acquired(share_fetch(client, "m1", 1, group=group)) == [(0, 5, 1)]
    acks = [(0, 5, [RELEASE, ACCEPT, REJECT, RELEASE, RELEASE, RELEASE])]
    assert share_acknowledge(client, "m1", 2, topic_id, acks, group=group).error_code == 0
    # Offset 0 is available again, so the start offset stays 0; 1 and 2 are complete.
    assert state(read(client, group, topic_id)) == (
        0,
        0,
        [(0, 0, AVAILABLE, 1), (1, 1, ACKED, 1), (2, 2, ARCHIVED, 1), (3, 5, AVAILABLE, 1)],
    )
    assert summarized(summary(client, group, topic_id))[2:] == (0, 2)
    described = client.call(
        ApiKey.DescribeShareGroupOffsets,
        1,
        groups=[{"group_id": group, "topics": [{"topic_name": name, "partitions": [0]}]}],
    )
    assert described.groups[0].topics[0].partitions[0].start_offset == 0
    # Acquired records read as available; accepting the front moves the start offset.
    assert acquired(share_fetch(client, "m1", 3, group=group)) == [(0, 0, 2), (3, 5, 2)]
    share_acknowledge(client, "m1", 4, topic_id, [(0, 0, [ACCEPT])], group=group)
    assert state(read(client, group, topic_id))[1:] == (3, [(3, 5, AVAILABLE, 2)])
    # Deleted through the RPC: the next fetch starts afresh (latest: the log end).
    assert error(delete(client, group, topic_id)) == OK
    assert acquired(share_fetch(client, "m2", 0, topic_id, group=group)) == []
    assert summarized(summary(client, group, topic_id))[2:] == (6, 0)


def test_written_state_survives_a_restart(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path / "data") as running:
        with WireClient(running.bootstrap_servers) as client:
            topic_id = topic(running, client)
            initialize(client, "g", topic_id, 0, state_epoch=3)
            batches = [(4, 6, ACKED, 1), (7, 9, AVAILABLE, 2)]
            write(client, "g", topic_id, 4, batches, state_epoch=3, leader=2, complete=3)
        running.restart()
        with WireClient(running.bootstrap_servers) as client:
            assert state(read(client, "g", topic_id)) == (
                3,
                4,
                [(4, 6, ACKED, 1), (7, 9, AVAILABLE, 2)],
            )
            assert summarized(summary(client, "g", topic_id)) == (3, 2, 4, 3)
            assert error(read(client, "g", topic_id, leader=1))[0] == E.FENCED_LEADER_EPOCH


# ---- authorization, routing ----------------------------------------------------------------


def test_the_rpcs_need_cluster_action() -> None:
    with KafkaBroker(config=AUTHORIZER_CONFIG) as secured:
        secured.create_topic("t")
        with WireClient(secured.bootstrap_servers) as client:
            topic_id = uuid.uuid4()
            denied = (E.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
            answers = [
                initialize(client, "g", topic_id, 0),
                read(client, "g", topic_id),
                write(client, "g", topic_id, 0, []),
                delete(client, "g", topic_id),
                summary(client, "g", topic_id),
            ]
            assert [error(a) for a in answers] == [denied] * 5
            # Even a request that would answer nothing names every partition.
            empty_group = client.call(
                ApiKey.DeleteShareGroupState, 0, **_request("", topic_id, [{"partition": 2}])
            )
            assert error(empty_group) == denied
            secured.add_acl("User:ANONYMOUS", "CLUSTER_ACTION", cluster=True)
            assert error(delete(client, "g", topic_id))[0] == E.UNKNOWN_TOPIC_OR_PARTITION


def share_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    encoded = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
    return f"{group}:{encoded}:{partition}"


def test_find_coordinator_names_the_share_coordinator(
    broker: KafkaBroker, client: WireClient
) -> None:
    key = share_key("g", uuid.uuid4(), 0)
    bad = [
        "",
        "g",
        "g:x:0",
        f"g:{uuid.uuid4()}:0",
        " :AAAAAAAAAAAAAAAAAAAAAA:0",
        key + "x",
        key + ":1",
    ]
    found = client.call(ApiKey.FindCoordinator, 6, key_type=2, coordinator_keys=[key, *bad])
    answers = [(c.key, c.error_code, c.node_id) for c in found.coordinators]
    named = found.coordinators[0]
    assert (named.error_code, f"{named.host}:{named.port}") == (0, broker.bootstrap_servers)
    assert answers[1:] == [(k, E.INVALID_REQUEST, -1) for k in bad]
    old = client.call(ApiKey.FindCoordinator, 5, key_type=2, coordinator_keys=[key])
    assert old.coordinators[0].error_code == E.INVALID_REQUEST  # SHARE is v6+


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(nodes=3, storage="memory") as running:
        yield running


def test_other_nodes_answer_not_coordinator(cluster: KafkaCluster) -> None:
    cluster.set_coordinator(2)
    cluster.create_topic("routed")
    with WireClient(cluster.address(1)) as client:
        topic_id = new_topic_id(client, "routed")
        found = client.call(
            ApiKey.FindCoordinator, 6, key_type=2, coordinator_keys=[share_key("g", topic_id, 0)]
        )
        assert found.coordinators[0].node_id == 2
        answers = [
            (initialize(client, "g", topic_id, 0), "initialize share group state"),
            (read(client, "g", topic_id), "read share group state"),
            (write(client, "g", topic_id, 0, []), "write share group state"),
            (delete(client, "g", topic_id), "delete share group state"),
            (summary(client, "g", topic_id), "read share group state summary"),
        ]
        for answer, action in answers:
            assert error(answer) == (
                E.NOT_COORDINATOR,
                f"Unable to {action}: This is not the correct coordinator.",
            )
    with WireClient(cluster.address(2)) as client:
        assert error(initialize(client, "g", topic_id, 5)) == OK
        assert state(read(client, "g", topic_id)) == (0, 5, [])


def new_topic_id(client: WireClient, name: str) -> uuid.UUID:
    metadata = client.call(
        ApiKey.Metadata,
        12,
        topics=[{"name": name, "topic_id": uuid.UUID(int=0)}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return uuid.UUID(str(metadata.topics[0].topic_id))


def test_older_releases_do_not_advertise_the_share_coordinator_rpcs() -> None:
    keys = {83, 84, 85, 86, 87}
    advertised: dict[str, dict[int, tuple[int, int]]] = {}
    for release in ("4.0", "4.1", "4.3"):
        config = {"minibroker.emulate.kafka.version": release}
        with KafkaBroker(config=config) as running, WireClient(running.bootstrap_servers) as client:
            versions = client.call(
                ApiKey.ApiVersions, 3, client_software_name="t", client_software_version="1"
            )
            advertised[release] = {
                k.api_key: (k.min_version, k.max_version)
                for k in versions.api_keys
                if k.api_key in keys
            }
    assert advertised["4.0"] == {}
    assert advertised["4.1"] == {83: (0, 0), 84: (0, 0), 85: (0, 0), 86: (0, 0), 87: (0, 0)}
    assert advertised["4.3"] == {83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1)}


def test_share_group_offsets_admin_acts_on_the_same_state(
    broker: KafkaBroker, client: WireClient
) -> None:
    group = new_group()
    name, topic_id = new_topic(broker, client)

    def alter(start: int) -> int:
        answer = client.call(
            ApiKey.AlterShareGroupOffsets,
            0,
            group_id=group,
            topics=[
                {"topic_name": name, "partitions": [{"partition_index": 0, "start_offset": start}]}
            ],
        )
        return int(answer.responses[0].partitions[0].error_code)

    assert error(initialize(client, group, topic_id, -1, state_epoch=4)) == OK
    assert alter(7) == E.NO_ERROR
    assert state(read(client, group, topic_id))[1:] == (7, [])
    assert summarized(summary(client, group, topic_id))[2:] == (7, 0)
    # Altered to -1: the state is deleted, initialized or not.
    assert alter(-1) == E.NO_ERROR
    assert error(read(client, group, topic_id))[0] == E.INVALID_REQUEST
    initialize(client, group, topic_id, -1, state_epoch=4)
    assert alter(-1) == E.NO_ERROR
    assert error(read(client, group, topic_id))[0] == E.INVALID_REQUEST
