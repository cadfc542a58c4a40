"""Share groups (KIP-932) with real clients: Java 4.3's KafkaShareConsumer and confluent-kafka
2.16's ShareConsumer (the harness's `share_consume` job, tests/clients/README.md).

Several consumers share one partition and every record is accepted exactly once; explicit
RELEASE redelivers (delivery count 2), REJECT archives; a poison record is archived at the
delivery count limit; a consumer killed while holding records gives them back when their
acquisition locks expire; implicit acknowledgement accepts what each poll returned. The
broker's share-partition state (the testing API) is checked after each scenario.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker
from tests.clients.runner import run_ok, start_client
from tests.groups.test_share_wire_record_limits import produce_one_batch
from tests.wire import WireClient

pytestmark = pytest.mark.clients

SHARE_CLIENTS = ["java-4.3", "confluent-kafka"]
# Locks shorter than Kafka's 15 s minimum, so that an expired lock is seen within seconds.
SETTINGS = {
    "offsets.topic.num.partitions": "3",
    "group.share.min.record.lock.duration.ms": "1000",
}
_numbers = iter(range(1_000_000))


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(config=SETTINGS) as running:
        yield running


def share_group(broker: KafkaBroker, client: str, **configs: str) -> tuple[str, str]:
    """A new topic and share group; the group reads from the earliest offset."""
    number = next(_numbers)
    topic, group = f"queue-{client}-{number}", f"workers-{client}-{number}"
    broker.create_topic(topic)
    alter = {"share.auto.offset.reset": "earliest", **configs}
    with WireClient(broker.bootstrap_servers) as wire:
        answer = wire.call(
            ApiKey.IncrementalAlterConfigs,
            1,
            resources=[
                {
                    "resource_type": 32,
                    "resource_name": group,
                    "configs": [
                        {"name": name, "config_operation": 0, "value": value}
                        for name, value in alter.items()
                    ],
                }
            ],
            validate_only=False,
        )
    assert answer.responses[0].error_code == ErrorCode.NO_ERROR
    return topic, group


def produce(broker: KafkaBroker, topic: str, values: list[str]) -> None:
    for value in values:
        broker.produce(topic, value)


def job(broker: KafkaBroker, topic: str, group: str, **fields: Any) -> dict[str, Any]:
    return {
        "op": "share_consume",
        "bootstrap": broker.bootstrap_servers,
        "topic": topic,
        "group": group,
        "timeout_ms": 30_000,
        **fields,
    }


def values(records: list[dict[str, Any]], ack: str = "ACCEPT") -> list[str]:
    return [base64.b64decode(r["value"]).decode() for r in records if r["ack"] == ack]


def assert_settled(broker: KafkaBroker, group: str, topic: str, end: int) -> None:
    state = broker.share_partition(group, topic)
    assert state is not None
    assert (state.start_offset, state.end_offset, state.records) == (end, end, {})


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_two_then_three_consumers_share_a_partition_each_record_accepted_once(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client)
    small_polls = {"config": {"max.poll.records": "5"}}

    def consumer() -> subprocess.Popen[str]:
        return start_client(client, job(broker, topic, group, idle_ms=5000, **small_polls))

    processes = [consumer(), consumer()]
    _wait_for_members(broker, group, topic, 2)
    produced = [f"job-{n}" for n in range(300)]
    produce(broker, topic, produced[:150])
    processes.append(consumer())
    _wait_for_members(broker, group, topic, 3)
    produce(broker, topic, produced[150:])
    results = [_result(process) for process in processes]
    accepted = [values(result["records"]) for result in results]
    assert Counter(v for part in accepted for v in part) == Counter(produced)
    assert sum(1 for part in accepted if part) >= 2, "the partition was not shared"
    assert_settled(broker, group, topic, 300)


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_released_records_go_to_another_consumer(broker: KafkaBroker, client: str) -> None:
    topic, group = share_group(broker, client)
    produce(broker, topic, ["x1", "x2", "x3"])
    releasing = {"acks": {"x1": "RELEASE", "x2": "RELEASE", "x3": "RELEASE"}, "polls": 1}
    first = run_ok(client, job(broker, topic, group, **releasing))
    assert sorted(values(first["records"], "RELEASE")) == ["x1", "x2", "x3"]
    other = run_ok(client, job(broker, topic, group, count=3))
    assert sorted(values(other["records"])) == ["x1", "x2", "x3"]
    assert {r["delivery_count"] for r in other["records"]} == {2}
    assert_settled(broker, group, topic, 3)


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_release_redelivers_reject_archives_and_a_poison_record_stops(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client, **{"share.delivery.count.limit": "3"})
    produce(broker, topic, ["a", "release-me", "b", "reject-me", "poison", "c"])
    acks = {"release-me": "RELEASE", "reject-me": "REJECT", "poison": "RELEASE"}
    first = run_ok(client, job(broker, topic, group, acks=acks, idle_ms=3000))
    assert sorted(values(first["records"])) == ["a", "b", "c"]
    assert values(first["records"], "REJECT") == ["reject-me"]
    # released each time: delivered again up to the limit (3), then archived
    poison = [r["delivery_count"] for r in first["records"] if values([r], r["ack"]) == ["poison"]]
    assert poison == [1, 2, 3]
    released = [r for r in first["records"] if values([r], r["ack"]) == ["release-me"]]
    assert [r["delivery_count"] for r in released] == [1, 2, 3]
    assert_settled(broker, group, topic, 6)


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_a_killed_consumer_s_records_come_back_when_their_locks_expire(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client, **{"share.record.lock.duration.ms": "2000"})
    produce(broker, topic, [f"r{n}" for n in range(10)])
    holder = start_client(client, job(broker, topic, group, hold=True))
    try:
        assert _next_event(holder) == "holding"
        held = broker.share_partition(group, topic)
        assert held is not None
        assert {r.state for r in held.records.values()} == {"ACQUIRED"}
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(10)
    taken = run_ok(client, job(broker, topic, group, count=10))
    assert sorted(values(taken["records"])) == [f"r{n}" for n in range(10)]
    redelivered = {r["offset"] for r in taken["records"] if r["delivery_count"] == 2}
    assert redelivered == set(held.records)  # what the killed one held, delivered again
    assert_settled(broker, group, topic, 10)


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_implicit_acknowledgement_accepts_each_poll(broker: KafkaBroker, client: str) -> None:
    topic, group = share_group(broker, client)
    produce(broker, topic, ["x", "y", "z"])
    result = run_ok(client, job(broker, topic, group, count=3, mode="implicit"))
    assert sorted(values(result["records"])) == ["x", "y", "z"]
    assert_settled(broker, group, topic, 3)


def test_expiring_locks_on_demand_redelivers_at_once(broker: KafkaBroker) -> None:
    """The testing API ends the locks a live consumer holds: another member gets the records
    without waiting out `share.record.lock.duration.ms` (30 s here)."""
    topic, group = share_group(broker, "api")
    produce(broker, topic, ["p", "q"])
    holder = start_client("confluent-kafka", job(broker, topic, group, hold=True))
    try:
        assert _next_event(holder) == "holding"
        assert broker.expire_share_locks(group) == 2
        taken = run_ok("confluent-kafka", job(broker, topic, group, count=2, timeout_ms=10_000))
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(10)
    assert sorted(values(taken["records"])) == ["p", "q"]
    assert {r["delivery_count"] for r in taken["records"]} == {2}


def _wait_for_members(broker: KafkaBroker, group: str, topic: str, count: int) -> None:
    """Until `count` members of the share group have the topic's partition assigned."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        view = broker.share_group(group)
        if view and sum(1 for m in view.members.values() if topic in m.assigned) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} members of {group} never had {topic} assigned")


