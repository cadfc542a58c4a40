"""Streams groups across a broker restart: their records in `__consumer_offsets` (Kafka's
StreamsGroupMetadata, StreamsGroupTopology, member metadata, target and current assignment
records) bring back the topology, epochs, members and their tasks; a deleted or emptied group
stays so."""

from __future__ import annotations

from pathlib import Path

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.streamshelp import (
    STREAMS_SETTINGS,
    E,
    Member,
    create_topic,
    describe,
    heartbeat,
    settle,
    subtopology,
    topology,
    wait_for,
)
from tests.wire import WireClient

SETTINGS = {**STREAMS_SETTINGS, "group.streams.session.timeout.ms": "30000"}


def app() -> dict[str, object]:
    return topology(
        subtopology("0", ["in"], changelogs=["app-store-changelog"], repartition_sinks=["app-rep"]),
        subtopology(
            "1",
            [],
            repartition_sources=[
                {"name": "app-rep", "partitions": 0, "replication_factor": 0, "topic_configs": []}
            ],
        ),
        epoch=4,
    )


def test_restart_keeps_the_topology_epochs_and_tasks(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "in", 4)
            first = Member(
                client, "g", app(), process_id="p1", endpoint=("h1", 1), client_tags={"z": "a"}
            )
            second = Member(client, "g", app(), process_id="p2")
            settle([first, second])
            (before,) = describe(client, "g")
            assert before.group_state == "Stable"
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            (after,) = describe(client, "g")
            assert (after.group_state, after.group_epoch, after.assignment_epoch) == (
                "Stable",
                before.group_epoch,
                before.assignment_epoch,
            )
            assert after.topology.epoch == 4
            assert [s.subtopology_id for s in after.topology.subtopologies] == ["0", "1"]

            def members(group: object) -> dict[str, object]:
                return {
                    m.member_id: (
                        m.member_epoch,
                        m.process_id,
                        m.user_endpoint and (m.user_endpoint.host, m.user_endpoint.port),
                        [(kv.key, kv.value) for kv in m.client_tags],
                        [(t.subtopology_id, t.partitions) for t in m.assignment.active_tasks],
                        [
                            (t.subtopology_id, t.partitions)
                            for t in m.target_assignment.active_tasks
                        ],
                    )
                    for m in group.members  # type: ignore[attr-defined]
                }

            assert members(after) == members(before)
            # The members go on at their epochs, with nothing new to reconcile.
            first.client = client
            again = first.beat()
            assert again.member_epoch == before.group_epoch
            assert again.active_tasks is None
            assert describe(client, "g")[0].group_epoch == before.group_epoch


def test_a_left_member_and_a_deleted_group_stay_gone(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "in", 2)
            stays = Member(client, "kept", topology(subtopology("0", ["in"])))
            leaves = Member(client, "kept", topology(subtopology("0", ["in"])))
            leaves.leave()
            deleted = Member(client, "deleted", topology(subtopology("0", ["in"])))
            deleted.leave()
            response = client.call(ApiKey.DeleteGroups, 2, groups_names=["deleted"])
            assert response.results[0].error_code == E.NO_ERROR
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            kept, gone = describe(client, "kept", "deleted")
            assert [m.member_id for m in kept.members] == [stays.member_id]
            assert gone.error_code == E.GROUP_ID_NOT_FOUND
            left = heartbeat(client, "kept", leaves.member_id, leaves.epoch)
            assert left.error_code == E.UNKNOWN_MEMBER_ID


def test_an_empty_streams_group_without_offsets_is_cleaned_up(tmp_path: Path) -> None:
    """As Kafka's periodic cleanup: an empty group with no committed offsets is deleted, its
    records tombstoned; a group with members is kept."""
    settings = {**SETTINGS, "offsets.retention.check.interval.ms": "200"}
    with ThreadedBroker(data_dir=tmp_path / "data", settings=settings) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "in", 1)
            Member(client, "left", topology(subtopology("0", ["in"]))).leave()
            Member(client, "live", topology(subtopology("0", ["in"])))

            def cleaned() -> bool:
                return bool(describe(client, "left")[0].error_code == E.GROUP_ID_NOT_FOUND)

            wait_for(cleaned)
            assert describe(client, "live")[0].error_code == E.NO_ERROR
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            gone, live = describe(client, "left", "live")
            assert gone.error_code == E.GROUP_ID_NOT_FOUND
            assert live.error_code == E.NO_ERROR
