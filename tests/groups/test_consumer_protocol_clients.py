"""KIP-848 consumer groups with real clients: Java 4.3 and confluent-kafka 2.16 with
`group.protocol=consumer` (ConsumerGroupHeartbeat; the broker computes the assignment).

Members run in their own processes (the harness's `group_member` op with `group_protocol`,
tests/clients/README.md) so that a crash is a real SIGKILL; every record is committed before
it is reported, so "exactly once across the group" is checked on the reported positions.
The consumer protocol's session timeout and heartbeat interval are the broker's
(group.consumer.*), so each module broker sets them: a short session where a crash must be
noticed, a long one where a static member restarts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from minibroker.protocol.api_keys import ApiKey
from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import run_ok
from tests.groups.consumers import Consumed, ConsumerProcess
from tests.groups.test_group_clients import BATCH, PARTITIONS, all_consumed, assert_exactly_once
from tests.txn.txnhelp import create_topic, records, text, unique
from tests.wire import WireClient

pytestmark = pytest.mark.clients

KIP848_CLIENTS = ["java-4.3", "confluent-kafka"]
CONSUMER_PROTOCOL = {"group_protocol": "consumer"}
BASE_SETTINGS = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.min.session.timeout.ms": "100",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "200",
}
# A crashed member is noticed within seconds.
SHORT_SESSION_SETTINGS = {
    **BASE_SETTINGS,
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "3000",
}
# A static member that closed keeps its partitions while it restarts (Kafka's 45 s default).
LONG_SESSION_SETTINGS = {**BASE_SETTINGS, "group.consumer.session.timeout.ms": "45000"}
WAIT_S = 60.0
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1  # ConsumerGroupDescribe v1 MemberType


def module_broker(
    tmp_path_factory: pytest.TempPathFactory, settings: dict[str, str]
) -> Iterator[ThreadedBroker]:
    data_dir: Path = tmp_path_factory.mktemp("kip848") / "data"
    with ThreadedBroker(data_dir=data_dir, settings=settings) as running:
        yield running


@pytest.fixture(scope="module")
def short_session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    yield from module_broker(tmp_path_factory, SHORT_SESSION_SETTINGS)


@pytest.fixture(scope="module")
def long_session_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    yield from module_broker(tmp_path_factory, LONG_SESSION_SETTINGS)


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


def produce_values(bootstrap: str, topic: str, values: list[str], partitions: int) -> None:
    """Value i goes to partition i % partitions (acks=all)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for index, value in enumerate(values):
        producer.produce(topic, value=value.encode(), partition=index % partitions)
    assert producer.flush(15) == 0


def numbers(start: int, stop: int) -> list[str]:
    """Values "start".."stop-1": value n lands on partition n % PARTITIONS."""
    return [str(n) for n in range(start, stop)]


class Members:
    """Starts `group_member` processes of one group on one topic (or pattern)."""

    def __init__(
        self,
        consumed: Consumed,
        processes: list[ConsumerProcess],
        bootstrap: str,
        group: str,
        topic: str,
        protocol: dict[str, str],
    ) -> None:
        self.consumed = consumed
        self.processes = processes
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.protocol = protocol

    def start(self, name: str, client: str, instance_id: str | None = None) -> ConsumerProcess:
        process = ConsumerProcess(
            self.consumed,
            name,
            client,
            self.bootstrap,
            self.group,
            self.topic,
            assignor="range",  # classic members only (an upgrade's old members)
            instance_id=instance_id,
            protocol=self.protocol,
        )
        self.processes.append(process)
        return process


def stop(consumed: Consumed, member: ConsumerProcess, *, crash: bool = False) -> None:
    """Close `member` (a crash: SIGKILL) and forget its last assignment: a crashed member
    reports no revocation."""
    if crash:
        member.kill()
    else:
        member.terminate()
    with consumed.changed:
        consumed.assignments.pop(member.name, None)


def evenly_split(consumed: Consumed, names: list[str]) -> bool:
    """The named members own PARTITIONS between them, as evenly as can be, and nobody else
    owns any."""
    owned = {name: consumed.assignments.get(name, []) for name in names}
    others = [ps for name, ps in consumed.assignments.items() if name not in names and ps]
    counts = sorted(len(ps) for ps in owned.values())
    return (
        not others
        and sorted(p for ps in owned.values() for p in ps) == list(range(PARTITIONS))
        and counts[-1] - counts[0] <= 1
    )


def describe_group(bootstrap: str, group: str) -> Any:
    """The group as ConsumerGroupDescribe v1 answers it (epochs, members, assignments, each
    member's protocol: MemberType 0 classic, 1 consumer)."""
    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.ConsumerGroupDescribe, 1, group_ids=[group], include_authorized_operations=False
        )
    (described,) = response.groups
    assert described.error_code == 0, described
    return described