def _next_event(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line, f"the client ended early: {process.stderr.read() if process.stderr else ''}"
    event: str = json.loads(line).get("event", "")
    return event


def _result(process: subprocess.Popen[str]) -> dict[str, Any]:
    process.stdin = None  # start_client wrote the job and closed it
    out, err = process.communicate(timeout=120)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    result = next((line for line in lines if "ok" in line), None)
    assert result is not None and result["ok"], f"{lines}\n{err[-3000:]}"
    return result


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_a_restart_keeps_what_was_acknowledged(
    tmp_path_factory: pytest.TempPathFactory, client: str
) -> None:
    data_dir = tmp_path_factory.mktemp("share-restart") / "data"
    with KafkaBroker(data_dir=data_dir, config=SETTINGS) as durable:
        topic, group = share_group(durable, client)
        produce(durable, topic, [f"m{n}" for n in range(10)])
        first = run_ok(
            client, job(durable, topic, group, count=4, config={"max.poll.records": "2"})
        )
        durable.restart()
        rest = run_ok(client, job(durable, topic, group, idle_ms=3000))
    accepted = values(first["records"]) + values(rest["records"])
    assert sorted(accepted) == sorted(f"m{n}" for n in range(10))


@pytest.mark.parametrize("client", SHARE_CLIENTS)
def test_read_committed_delivers_only_committed_transactions(
    broker: KafkaBroker, client: str
) -> None:
    topic, group = share_group(broker, client, **{"share.isolation.level": "read_committed"})
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{topic}"}
    )
    producer.init_transactions(10)
    for values_sent, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True)):
        producer.begin_transaction()
        for value in values_sent:
            producer.produce(topic, value.encode())
        producer.flush(10)  # stored before the transaction ends, aborted ones included
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    result = run_ok(client, job(broker, topic, group, idle_ms=3000))
    assert values(result["records"]) == ["c1", "c2", "c3"]
    state = broker.share_partition(group, topic)
    assert state is not None
    assert state.start_offset == state.end_offset == 8  # 5 records and 3 markers, all settled


def test_record_limit_mode_splits_a_batch_at_the_in_flight_cap(broker: KafkaBroker) -> None:
    """share.partition.max.record.locks=100 and one 200-record batch: a record-limit poll gets
    the first 100; once they are accepted the next poll gets the other 100."""
    topic, group = share_group(broker, "java", **{"share.partition.max.record.locks": "100"})
    with WireClient(broker.bootstrap_servers) as wire:
        produce_one_batch(wire, topic, 200)
    record_limit = {"share.acquire.mode": "record_limit", "max.poll.records": "500"}
    first = run_ok("java-4.3", job(broker, topic, group, polls=1, config=record_limit))
    assert [r["offset"] for r in first["records"]] == list(range(100))
    rest = run_ok("java-4.3", job(broker, topic, group, count=100, config=record_limit))
    assert [r["offset"] for r in rest["records"]] == list(range(100, 200))
    assert {r["delivery_count"] for r in rest["records"]} == {1}
    assert_settled(broker, group, topic, 200)
