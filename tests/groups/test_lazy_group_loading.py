"""`__consumer_offsets` loaded a partition at a time (groups/loading.py): after a restart no
partition is read until a group of it is used, a group's offsets and metadata come back whole
when it is, and listing the groups loads every partition."""

from __future__ import annotations

from pathlib import Path

from minibroker.groups.coordinator import GroupCoordinator
from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.wire import WireClient

PARTITIONS = 5
SETTINGS = {"offsets.topic.num.partitions": PARTITIONS}
GROUPS = [f"lazy-{index}" for index in range(20)]


def commit(client: WireClient, group: str, offset: int) -> None:
    response = client.call(
        ApiKey.OffsetCommit,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": offset}]}],
    )
    assert response.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR


def fetched(client: WireClient, group: str) -> int:
    response = client.call(
        ApiKey.OffsetFetch,
        8,
        groups=[{"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]}],
        require_stable=False,
    )
    [answer] = response.groups
    return int(answer.topics[0].partitions[0].committed_offset)


def coordinator(broker: KafkaBroker) -> GroupCoordinator:
    return broker.node(broker.node_ids[0]).groups


def test_a_group_is_loaded_with_its_partition_and_a_listing_loads_them_all(
    tmp_path: Path,
) -> None:
    with KafkaBroker(data_dir=tmp_path, config=SETTINGS) as broker:
        broker.create_topic("t")
        with WireClient(broker.bootstrap_servers) as client:
            for index, group in enumerate(GROUPS):
                commit(client, group, index + 1)
    with KafkaBroker(data_dir=tmp_path, config=SETTINGS) as broker:
        groups = coordinator(broker).groups
        assert groups.loaded_partitions == set()
        with WireClient(broker.bootstrap_servers) as client:
            assert fetched(client, GROUPS[7]) == 8
            assert groups.loaded_partitions == {partition_for(GROUPS[7], PARTITIONS)}
            listed = client.call(ApiKey.ListGroups, 5, states_filter=[], types_filter=[])
            assert listed.error_code == ErrorCode.NO_ERROR
            assert sorted(g.group_id for g in listed.groups) == sorted(GROUPS)
            assert groups.loaded_partitions == set(range(PARTITIONS))
            assert [fetched(client, group) for group in GROUPS] == list(range(1, 21))


def test_a_commit_to_a_group_not_yet_loaded_keeps_its_other_offsets(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path, config=SETTINGS) as broker:
        broker.create_topic("t", partitions=2)
        with WireClient(broker.bootstrap_servers) as client:
            commit(client, "kept", 5)
            client.call(
                ApiKey.OffsetCommit,
                8,
                group_id="kept",
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[
                    {"name": "t", "partitions": [{"partition_index": 1, "committed_offset": 9}]}
                ],
            )
    with KafkaBroker(data_dir=tmp_path, config=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            commit(client, "kept", 6)
        assert broker.committed_offsets("kept") == {("t", 0): 6, ("t", 1): 9}
    with KafkaBroker(data_dir=tmp_path, config=SETTINGS) as broker:
        assert broker.committed_offsets("kept") == {("t", 0): 6, ("t", 1): 9}