def member_partitions(member: Any) -> list[int]:
    return sorted(p for topic in member.assignment.topic_partitions for p in topic.partitions)


@pytest.mark.parametrize(
    "clients",
    [
        ["java-4.3"] * 4,
        ["confluent-kafka"] * 4,
        ["confluent-kafka", "java-4.3", "confluent-kafka", "java-4.3"],
    ],
    ids=["java-4.3", "confluent-kafka", "mixed"],
)
def test_group_splits_rebalances_and_consumes_exactly_once(
    short_session_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    clients: list[str],
) -> None:
    """Members c0..c3 run clients[0..3] (mixed: Java and librdkafka in one group)."""
    bootstrap = short_session_broker.bootstrap_servers
    topic = unique("events")
    create_topic(bootstrap, topic, PARTITIONS)
    group = Members(consumed, processes, bootstrap, unique("g"), topic, CONSUMER_PROTOCOL)
    members = [group.start(f"c{i}", clients[i]) for i in range(3)]
    produce_values(bootstrap, topic, numbers(0, BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["c0", "c1", "c2"]), WAIT_S)

    # A fourth member joins: the broker revokes partitions from their owners before it
    # hands them to the newcomer.
    group.start("c3", clients[3])
    consumed.wait_for(lambda: evenly_split(consumed, ["c0", "c1", "c2", "c3"]), WAIT_S)
    produce_values(bootstrap, topic, numbers(BATCH, 2 * BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH), WAIT_S)

    # One leaves (epoch -1), one crashes (its session expires): the others take over.
    stop(consumed, members[0])
    produce_values(bootstrap, topic, numbers(2 * BATCH, 3 * BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, 3 * BATCH), WAIT_S)
    stop(consumed, members[1], crash=True)
    produce_values(bootstrap, topic, numbers(3 * BATCH, 4 * BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, 4 * BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["c2", "c3"]), WAIT_S)
    assert_exactly_once(consumed, 4 * BATCH)
    with consumed.changed:
        after_crash = {name for name, _, _, v in consumed.records if int(v) >= 3 * BATCH}
    assert after_crash <= {"c2", "c3"}


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_members_keep_their_epochs_and_partitions_across_a_broker_restart(
    short_session_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    """The group's records in __consumer_offsets bring back its epochs and assignments: the
    members heartbeat on with their epochs, and nothing is read twice or lost."""
    bootstrap = short_session_broker.bootstrap_servers
    topic = unique("restart", client)
    create_topic(bootstrap, topic, PARTITIONS)
    name = unique("g", client)
    group = Members(consumed, processes, bootstrap, name, topic, CONSUMER_PROTOCOL)
    for member in ("a", "b"):
        group.start(member, client)
    produce_values(bootstrap, topic, numbers(0, BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["a", "b"]), WAIT_S)
    before = describe_group(bootstrap, name)

    short_session_broker.restart()
    after = describe_group(bootstrap, name)
    assert (after.group_epoch, after.assignment_epoch) == (
        before.group_epoch,
        before.assignment_epoch,
    )
    assert {(m.member_id, m.member_epoch) for m in after.members} == {
        (m.member_id, m.member_epoch) for m in before.members
    }
    produce_values(bootstrap, topic, numbers(BATCH, 2 * BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH), WAIT_S)
    assert_exactly_once(consumed, 2 * BATCH)


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_client_chooses_the_servers_range_assignor(
    long_session_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    """group.remote.assignor=range: the broker's range assignor gives each member a run of
    consecutive partitions (uniform, the default, need not)."""
    bootstrap = long_session_broker.bootstrap_servers
    topic = unique("range", client)
    create_topic(bootstrap, topic, PARTITIONS)
    name = unique("g", client)
    protocol = {**CONSUMER_PROTOCOL, "remote_assignor": "range"}
    group = Members(consumed, processes, bootstrap, name, topic, protocol)
    for member in ("a", "b"):
        group.start(member, client)
    consumed.wait_for(lambda: evenly_split(consumed, ["a", "b"]), WAIT_S)
    with consumed.changed:
        runs = sorted(consumed.assignments[member] for member in ("a", "b"))
    assert runs == [[0, 1, 2], [3, 4, 5]]
    assert describe_group(bootstrap, name).assignor_name == "range"


# Java's SubscriptionPattern and the broker use RE2 full matches; librdkafka subscribes to a
# name as a regular expression when it starts with "^".
PATTERN_PREFIX = {"java-4.3": "", "confluent-kafka": "^"}


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_regex_subscription_picks_up_a_topic_created_later(
    long_session_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    bootstrap = long_session_broker.bootstrap_servers
    prefix = unique("rx", client)
    first, later, unmatched = f"{prefix}-first", f"{prefix}-later", f"not-{prefix}"
    create_topic(bootstrap, first, 2)
    produce_values(bootstrap, first, [f"first-{i}" for i in range(6)], 2)
    regex = f"{PATTERN_PREFIX[client]}{prefix}-.*"
    name = unique("g", client)
    group = Members(
        consumed, processes, bootstrap, name, first, {**CONSUMER_PROTOCOL, "pattern": regex}
    )
    group.start("m", client)
    consumed.wait_for(lambda: len(consumed.topic_records) == 6, WAIT_S)
    # The client sent the regex itself (SubscribedTopicRegex; librdkafka joins its regexes
    # as "(a)|(b)"): the broker resolves it.
    [member] = describe_group(bootstrap, name).members
    sent = {"java-4.3": regex, "confluent-kafka": f"({regex})"}[client]
    assert (member.subscribed_topic_regex, member.subscribed_topic_names) == (sent, [])

    create_topic(bootstrap, unmatched, 1)
    create_topic(bootstrap, later, 3)
    produce_values(bootstrap, unmatched, ["unmatched"], 1)
    produce_values(bootstrap, later, [f"later-{i}" for i in range(6)], 3)
    consumed.wait_for(lambda: len(consumed.topic_records) >= 12, WAIT_S)
    with consumed.changed:
        got = sorted((t, p, o, v) for _, t, p, o, v in consumed.topic_records)
        owned = sorted(consumed.topic_assignments["m"])
    expected = [(first, i % 2, i // 2, f"first-{i}") for i in range(6)]
    expected += [(later, i % 3, i // 3, f"later-{i}") for i in range(6)]
    assert got == sorted(expected)
    assert owned == [(first, 0), (first, 1), (later, 0), (later, 1), (later, 2)]


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_static_member_restarts_without_rebalance(
    long_session_broker: ThreadedBroker,
    consumed: Consumed,
    processes: list[ConsumerProcess],
    client: str,
) -> None:
    bootstrap = long_session_broker.bootstrap_servers
    topic = unique("static", client)
    create_topic(bootstrap, topic, PARTITIONS)
    name = unique("g", client)
    group = Members(consumed, processes, bootstrap, name, topic, CONSUMER_PROTOCOL)
    group.start("a", client, instance_id="instance-a")
    b = group.start("b", client, instance_id="instance-b")
    produce_values(bootstrap, topic, numbers(0, BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["a", "b"]), WAIT_S)
    before = describe_group(bootstrap, name)
    b_partitions = consumed.assignments["b"]

    # A static member's close is a temporary leave (epoch -2): it keeps its partitions, and
    # its successor under the same instance id gets them back with no new group epoch.
    b.terminate()
    group.start("b2", client, instance_id="instance-b")
    consumed.wait_for(lambda: consumed.assignments.get("b2") == b_partitions, WAIT_S)
    produce_values(bootstrap, topic, numbers(BATCH, 2 * BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, 2 * BATCH), WAIT_S)
    after = describe_group(bootstrap, name)
    assert (after.group_epoch, after.assignment_epoch) == (
        before.group_epoch,
        before.assignment_epoch,
    )
    assert {m.instance_id: member_partitions(m) for m in after.members} == {
        m.instance_id: member_partitions(m) for m in before.members
    }
    assert_exactly_once(consumed, 2 * BATCH)
    with consumed.changed:
        read_by_b2 = {p for name, p, _, _ in consumed.records if name == "b2"}
    assert read_by_b2 <= set(b_partitions)


INPUT_RECORDS = 10
TXN_BATCH = 4
CRASH_AFTER = 6  # one committed batch of 4, then 2 records of the next batch


def transform(client: str, bootstrap: str, names: dict[str, str], **job: Any) -> dict[str, Any]:
    return run_ok(
        client,
        {
            "op": "transform",
            "bootstrap": bootstrap,
            "batch": TXN_BATCH,
            "timeout_ms": 40_000,
            **CONSUMER_PROTOCOL,
            **names,
            **job,
        },
    )


def read_output(client: str, bootstrap: str, topic: str, isolation: str, count: int) -> list[Any]:
    job = {
        "op": "consume",
        "bootstrap": bootstrap,
        "topic": topic,
        "count": count,
        "from": "earliest",
        "isolation": isolation,
        "timeout_ms": 8000,
        "group": None,
    }
    result: list[Any] = run_ok(client, job)["records"]
    return result


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_consume_transform_produce_exactly_once(
    short_session_broker: ThreadedBroker, client: str
) -> None:
    """The first run crashes mid-transaction, its member still in the group; the second run
    gets the partition once the crashed member's session expires and resumes from the
    offsets the committed transaction carried (TxnOffsetCommit with the member's epoch)."""
    bootstrap = short_session_broker.bootstrap_servers
    names = {
        "input": unique("in", client),
        "output": unique("out", client),
        "group": unique("g", client),
        "transactional_id": unique("tid", client),
    }
    create_topic(bootstrap, names["input"])
    create_topic(bootstrap, names["output"])
    produce_job = {"op": "produce", "bootstrap": bootstrap, "topic": names["input"]}
    run_ok(client, {**produce_job, "records": records("in", INPUT_RECORDS)})
    crashed = transform(client, bootstrap, names, count=INPUT_RECORDS, crash_after=CRASH_AFTER)
    assert (crashed["crashed"], crashed["committed"]) == (True, TXN_BATCH)
    resumed = transform(client, bootstrap, names, count=INPUT_RECORDS - TXN_BATCH)
    assert (resumed["crashed"], resumed["committed"]) == (False, INPUT_RECORDS - TXN_BATCH)

    committed = read_output(client, bootstrap, names["output"], "read_committed", INPUT_RECORDS)
    sources = sorted(text(dict(r["headers"])["source"]) or "" for r in committed)
    assert sources == sorted(f"0:{offset}" for offset in range(INPUT_RECORDS))
    assert [text(r["value"]) for r in committed] == [f"in-{i}" for i in range(INPUT_RECORDS)]
    everything = read_output(
        client, bootstrap, names["output"], "read_uncommitted", INPUT_RECORDS + 2
    )
    assert len(everything) == INPUT_RECORDS + CRASH_AFTER - TXN_BATCH  # 2 aborted records


ADMIN_TIMEOUT_S = 15.0


def joined_consumer(bootstrap: str, group: str, topic: str, protocol: str) -> Consumer:
    """An in-process confluent-kafka member of `group` once it owns partitions."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "client.id": f"{protocol}-client",
    }
    consumer = Consumer(config)
    consumer.subscribe([topic])
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while not consumer.assignment():
        assert time.monotonic() < deadline, f"the {protocol} consumer got no partitions"
        consumer.poll(0.05)
    return consumer


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_admin_lists_and_describes_consumer_groups(
    long_session_broker: ThreadedBroker, client: str
) -> None:
    bootstrap = long_session_broker.bootstrap_servers
    topic = unique("admin", client)
    create_topic(bootstrap, topic, 2)
    new_group, old_group = unique("new", client), unique("old", client)
    members = [
        joined_consumer(bootstrap, new_group, topic, "consumer"),
        joined_consumer(bootstrap, old_group, topic, "classic"),
    ]
    try:

        def admin(op: str, **fields: Any) -> dict[str, Any]:
            job = {"op": op, "bootstrap": bootstrap, "timeout_ms": 15_000, **fields}
            return run_ok(client, job)

        listed = {g["group"]: g for g in admin("list_groups")["groups"]}
        assert (listed[new_group]["type"], listed[new_group]["state"]) == ("consumer", "Stable")
        assert (listed[old_group]["type"], listed[old_group]["state"]) == ("classic", "Stable")
        new, old = admin("describe_groups", groups=[new_group, old_group])["groups"]
        assert (new["error_name"], new["type"], new["state"]) == (None, "consumer", "Stable")
        assert new["protocol"] == "uniform"  # the broker's default assignor
        [member] = new["members"]
        assert member["client_id"] == "consumer-client"
        assert sorted(member["partitions"]) == [[topic, 0], [topic, 1]]
        assert (old["error_name"], old["type"], old["state"]) == (None, "classic", "Stable")
        assert [m["client_id"] for m in old["members"]] == ["classic-client"]
    finally:
        for consumer in members:
            consumer.close()


def test_online_upgrade_from_classic_java_3_9_to_consumer_java_4_3(
    short_session_broker: ThreadedBroker, consumed: Consumed, processes: list[ConsumerProcess]
) -> None:
    """Three Java 3.9 classic members (eager range assignor) are replaced one at a time by
    Java 4.3 consumer-protocol members (the broker converts the group when the first one
    joins; the classic members rejoin through JoinGroup/SyncGroup as it reassigns): nothing is
    read twice and nothing is lost."""
    bootstrap = short_session_broker.bootstrap_servers
    topic = unique("upgrade")
    create_topic(bootstrap, topic, PARTITIONS)
    name = unique("g")
    classic = Members(consumed, processes, bootstrap, name, topic, {})
    upgraded = Members(consumed, processes, bootstrap, name, topic, CONSUMER_PROTOCOL)
    old = [classic.start(f"old{i}", "java-3.9") for i in range(3)]
    produce_values(bootstrap, topic, numbers(0, BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["old0", "old1", "old2"]), WAIT_S)
    produced = BATCH
    for step in range(3):
        upgraded.start(f"new{step}", "java-4.3")
        live = [f"old{i}" for i in range(step, 3)] + [f"new{i}" for i in range(step + 1)]
        consumed.wait_for(lambda live=live: evenly_split(consumed, live), WAIT_S)
        types = sorted(m.member_type for m in describe_group(bootstrap, name).members)
        assert types == [CLASSIC_MEMBER] * (3 - step) + [CONSUMER_MEMBER] * (step + 1)
        stop(consumed, old[step])
        produce_values(bootstrap, topic, numbers(produced, produced + BATCH), PARTITIONS)
        produced += BATCH
        consumed.wait_for(lambda total=produced: all_consumed(consumed, total), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["new0", "new1", "new2"]), WAIT_S)
    described = describe_group(bootstrap, name)
    assert described.group_state == "Stable"
    assert [m.member_type for m in described.members] == [CONSUMER_MEMBER] * 3
    assert_exactly_once(consumed, produced)


def test_online_downgrade_from_consumer_java_4_3_to_classic_java_3_9(
    short_session_broker: ThreadedBroker, consumed: Consumed, processes: list[ConsumerProcess]
) -> None:
    """The reverse roll: Java 4.3 consumer-protocol members replaced one at a time by Java 3.9
    classic members; when the last consumer-protocol member leaves, the group becomes a
    classic group again (bidirectional migration): nothing is read twice or lost."""
    bootstrap = short_session_broker.bootstrap_servers
    topic = unique("downgrade")
    create_topic(bootstrap, topic, PARTITIONS)
    name = unique("g")
    upgraded = Members(consumed, processes, bootstrap, name, topic, CONSUMER_PROTOCOL)
    classic = Members(consumed, processes, bootstrap, name, topic, {})
    new = [upgraded.start(f"new{i}", "java-4.3") for i in range(3)]
    produce_values(bootstrap, topic, numbers(0, BATCH), PARTITIONS)
    consumed.wait_for(lambda: all_consumed(consumed, BATCH), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["new0", "new1", "new2"]), WAIT_S)
    produced = BATCH
    for step in range(3):
        classic.start(f"old{step}", "java-3.9")
        live = [f"new{i}" for i in range(step, 3)] + [f"old{i}" for i in range(step + 1)]
        consumed.wait_for(lambda live=live: evenly_split(consumed, live), WAIT_S)
        stop(consumed, new[step])
        produce_values(bootstrap, topic, numbers(produced, produced + BATCH), PARTITIONS)
        produced += BATCH
        consumed.wait_for(lambda total=produced: all_consumed(consumed, total), WAIT_S)
    consumed.wait_for(lambda: evenly_split(consumed, ["old0", "old1", "old2"]), WAIT_S)
    assert_exactly_once(consumed, produced)
    listed = run_ok("java-4.3", {"op": "list_groups", "bootstrap": bootstrap})["groups"]
    assert [(g["type"], g["state"]) for g in listed if g["group"] == name] == [
        ("classic", "Stable")
    ]


@pytest.mark.parametrize("client", KIP848_CLIENTS)
def test_group_configs_altered_and_read_back(
    long_session_broker: ThreadedBroker, client: str
) -> None:
    bootstrap = long_session_broker.bootstrap_servers
    group = unique("configured", client)
    resource = {"type": "group", "name": group}

    def admin(op: str, **fields: Any) -> dict[str, Any]:
        job = {"op": op, "bootstrap": bootstrap, "timeout_ms": 15_000, **fields}
        return run_ok(client, job)

    changes = {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "300"}
    altered = admin("alter_configs", resources=[{**resource, "set": changes}])["resources"]
    assert [item["error_name"] for item in altered] == [None]
    [described] = admin("describe_configs", resources=[resource])["resources"]
    configs = described["configs"]
    assert described["error_name"] is None
    assert {name: configs[name]["value"] for name in changes} == changes
    # Kafka's source 8 (DYNAMIC_GROUP_CONFIG), as each client names it.
    source = {"java-4.3": "DYNAMIC_GROUP_CONFIG", "confluent-kafka": "GROUP_CONFIG"}[client]
    assert {configs[name]["source"] for name in changes} == {source}
