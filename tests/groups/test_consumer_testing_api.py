"""The Python testing API for KIP-848 consumer groups: a group's epochs and assignments, a
forced rebalance, and pushed errors and recording for ConsumerGroupHeartbeat/Describe."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing.cluster import KafkaBroker
from tests.groups.test_consumer_wire_heartbeat import (
    CONSUMER_SETTINGS,
    describe,
    heartbeat,
    join,
)
from tests.wire import WireClient


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaBroker]:
    settings = {**CONSUMER_SETTINGS, "group.consumer.session.timeout.ms": "30000"}
    with KafkaBroker(config=settings, storage="memory") as broker:
        broker.create_topic("api", 2)
        yield broker


def test_consumer_group_view_and_forced_rebalance(kafka: KafkaBroker) -> None:
    assert kafka.consumer_group("api-g") is None
    with WireClient(kafka.bootstrap_servers) as client:
        join(client, "api-g", "m", ["api"])
        view = kafka.consumer_group("api-g")
        assert view is not None
        assert (view.state, view.group_epoch, view.assignment_epoch, view.assignor) == (
            "Stable",
            1,
            1,
            "uniform",
        )
        member = view.members["m"]
        assert (member.member_epoch, member.state) == (1, "stable")
        assert member.assigned == member.target == {"api": [0, 1]}

        assert kafka.force_rebalance("api-g") == 2
        assert kafka.consumer_group("api-g").state == "Assigning"  # type: ignore[union-attr]
        topic_id = describe(client, "api-g").members[0].assignment.topic_partitions[0].topic_id
        after = heartbeat(client, "api-g", "m", 1, owned={topic_id: [0, 1]})
        assert (after.error_code, after.member_epoch) == (ErrorCode.NO_ERROR, 2)
    with pytest.raises(KeyError):
        kafka.force_rebalance("no-such-group")


def test_pushed_errors_and_recorded_requests(kafka: KafkaBroker) -> None:
    kafka.push_errors(ApiKey.ConsumerGroupHeartbeat, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    with pytest.raises(ValueError, match="no error code"):  # per group, as DescribeGroups
        kafka.push_errors(ApiKey.ConsumerGroupDescribe, ErrorCode.NOT_COORDINATOR)
    with WireClient(kafka.bootstrap_servers) as client:
        refused = join(client, "api-push", "m", ["api"])
        assert refused.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert describe(client, "api-push").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert join(client, "api-push", "m", ["api"]).error_code == ErrorCode.NO_ERROR
    recorded = kafka.requests(ApiKey.ConsumerGroupHeartbeat)
    assert [r.body.group_id for r in recorded][-2:] == ["api-push", "api-push"]
    assert kafka.requests(ApiKey.ConsumerGroupDescribe)[-1].body.group_ids == ["api-push"]
