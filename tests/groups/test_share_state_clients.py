"""The share-coordinator RPCs (keys 83-87) with real share consumers, Java 4.3's
KafkaShareConsumer and confluent-kafka 2.16's ShareConsumer: a start offset set with
InitializeShareGroupState, or state written with WriteShareGroupState, is where and what the
consumers read; what they acknowledge is what ReadShareGroupState(Summary) answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok
from tests.groups.test_share_clients import (
    SETTINGS,
    SHARE_CLIENTS,
    job,
    produce,
    share_group,
    values,
)
from tests.groups.test_share_state_wire import (
    ACKED,
    ARCHIVED,
    AVAILABLE,
    OK,
    error,
    initialize,
    new_topic_id,
    read,
    state,
    summarized,
    summary,
    write,
)
from tests.wire import WireClient

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(config=SETTINGS) as running:
        yield running


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_consumers_read_from_the_initialized_start_offset(broker: KafkaBroker, client: str) -> None:
    topic, group = share_group(broker, client)
    produce(broker, topic, [f"r{n}" for n in range(6)])
    with WireClient(broker.bootstrap_servers) as wire:
        topic_id = new_topic_id(wire, topic)
        assert error(initialize(wire, group, topic_id, 3, state_epoch=1)) == OK
    consumed = run_ok(client, job(broker, topic, group, count=3))
    assert values(consumed["records"]) == ["r3", "r4", "r5"]
    with WireClient(broker.bootstrap_servers) as wire:
        assert state(read(wire, group, topic_id)) == (1, 6, [])
        assert summarized(summary(wire, group, topic_id)) == (1, 0, 6, 0)


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_consumers_get_written_state_and_their_acks_are_read_back(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client)
    produce(broker, topic, [f"r{n}" for n in range(6)])
    with WireClient(broker.bootstrap_servers) as wire:
        topic_id = new_topic_id(wire, topic)
        initialize(wire, group, topic_id, 0)
        # r0 and r1 already acknowledged, r2 archived: the consumer gets r3 to r5 only.
        written = [(0, 1, ACKED, 1), (2, 2, ARCHIVED, 1)]
        assert error(write(wire, group, topic_id, 0, written, complete=3)) == OK
    acks = {"r4": "REJECT", "r5": "RELEASE"}
    consumed = run_ok(client, job(broker, topic, group, acks=acks, polls=1))
    assert values(consumed["records"]) == ["r3"]
    assert values(consumed["records"], "REJECT") == ["r4"]
    assert values(consumed["records"], "RELEASE") == ["r5"]
    with WireClient(broker.bootstrap_servers) as wire:
        # Everything before r5 is done: the start offset moved to 5, r5 is available again.
        assert state(read(wire, group, topic_id)) == (0, 5, [(5, 5, AVAILABLE, 1)])
        assert summarized(summary(wire, group, topic_id))[2:] == (5, 0)
