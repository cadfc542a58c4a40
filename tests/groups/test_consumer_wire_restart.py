"""KIP-848 consumer groups across a broker restart (their records in __consumer_offsets),
group deletion in the log, and GROUP config overrides of the heartbeat interval."""

from __future__ import annotations

from pathlib import Path

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.threaded import ThreadedBroker
from tests.groups.test_consumer_wire_heartbeat import (
    CONSUMER_SETTINGS,
    assigned,
    create_topic,
    describe,
    heartbeat,
    join,
)
from tests.wire import WireClient

SETTINGS = {**CONSUMER_SETTINGS, "group.consumer.session.timeout.ms": "30000"}


def test_restart_keeps_epochs_and_assignments(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            topic = create_topic(client, "kept", 4)
            join(client, "g-kept", "a", ["kept"])
            join(client, "g-kept", "b", ["kept"])
            revoking = heartbeat(client, "g-kept", "a", 1, owned={topic: [0, 1, 2, 3]})
            kept = sorted(assigned(revoking)[topic])
            heartbeat(client, "g-kept", "a", 1, owned={topic: kept})
            heartbeat(client, "g-kept", "b", 2, owned={})
            before = describe(client, "g-kept")
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            after = describe(client, "g-kept")
            assert (after.group_epoch, after.assignment_epoch, after.group_state) == (
                before.group_epoch,
                before.assignment_epoch,
                "Stable",
            )
            assert {(m.member_id, m.member_epoch) for m in after.members} == {("a", 2), ("b", 2)}
            owned = {
                m.member_id: sorted(m.assignment.topic_partitions[0].partitions)
                for m in after.members
            }
            assert owned["a"] == kept
            again = heartbeat(client, "g-kept", "a", 2, owned={topic: kept})
            assert (again.error_code, again.member_epoch) == (ErrorCode.NO_ERROR, 2)


def test_a_deleted_group_stays_deleted_after_a_restart(tmp_path: Path) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data", settings=SETTINGS) as broker:
        with WireClient(broker.bootstrap_servers) as client:
            create_topic(client, "gone", 1)
            join(client, "g-gone", "m", ["gone"])
            assert heartbeat(client, "g-gone", "m", -1).error_code == ErrorCode.NO_ERROR
            deleted = client.call(ApiKey.DeleteGroups, 2, groups_names=["g-gone"])
            assert deleted.results[0].error_code == ErrorCode.NO_ERROR
            join(client, "g-left", "m", ["gone"])
            assert heartbeat(client, "g-left", "m", -1).error_code == ErrorCode.NO_ERROR
        broker.restart()
        with WireClient(broker.bootstrap_servers) as client:
            assert describe(client, "g-gone").error_code == ErrorCode.GROUP_ID_NOT_FOUND
            left = describe(client, "g-left")
            assert (left.error_code, left.group_state, left.group_epoch) == (
                ErrorCode.NO_ERROR,
                "Empty",
                2,
            )


def test_group_config_sets_the_heartbeat_interval() -> None:
    with (
        ThreadedBroker(settings=SETTINGS) as broker,
        WireClient(broker.bootstrap_servers) as client,
    ):
        create_topic(client, "tuned", 1)
        altered = client.call(
            ApiKey.IncrementalAlterConfigs,
            1,
            resources=[
                {
                    "resource_type": 32,
                    "resource_name": "g-tuned",
                    "configs": [
                        {
                            "name": "consumer.heartbeat.interval.ms",
                            "config_operation": 0,
                            "value": "77",
                        }
                    ],
                }
            ],
            validate_only=False,
        )
        assert altered.responses[0].error_code == ErrorCode.NO_ERROR
        assert join(client, "g-tuned", "m", ["tuned"]).heartbeat_interval_ms == 77
