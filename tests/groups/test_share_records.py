"""Share groups in `__consumer_offsets` (groups/share/records.py), as Kafka 4.3 keeps them: a
member goes on at its epoch with its partitions after a restart and on the new leader of its
group's partition after an election, a member that left stays gone, and a deleted group's
records are deleted."""

from __future__ import annotations

from pathlib import Path

from minibroker.internal.topic import partition_for
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaCluster
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_share_wire_heartbeat import (
    SHARE_SETTINGS,
    assigned,
    create_topic,
    describe,
    described_assignments,
    heartbeat,
)
from tests.wire import WireClient

SETTINGS = {**SHARE_SETTINGS, "group.share.session.timeout.ms": "30000"}


def test_members_go_on_at_their_epochs_after_a_restart(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            topic = create_topic(client, "shared", 2)
            first = heartbeat(client, "sg", "a", 0, ["shared"])
            second = heartbeat(client, "sg", "b", 0, ["shared"])
            left = heartbeat(client, "sg", "c", 0, ["shared"])
            assert heartbeat(client, "sg", "c", -1).error_code == ErrorCode.NO_ERROR
            a = heartbeat(client, "sg", "a", first.member_epoch)
            before = describe(client, "sg")
            owned = described_assignments(client, "sg")
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            after = describe(client, "sg")
            assert (after.group_epoch, after.assignment_epoch, after.group_state) == (
                before.group_epoch,
                before.assignment_epoch,
                "Stable",
            )
            assert described_assignments(client, "sg") == owned
            again = heartbeat(client, "sg", "a", a.member_epoch)
            assert (again.error_code, again.member_epoch) == (ErrorCode.NO_ERROR, a.member_epoch)
            rejoined = heartbeat(client, "sg", "b", second.member_epoch, ["shared"])
            assert assigned(rejoined) == {topic: set(owned["b"]["shared"])}
            gone = heartbeat(client, "sg", "c", left.member_epoch)
            assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_deleted_share_group_stays_deleted_after_a_restart(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "shared", 1)
            joined = heartbeat(client, "gone", "a", 0, ["shared"])
            assert heartbeat(client, "gone", "a", -1).error_code == ErrorCode.NO_ERROR
            deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["gone"])
            assert deleted.results[0].error_code == ErrorCode.NO_ERROR
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            assert describe(client, "gone").error_code == ErrorCode.GROUP_ID_NOT_FOUND
            stale = heartbeat(client, "gone", "a", joined.member_epoch)
            assert stale.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_member_goes_on_with_the_new_coordinator_after_an_election() -> None:
    config = {
        **SETTINGS,
        "offsets.topic.replication.factor": 3,
        "min.insync.replicas": 2,
    }
    with KafkaCluster(nodes=3, storage="memory", config=config) as cluster:
        cluster.create_topic("shared", partitions=2, replication_factor=3)
        group = "moving"
        with WireClient(cluster.address(cluster.coordinator(group))) as client:
            joined = heartbeat(client, group, "a", 0, ["shared"])
            assert joined.error_code == ErrorCode.NO_ERROR
        cluster.wait_in_sync()
        index = partition_for(group, 3)
        old = cluster.leader("__consumer_offsets", index)
        new = next(node for node in cluster.node_ids if node != old)
        cluster.move_leader("__consumer_offsets", index, new)
        with WireClient(cluster.address(new)) as client:
            again = heartbeat(client, group, "a", joined.member_epoch)
            assert (again.error_code, again.member_epoch) == (
                ErrorCode.NO_ERROR,
                joined.member_epoch,
            )
            assert [m.member_id for m in describe(client, group).members] == ["a"]
