"""Group membership writes answer once the ISR has them, as Kafka 4.3's coordinator runtime
answers a write operation only after its records are committed: a KIP-848 or share-group
heartbeat that wrote the member's records, a static member's rejoin, OffsetDelete's and
DeleteGroups' tombstones answer COORDINATOR_NOT_AVAILABLE when the followers never get them.
A request that wrote nothing is not an acks=all append: it goes on while the ISR is under
min.insync.replicas."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from tests.groups.wirehelp import join, sync
from tests.replication.test_coordinators import CONFIG, INTERNAL_PARTITIONS, OFFSETS, TOPIC
from tests.replication.test_coordinators import _commit as commit
from tests.wire import WireClient


@pytest.fixture
def cluster() -> Iterator[KafkaCluster]:
    config = {**CONFIG, "group.initial.rebalance.delay.ms": 0}
    with KafkaCluster(nodes=3, storage="memory", config=config) as running:
        running.create_topic(TOPIC, partitions=1, replication_factor=3)
        with WireClient(running.address(1)) as client:
            client.call(ApiKey.FindCoordinator, 4, key_type=0, coordinator_keys=["x"])
        running.wait_in_sync()
        yield running


def heartbeat(client: WireClient, group: str, member_id: str, epoch: int) -> Any:
    return client.call(
        ApiKey.ConsumerGroupHeartbeat,
        0,
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=[TOPIC] if epoch == 0 else None,
        server_assignor=None,
        topic_partitions=[] if epoch == 0 else None,
    )


def offset_delete(client: WireClient, group: str) -> int:
    answer = client.call(
        ApiKey.OffsetDelete,
        0,
        group_id=group,
        topics=[{"name": TOPIC, "partitions": [{"partition_index": 0}]}],
    )
    return int(answer.error_code)


def delete_group(client: WireClient, group: str) -> int:
    answer = client.call(ApiKey.DeleteGroups, 2, groups_names=[group])
    return int(answer.results[0].error_code)


def unreplicated(cluster: KafkaCluster, group: str, write: Callable[[WireClient], int]) -> int:
    """`write`'s error when sent to the group's coordinator while its followers fetch
    nothing of the group's `__consumer_offsets` partition."""
    index = partition_for(group, INTERNAL_PARTITIONS)
    leader = cluster.leader(OFFSETS, index)
    followers = [node for node in cluster.node_ids if node != leader]
    for node in followers:
        cluster.pause_replication(node, OFFSETS, index)
    try:
        with WireClient(cluster.address(leader)) as client:
            return write(client)
    finally:
        for node in followers:
            cluster.resume_replication(node, OFFSETS, index)


def test_a_consumer_group_join_the_isr_did_not_get_is_not_acknowledged(
    cluster: KafkaCluster,
) -> None:
    error = unreplicated(cluster, "joiners", lambda c: heartbeat(c, "joiners", "m", 0).error_code)
    assert error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_share_group_join_the_isr_did_not_get_is_not_acknowledged(
    cluster: KafkaCluster,
) -> None:
    def join_share_group(client: WireClient) -> int:
        answer = client.call(
            ApiKey.ShareGroupHeartbeat,
            1,
            group_id="sharers",
            member_id="m",
            member_epoch=0,
            rack_id=None,
            subscribed_topic_names=[TOPIC],
        )
        return int(answer.error_code)

    error = unreplicated(cluster, "sharers", join_share_group)
    assert error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_static_member_rejoin_the_isr_did_not_get_is_not_acknowledged(
    cluster: KafkaCluster,
) -> None:
    """A static member back under a new member id in a Stable group: Kafka writes the group
    with the new id and answers the join once that is committed."""
    group = "statics"
    with WireClient(cluster.address(cluster.coordinator(group))) as client:
        first = join(client, group, instance_id="only")
        assert first.error_code == ErrorCode.NO_ERROR
        synced = sync(client, group, first.member_id, first.generation_id, {first.member_id: b""})
        assert synced.error_code == ErrorCode.NO_ERROR

    def rejoin(client: WireClient) -> int:
        return int(join(client, group, instance_id="only").error_code)

    assert unreplicated(cluster, group, rejoin) == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_offset_delete_the_isr_did_not_get_is_not_acknowledged(cluster: KafkaCluster) -> None:
    group = "pruned"
    assert commit(cluster, cluster.coordinator(group), group, 4) == ErrorCode.NO_ERROR
    error = unreplicated(cluster, group, lambda client: offset_delete(client, group))
    assert error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_group_deletion_the_isr_did_not_get_is_not_acknowledged(cluster: KafkaCluster) -> None:
    group = "doomed"
    assert commit(cluster, cluster.coordinator(group), group, 4) == ErrorCode.NO_ERROR
    error = unreplicated(cluster, group, lambda client: delete_group(client, group))
    assert error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_a_heartbeat_that_writes_nothing_goes_on_under_min_isr(cluster: KafkaCluster) -> None:
    group = "steady"
    leader = cluster.coordinator(group)
    with WireClient(cluster.address(leader)) as client:
        joined = heartbeat(client, group, "m", 0)
        assert joined.error_code == ErrorCode.NO_ERROR
        followers = [node for node in cluster.node_ids if node != leader]
        for node in followers:
            cluster.stop_node(node)
        try:
            assert cluster.isr(OFFSETS, partition_for(group, INTERNAL_PARTITIONS)) == [leader]
            again = heartbeat(client, group, "m", joined.member_epoch)
            assert (again.error_code, again.member_epoch) == (
                ErrorCode.NO_ERROR,
                joined.member_epoch,
            )
            newcomer = heartbeat(client, group, "n", 0)
            assert newcomer.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        finally:
            for node in followers:
                cluster.start_node(node)
