"""Consumer groups with real clients: split, join, leave, crash; commits and resumes.

Each member runs in its own process (the harness programs' `group_member` op, see
tests/clients/README.md) so that a crash is a real SIGKILL; every record is committed
before it is reported (kcat: committed in the background, waited for before a crash), so
"exactly once across the group" is checked on the reported (partition, offset) pairs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from minibroker.testing.threaded import ThreadedBroker
from tests.groups.consumers import Consumed, ConsumerProcess

pytestmark = pytest.mark.clients
PARTITIONS = 6
BATCH = 30


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(15)


def produce(bootstrap: str, topic: str, values: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value=str(value).encode(), partition=value % PARTITIONS)
    assert producer.flush(15) == 0


@pytest.fixture
def consumed() -> Iterator[Consumed]:
    yield Consumed()


@pytest.fixture
def processes() -> Iterator[list[ConsumerProcess]]:
    started: list[ConsumerProcess] = []
    yield started
    for process in started:
        if process.process.poll() is None:
            process.kill()


def assert_exactly_once(consumed: Consumed, count: int) -> None:
    with consumed.changed:
        positions = [(p, o) for _, p, o, _ in consumed.records]
        twice = [r for r in consumed.records if positions.count((r[1], r[2])) > 1]
    assert not twice, f"consumed twice: {twice}"
    assert sorted(int(v) for v in consumed.values()) == list(range(count))


def all_consumed(consumed: Consumed, count: int) -> bool:
    return len(consumed.records) >= count


def committed_offsets(broker: ThreadedBroker, group: str, topic: str) -> dict[int, int]:
    async def read() -> dict[int, int]:
        assert broker.broker is not None
        found = broker.broker.groups.groups.get(group)
        offsets = found.offsets if found is not None else {}
        return {p: value.offset for (t, p), value in offsets.items() if t == topic}

    result = broker.call(read())
    assert isinstance(result, dict)
    return result


def wait_for_commits(broker: ThreadedBroker, consumed: Consumed, group: str, topic: str) -> None:
    """Until the group's commits cover every record reported (kcat commits in the background)."""
    deadline = time.monotonic() + 30
    while committed_offsets(broker, group, topic) != consumed.next_offsets():
        assert time.monotonic() < deadline, (
            f"commits {committed_offsets(broker, group, topic)} behind {consumed.next_offsets()}"
        )
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("clients", "assignor"),
    [
        (["confluent-kafka"] * 3, "range"),
        (["confluent-kafka"] * 3, "cooperative-sticky"),
        (["kafka-python-3"] * 3, "range"),
        (["kafka-python-2"] * 3, "range"),
        (["aiokafka"] * 3, "range"),
        (["java-4.3"] * 3, "range"),
        (["java-4.3"] * 3, "cooperative-sticky"),
        (["kcat"] * 3, "range"),
        (["kafkajs"] * 3, "roundrobin"),  # kafkajs ships only round-robin
        (["confluent-kafka", "kafka-python-3", "aiokafka"], "roundrobin"),
    ],
    ids=[
        "confluent",
        "confluent-cooperative",
        "kafka-python-3",
        "kafka-python-2",
        "aiokafka",
        "java",
        "java-cooperative",
        "kcat",
        "kafkajs",
        "mixed",
    ],
)
def test_group_splits_rebalances_and_consumes_exactly_once(
    group_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    clients: list[str],
    assignor: str,
) -> None:
    bootstrap = group_broker.bootstrap_servers
    create_topic(bootstrap, "events")

    def start(name: str, client: str) -> ConsumerProcess:
        process = ConsumerProcess(
            consumed, name, client, bootstrap, "g", "events", assignor=assignor
        )
        processes.append(process)
        return process

    members = [start(f"c{i}", client) for i, client in enumerate(clients)]
    produce(bootstrap, "events", range(BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, BATCH))
    consumed.wait_for(
        lambda: (
            len(consumed.assignments) == 3
            and sorted(p for ps in consumed.assignments.values() for p in ps) == list(range(6))
            and all(len(ps) == 2 for ps in consumed.assignments.values())
        )
    )

    # A fourth member joins: the partitions are split four ways.
    start("c3", clients[0])
    consumed.wait_for(lambda: len(consumed.assignments.get("c3", [])) > 0)
    produce(bootstrap, "events", range(BATCH, 2 * BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH))

    # One leaves gracefully, one crashes: their partitions move to the others.
    members[0].terminate()
    produce(bootstrap, "events", range(2 * BATCH, 3 * BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, 3 * BATCH))
    wait_for_commits(group_broker, consumed, "g", "events")
    members[1].kill()
    produce(bootstrap, "events", range(3 * BATCH, 4 * BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, 4 * BATCH))
    assert_exactly_once(consumed, 4 * BATCH)
    with consumed.changed:
        after_crash = {name for name, _, _, v in consumed.records if int(v) >= 3 * BATCH}
    assert after_crash <= {"c2", "c3"}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python-3", "aiokafka"])
def test_commits_survive_restart_and_consumers_resume(
    group_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    bootstrap = group_broker.bootstrap_servers
    create_topic(bootstrap, "events")
    produce(bootstrap, "events", range(BATCH))
    first = ConsumerProcess(consumed, "first", client, bootstrap, "g", "events")
    processes.append(first)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH))
    first.terminate()
    group_broker.restart()
    produce(bootstrap, "events", range(BATCH, 2 * BATCH))
    second = ConsumerProcess(consumed, "second", client, bootstrap, "g", "events")
    processes.append(second)
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH))
    assert_exactly_once(consumed, 2 * BATCH)
    assert consumed.by_consumer() == {"first": BATCH, "second": BATCH}


@pytest.mark.parametrize("client", ["confluent-kafka", "java-4.3"])
def test_static_member_restarts_without_rebalance(
    group_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    bootstrap = group_broker.bootstrap_servers
    create_topic(bootstrap, "events")

    def start(name: str, instance: str) -> ConsumerProcess:
        process = ConsumerProcess(
            consumed,
            name,
            client,
            bootstrap,
            "g",
            "events",
            instance_id=instance,
            session_ms=30_000,
        )
        processes.append(process)
        return process

    start("a", "instance-a")
    start("b", "instance-b")
    produce(bootstrap, "events", range(BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, BATCH))
    consumed.wait_for(
        lambda: [len(consumed.assignments.get(name, [])) for name in ("a", "b")] == [3, 3]
    )
    coordinator = group_broker.broker
    assert coordinator is not None
    generation = coordinator.groups.groups["g"].generation_id
    b_partitions = consumed.assignments["b"]
    # Static members do not leave on close: "b" comes back under the same instance id.
    processes[1].terminate()
    start("b2", "instance-b")
    consumed.wait_for(lambda: "b2" in consumed.assignments)
    produce(bootstrap, "events", range(BATCH, 2 * BATCH))
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH))
    assert consumed.assignments["b2"] == b_partitions
    assert coordinator.groups.groups["g"].generation_id == generation
    assert_exactly_once(consumed, 2 * BATCH)
