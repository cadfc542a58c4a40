"""Authorization of the streams-group APIs (KIP-1071) over the wire, as Kafka 4.3's KafkaApis
checks them: READ on the group and DESCRIBE on every topic of the topology for
StreamsGroupHeartbeat, CREATE (cluster or topic) for the internal topics the broker creates,
and DESCRIBE on the group and its topology's topics for StreamsGroupDescribe."""

from __future__ import annotations

from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.groups.streamshelp import (
    describe,
    join,
    partition_count,
    statuses,
    subtopology,
    topology,
)
from tests.wire import WireClient

ME = "User:ANONYMOUS"
E = ErrorCode
READ, DESCRIBE = 3, 8


def app() -> dict[str, object]:
    return topology(subtopology("0", ["in"], changelogs=["app-store-changelog"]))


def test_heartbeat_needs_read_on_the_group_and_describe_on_the_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("in")
    denied = join(client, "app", app())
    assert (denied.error_code, denied.error_message) == (E.GROUP_AUTHORIZATION_FAILED, None)
    broker.add_acl(ME, "READ", group="app")
    assert join(client, "app", app()).error_code == E.TOPIC_AUTHORIZATION_FAILED
    broker.add_acl(ME, "DESCRIBE", topic="in")
    broker.add_acl(ME, "DESCRIBE", topic="app-store-changelog")
    joined = join(client, "app", app())
    assert joined.error_code == E.NO_ERROR
    # No CREATE: the changelog topic is not created and the answer says why (the first
    # assignment also waits for the default initial rebalance delay).
    assert statuses(joined) == [
        (5, "Assignment delayed due to the configured initial rebalance delay."),
        (
            3,
            "Internal topics are missing: app-store-changelog; Unauthorized to CREATE on "
            "topics app-store-changelog.",
        ),
    ]
    assert partition_count(client, "app-store-changelog") is None
    broker.add_acl(ME, "CREATE", topic="app-store-changelog")
    assert join(client, "app", app()).error_code == E.NO_ERROR
    assert partition_count(client, "app-store-changelog") == 1


def test_describe_needs_describe_on_the_group_and_its_topics(
    broker: KafkaBroker, client: WireClient
) -> None:
    broker.create_topic("in")
    broker.create_topic("app-store-changelog")
    broker.add_acl(ME, "READ", group="app")
    broker.add_acl(ME, "DESCRIBE", topic="in")
    broker.add_acl(ME, "DESCRIBE", topic="app-store-changelog")
    assert join(client, "app", app()).error_code == E.NO_ERROR
    denied, _ = describe(client, "other", "app")
    assert denied.error_code == E.GROUP_AUTHORIZATION_FAILED
    broker.add_acl(ME, "DESCRIBE", group="app")
    (described,) = describe(client, "app", operations=True)
    assert described.error_code == E.NO_ERROR
    assert described.authorized_operations == (1 << READ) | (1 << DESCRIBE)
    broker.remove_acls(topic="app-store-changelog")
    (hidden,) = describe(client, "app")
    assert (hidden.error_code, hidden.error_message, hidden.members, hidden.topology) == (
        E.TOPIC_AUTHORIZATION_FAILED,
        "The described group uses topics that the client is not authorized to describe.",
        [],
        None,
    )
