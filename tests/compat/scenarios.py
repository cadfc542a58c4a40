"""The scenarios of the matrix, each a function `(context, client) -> None` that drives one real
client through the harness's job protocol (tests/clients/README.md) and raises CellFailed
with a one-line reason (the client's own error where it reported one) if anything differs.

Set-up that is not what a scenario tests (topics, records to seek in) goes through tools.py,
so each cell exercises the client under test only where the scenario says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from tests.clients.runner import CAPABILITIES, ClientRunError, run_client
from tests.compat import share_setup, tools
from tests.compat.target import OwnBroker, own_cluster
from tests.compat.tools import SetupRecord, b64, unb64
from tests.groups import streamshelp
from tests.wire import WireClient

LARGE_VALUE_BYTES = 1 << 20
LARGE_LIMIT = 3 * LARGE_VALUE_BYTES
# Client settings that let a producer send a 1 MiB record (kafkajs has no such limit).
LARGE_CONFIGS: dict[str, dict[str, Any]] = {
    "java-4.3": {"max.request.size": str(LARGE_LIMIT)},
    "java-3.9": {"max.request.size": str(LARGE_LIMIT)},
    "kafka-python-3": {"max_request_size": LARGE_LIMIT},
    "kafka-python-2": {"max_request_size": LARGE_LIMIT},
    "aiokafka": {"max_request_size": LARGE_LIMIT},
    "confluent-kafka": {"message.max.bytes": str(LARGE_LIMIT)},
    "kcat": {"message.max.bytes": str(LARGE_LIMIT)},
    "kafkajs": {},
}
CONSUME_TIMEOUT_MS = 20_000
# Broker clocks may differ from this machine's by a little; LogAppendTime must still be "now".
CLOCK_SLACK_MS = 60_000


class CellFailed(AssertionError):
    """The scenario did not go as Kafka would have it; `reason` is one line, `detail` more."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class NotApplicable(Exception):
    """The scenario cannot run against this target (e.g. a restart with --bootstrap)."""


@dataclass(frozen=True)
class Context:
    bootstrap: str
    # The matrix started minibroker itself, with these `--override`s: it may start more.
    own_broker: bool
    broker_overrides: tuple[str, ...] = field(default_factory=tuple)
    # The Kafka release minibroker emulates (--kafka-version); None: the default, the newest.
    kafka_version: str | None = None


Scenario = Callable[[Context, str], None]


def one_line(text: str, limit: int = 200) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first if len(first) <= limit else first[: limit - 1] + "…"


def run(client: str, op: str, bootstrap: str, **fields: Any) -> dict[str, Any]:
    """Run one job; a failed result or a crashed program becomes CellFailed."""
    job = {"op": op, "bootstrap": bootstrap, **fields}
    try:
        result = run_client(client, job, keep_stderr=True)
    except ClientRunError as exc:
        raise CellFailed(f"{op}: {one_line(str(exc))}", str(exc)) from exc
    if not result.get("ok"):
        detail = f"{result.get('traceback', '')}\nstderr:\n{result.get('stderr', '')}"
        raise CellFailed(f"{op}: {one_line(str(result.get('error')))}", detail)
    return result


def check(condition: bool, reason: str) -> None:
    if not condition:
        raise CellFailed(reason)


def produce(client: str, bootstrap: str, topic: str, records: list[dict[str, Any]], **job: Any):
    result = run(client, "produce", bootstrap, topic=topic, records=records, **job)
    check(
        len(result["results"]) == len(records),
        f"produce: {len(result['results'])} acknowledgements for {len(records)} records",
    )
    return result


def consume(client: str, bootstrap: str, topic: str, count: int, **job: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "topic": topic,
        "count": count,
        "from": "earliest",
        "timeout_ms": CONSUME_TIMEOUT_MS,
        "group": None,
        **job,
    }
    result = run(client, "consume", bootstrap, **fields)
    got = len(result["records"])
    if got != count and not job.get("expect_timeout"):
        raise CellFailed(f"consume: {got} of {count} records", f"stderr:\n{result['stderr']}")
    return result


def values(records: list[dict[str, Any]]) -> list[bytes | None]:
    return [unb64(r["value"]) for r in records]


def record(key: bytes | None, value: bytes | None, *headers: tuple[str, bytes | None]):
    return {"key": b64(key), "value": b64(value), "headers": [[n, b64(v)] for n, v in headers]}


def comparable(record: dict[str, Any], client: str) -> tuple[Any, ...]:
    headers = [tuple(h) for h in record.get("headers") or []]
    if not CAPABILITIES[client].header_order:
        headers.sort()
    return record["key"], record["value"], headers


def check_round_trip(client: str, sent: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    check(
        [r["offset"] for r in got] == list(range(len(sent))),
        f"consumed offsets {[r['offset'] for r in got]}, expected 0..{len(sent) - 1}",
    )
    for index, (before, after) in enumerate(zip(sent, got, strict=True)):
        check(
            comparable(before, client) == comparable(after, client),
            f"record {index} came back as {comparable(after, client)!r}, sent "
            f"{comparable(before, client)!r}",
        )


# --- scenarios -----------------------------------------------------------------------------


def connect_and_metadata(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("meta", client)
    tools.create_topic(ctx.bootstrap, topic, partitions=3)
    result = run(client, "metadata", ctx.bootstrap, topics=[topic])
    brokers = {b["id"] for b in result["brokers"]}
    check(bool(brokers), "metadata: no brokers")
    check(all(b["host"] and b["port"] > 0 for b in result["brokers"]), "metadata: broker address")
    described = [t for t in result["topics"] if t["name"] == topic]
    check(len(described) == 1, f"metadata: topic {topic} missing")
    (topic_answer,) = described
    check(topic_answer["error"] is None, f"metadata: {topic_answer['error']}")
    leaders = {p["partition"]: p["leader"] for p in topic_answer["partitions"]}
    check(sorted(leaders) == [0, 1, 2], f"metadata: partitions {sorted(leaders)}")
    check(set(leaders.values()) <= brokers, f"metadata: leaders {leaders} not among {brokers}")


def codec_records() -> list[dict[str, Any]]:
    return [
        record(b"key-1", b"plain value"),
        record(b"key-2", b"\x00\x01binary\xff" * 20),
        record(b"k" * 100, b"compressible " * 200),
    ]


def codec_scenario(codec: str) -> Scenario:
    def produce_and_consume(ctx: Context, client: str) -> None:
        topic = tools.unique_topic(f"codec-{codec}", client)
        tools.create_topic(ctx.bootstrap, topic)
        sent = codec_records()
        produce(client, ctx.bootstrap, topic, sent, compression=codec)
        got = consume(client, ctx.bootstrap, topic, len(sent))["records"]
        check_round_trip(client, sent, got)
        # A client may leave a batch uncompressed when compression would not shrink it
        # (librdkafka does), but the compressible record's batch must carry the codec.
        stored = {
            tools.CODEC_NAMES[batch.compression]
            for batch in tools.stored_batches(ctx.bootstrap, topic)
        }
        check(stored - {"none"} == {codec} - {"none"}, f"stored batches use {sorted(stored)}")

    produce_and_consume.__doc__ = f"produce and consume with {codec}"
    return produce_and_consume


# kcat puts header values on its command line (text only) and sends an empty key as null.
TEXT_HEADERS_ONLY = {"kcat"}


def headers_keys_tombstones(ctx: Context, client: str) -> None:
    caps = CAPABILITIES[client]
    topic = tools.unique_topic("records", client)
    tools.create_topic(ctx.bootstrap, topic)
    sent = [
        record(None, b"no key"),
        record(b"deleted", None),
        record(b"h", b"v", ("trace", b"abc"), ("span", b"1"), ("trace", b"again")),
    ]
    if client not in TEXT_HEADERS_ONLY:
        sent.append(record(b"", b"empty key", ("bin", b"\x00\xff\x7f"), ("zero", b"")))
    if caps.null_header_values:
        sent.append(record(b"null-header", b"v", ("empty", None)))
    produce(client, ctx.bootstrap, topic, sent)
    got = consume(client, ctx.bootstrap, topic, len(sent))["records"]
    check_round_trip(client, sent, got)


def one_mebibyte_values(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("large", client)
    tools.create_topic(ctx.bootstrap, topic, configs={"max.message.bytes": str(LARGE_LIMIT)})
    sent_values = [bytes([i]) * LARGE_VALUE_BYTES for i in (1, 2)]
    sent = [record(b"big", value) for value in sent_values]
    produce(client, ctx.bootstrap, topic, sent, config=LARGE_CONFIGS[client])
    got = consume(client, ctx.bootstrap, topic, len(sent))["records"]
    check(values(got) == sent_values, "1 MiB values came back different")


def log_append_time(ctx: Context, client: str) -> None:
    caps = CAPABILITIES[client]
    topic = tools.unique_topic("lat", client)
    tools.create_topic(ctx.bootstrap, topic, configs={"message.timestamp.type": "LogAppendTime"})
    sent = [record(None, b"stamped %d" % i) for i in range(3)]
    if caps.record_timestamps:
        for each in sent:
            each["timestamp"] = 1_000_000
    before = int(time.time() * 1000) - CLOCK_SLACK_MS
    produced = produce(client, ctx.bootstrap, topic, sent)
    after = int(time.time() * 1000) + CLOCK_SLACK_MS
    if caps.ack_timestamps:
        acked = [r["timestamp"] for r in produced["results"]]
        check(all(before <= t <= after for t in acked), f"acknowledged timestamps {acked}")
    got = consume(client, ctx.bootstrap, topic, len(sent))["records"]
    stamps = [r["timestamp"] for r in got]
    check(all(before <= t <= after for t in stamps), f"consumed timestamps {stamps}")
    types = {r["timestamp_type"] for r in got}
    check(types <= {"LogAppendTime", None}, f"consumed timestamp types {sorted(map(str, types))}")


def idempotent_producer(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("idem", client)
    tools.create_topic(ctx.bootstrap, topic)
    sent = [record(b"k%d" % i, b"v%d" % i) | {"partition": 0} for i in range(10)]
    produced = produce(client, ctx.bootstrap, topic, sent, idempotent=True)
    offsets = [r["offset"] for r in produced["results"]]
    check(offsets == list(range(10)), f"produce: offsets {offsets}")
    batches = tools.stored_batches(ctx.bootstrap, topic)
    check(
        all(batch.producer_id >= 0 for batch in batches),
        f"stored batches carry producer ids {sorted({b.producer_id for b in batches})}",
    )
    check(batches[0].base_sequence == 0, f"first sequence {batches[0].base_sequence}")
    got = consume(client, ctx.bootstrap, topic, len(sent))["records"]
    check_round_trip(client, sent, got)


GROUP_PARTITIONS = 2
# A member's budget: its JVM start, its join, the other member's join and its reads. Members
# stop as soon as they have read their partition's records, so this is only spent on failure.
GROUP_MEMBER_MS = 90_000
GROUP_JOIN_WAIT_S = 60.0
ONE_PARTITION_EACH = ([[0], [1]], [[1], [0]])


def group_values(records: list[dict[str, Any]]) -> list[int]:
    return sorted(int(value or b"-1") for value in values(records))


def put_numbers(bootstrap: str, topic: str, numbers: range) -> None:
    tools.put_records(
        bootstrap,
        topic,
        [SetupRecord(n % GROUP_PARTITIONS, str(n).encode()) for n in numbers],
    )


def consumer_group(ctx: Context, client: str) -> None:
    """Join and commit alone; two members at once (a rebalance) resume from those commits and
    share what is new; a last member resumes where they committed."""
    join_rebalance_resume(ctx, client, "group", {})


# KIP-848's consumer group protocol, for the clients that have it.
CONSUMER_PROTOCOL_CONFIGS: dict[str, dict[str, Any]] = {
    "java-4.3": {"group.protocol": "consumer"},
    "java-3.9": {"group.protocol": "consumer"},
    "confluent-kafka": {"group.protocol": "consumer"},
}


def consumer_protocol_config(client: str) -> dict[str, Any]:
    if client not in CONSUMER_PROTOCOL_CONFIGS:
        raise NotApplicable(f"{client} has no KIP-848 consumer group protocol")
    return CONSUMER_PROTOCOL_CONFIGS[client]


def consumer_protocol_group(ctx: Context, client: str) -> None:
    """The `group` scenario with `group.protocol=consumer`: the broker assigns the partitions
    (ConsumerGroupHeartbeat) and revokes one from the first member before the second gets it."""
    join_rebalance_resume(ctx, client, "kip848", {"config": consumer_protocol_config(client)})


def join_rebalance_resume(ctx: Context, client: str, name: str, job: dict[str, Any]) -> None:
    """consumer_group's steps; `job` adds fields to every consume job (the group protocol)."""
    topic = tools.unique_topic(name, client)
    group = f"{topic}-g"
    tools.create_topic(ctx.bootstrap, topic, partitions=GROUP_PARTITIONS)
    put_numbers(ctx.bootstrap, topic, range(20))
    first = consume(client, ctx.bootstrap, topic, 20, group=group, **job)["records"]
    check(group_values(first) == list(range(20)), f"first member read {group_values(first)}")

    # Two members join; once the group is stable with one partition each, five new records
    # go to each partition: each member reads its five (then commits and leaves), and
    # together they read each new record once.
    members = [Background(group_member, client, ctx, topic, group, job) for _ in range(2)]
    try:
        wait_until(
            lambda: tools.stable_assignment(ctx.bootstrap, group, topic) in ONE_PARTITION_EACH,
            "two members to own one partition each",
            GROUP_JOIN_WAIT_S,
        )
    except CellFailed:
        put_numbers(ctx.bootstrap, topic, range(20, 30))  # lets the members finish
        for member in members:
            member.join()
        raise
    put_numbers(ctx.bootstrap, topic, range(20, 30))
    pair = [member.result() for member in members]
    read_from = sorted(sorted({r["partition"] for r in member["records"]}) for member in pair)
    check(read_from == [[0], [1]], f"the two members read from partitions {read_from}")
    together = sorted(group_values(pair[0]["records"]) + group_values(pair[1]["records"]))
    check(together == list(range(20, 30)), f"two members read {together} after the commits")

    put_numbers(ctx.bootstrap, topic, range(30, 34))
    last = consume(client, ctx.bootstrap, topic, 4, group=group, **job)["records"]
    check(group_values(last) == list(range(30, 34)), f"last member read {group_values(last)}")


def group_member(
    client: str, ctx: Context, topic: str, group: str, job: dict[str, Any]
) -> dict[str, Any]:
    return consume(
        client,
        ctx.bootstrap,
        topic,
        10 // GROUP_PARTITIONS,
        group=group,
        timeout_ms=GROUP_MEMBER_MS,
        **job,
    )


def consumer_protocol_admin(ctx: Context, client: str) -> None:
    """ListGroups and describe (ConsumerGroupDescribe) name a consumer-protocol group's type,
    state, assignor and member with its partitions."""
    topic = tools.unique_topic("kip848-admin", client)
    group = f"{topic}-g"
    tools.create_topic(ctx.bootstrap, topic, partitions=GROUP_PARTITIONS)
    with tools.consumer_protocol_member(ctx.bootstrap, group, topic, "kip848-member"):
        listed = run(client, "list_groups", ctx.bootstrap)["groups"]
        found = [(g.get("type"), g["state"]) for g in listed if g["group"] == group]
        check(found == [("consumer", "Stable")], f"list_groups: {group} listed as {found}")
        (described,) = run(client, "describe_groups", ctx.bootstrap, groups=[group])["groups"]
    check(described.get("error") is None, f"describe_groups: {described.get('error')}")
    shape = (described.get("type"), described.get("state"), described.get("protocol"))
    check(shape == ("consumer", "Stable", "uniform"), f"describe_groups: {shape}")
    members = [(m["client_id"], sorted(map(tuple, m["partitions"]))) for m in described["members"]]
    whole = sorted((topic, p) for p in range(GROUP_PARTITIONS))
    check(members == [("kip848-member", whole)], f"describe_groups: members {members}")


# ---- share groups (KIP-932) ------------------------------------------------------------------

SHARE_RECORDS = 20
RELEASED = b"7"  # released by whoever gets it: redelivered until the delivery count limit
SHARE_IDLE_MS = 4000
SHARE_TIMEOUT_MS = 40_000


def new_share_group(ctx: Context, name: str, client: str) -> tuple[str, str]:
    topic = tools.unique_topic(name, client)
    group = f"{topic}-sg"
    share_setup.share_group_from_earliest(ctx.bootstrap, topic, group)
    return topic, group


def share_consume(client: str, ctx: Context, topic: str, group: str, **job: Any) -> dict[str, Any]:
    fields = {"topic": topic, "group": group, "timeout_ms": SHARE_TIMEOUT_MS, **job}
    return run(client, "share_consume", ctx.bootstrap, **fields)


def accepted(records: list[dict[str, Any]]) -> list[bytes | None]:
    return [unb64(r["value"]) for r in records if r["ack"] == "ACCEPT"]


def share_group_scenario(ctx: Context, client: str) -> None:
    """Two share consumers of one group share one partition: every record is accepted exactly
    once, and the one each consumer releases is delivered again (delivery count 2 and more)
    until the delivery count limit archives it."""
    topic, group = new_share_group(ctx, "share", client)
    acks = {RELEASED.decode(): "RELEASE"}
    job = {"acks": acks, "idle_ms": SHARE_IDLE_MS, "config": SHARE_SMALL_POLLS.get(client, {})}
    consumers = [Background(share_consume, client, ctx, topic, group, **job) for _ in range(2)]
    share_setup.put_numbers(ctx.bootstrap, topic, range(SHARE_RECORDS))
    records = [r for consumer in consumers for r in consumer.result()["records"]]
    got = sorted(int(v or b"-1") for v in accepted(records))
    wanted = [n for n in range(SHARE_RECORDS) if str(n).encode() != RELEASED]
    check(got == wanted, f"accepted {got}")
    counts = sorted(r["delivery_count"] for r in records if unb64(r["value"]) == RELEASED)
    check(len(counts) > 1 and counts[0] == 1, f"the released record delivered {counts}")
    check(counts == list(range(1, len(counts) + 1)), f"released record's deliveries {counts}")


# A small max.poll.records, so that both consumers get records before either has them all.
SHARE_SMALL_POLLS: dict[str, dict[str, str]] = {
    "java-4.3": {"max.poll.records": "4"},
    "confluent-kafka": {"max.poll.records": "4"},
}


def share_offsets(client: str, ctx: Context, group: str) -> list[tuple[str, int, int, int]]:
    listed = run(client, "list_share_group_offsets", ctx.bootstrap, group=group)
    check(listed["error"] is None, f"list_share_group_offsets: {listed['error']}")
    found = [(o["topic"], o["partition"], o["start_offset"], o["lag"]) for o in listed["offsets"]]
    return sorted(found)


def share_group_admin(ctx: Context, client: str) -> None:
    """A share group that consumed and stopped is listed (type share, Empty) and described;
    its offsets show the start offset and lag; a reset to the earliest offset shows the lag
    of every record again; deleted offsets are gone."""
    topic, group = new_share_group(ctx, "share-admin", client)
    share_setup.put_numbers(ctx.bootstrap, topic, range(5))
    done = share_consume(client, ctx, topic, group, count=5)
    got = sorted(v or b"" for v in accepted(done["records"]))
    check(got == [b"0", b"1", b"2", b"3", b"4"], f"consumed {got}")
    wait_until(lambda: share_setup.share_group_is_empty(ctx.bootstrap, group), "the group to empty")
    listed = run(client, "list_share_groups", ctx.bootstrap)["groups"]
    found = [(g["type"], g["state"]) for g in listed if g["group"] == group]
    check(found == [("share", "Empty")], f"list_share_groups: {group} listed as {found}")
    (described,) = run(client, "describe_share_groups", ctx.bootstrap, groups=[group])["groups"]
    shape = (described["error_name"], described["state"], described["members"])
    check(shape == (None, "Empty", []), f"describe_share_groups: {shape}")
    check(share_offsets(client, ctx, group) == [(topic, 0, 5, 0)], "offsets after consuming")
    reset = run(
        client, "alter_share_group_offsets", ctx.bootstrap, group=group, offsets=[[topic, 0, 0]]
    )
    errors = [p["error_name"] for p in reset["partitions"]]
    check(errors == [None], f"alter_share_group_offsets: {errors}")
    check(share_offsets(client, ctx, group) == [(topic, 0, 0, 5)], "offsets after the reset")
    deleted = run(client, "delete_share_group_offsets", ctx.bootstrap, group=group, topics=[topic])
    errors = [t["error_name"] for t in deleted["topics"]]
    check(errors == [None], f"delete_share_group_offsets: {errors}")
    check(share_offsets(client, ctx, group) == [], "offsets after deleting them")


SEEK_BASE_MS = 1_600_000_000_000


def seek_by_timestamp(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("seek", client)
    tools.create_topic(ctx.bootstrap, topic)
    tools.put_records(
        ctx.bootstrap,
        topic,
        [SetupRecord(0, b"%d" % i, timestamp=SEEK_BASE_MS + 1000 * i) for i in range(10)],
    )
    target = SEEK_BASE_MS + 4500  # between records 4 and 5: the first at or after is 5
    found = run(client, "list_offsets", ctx.bootstrap, topic=topic, partitions=[0], spec=target)
    (answer,) = found["offsets"]
    check(answer.get("error") is None, f"list_offsets: {answer.get('error')}")
    check(answer["offset"] == 5, f"list_offsets: offset {answer['offset']} for the timestamp")
    check(
        answer["timestamp"] in (-1, SEEK_BASE_MS + 5000),
        f"list_offsets: timestamp {answer['timestamp']}",
    )
    got = consume(client, ctx.bootstrap, topic, 5, partitions=[0], **{"from": 5})["records"]
    check(values(got) == [b"%d" % i for i in range(5, 10)], f"read {values(got)} after seeking")


def admin_topics_and_configs(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("admin", client)
    spec = {"name": topic, "partitions": 2, "replication_factor": 1}
    created = run(
        client,
        "create_topics",
        ctx.bootstrap,
        topics=[spec | {"configs": {"retention.ms": "3600000"}}],
    )
    check_items(created["topics"], "create_topics")
    again = run(client, "create_topics", ctx.bootstrap, topics=[spec])["topics"][0]
    check(
        again["error_name"] == "TOPIC_ALREADY_EXISTS",
        f"create_topics again: {again['error_name']}",
    )
    meta = run(client, "metadata", ctx.bootstrap, topics=[topic])
    node = meta["brokers"][0]["id"]
    check_config(client, ctx, topic, "retention.ms", "3600000", broker=str(node))
    altered = run(
        client,
        "alter_configs",
        ctx.bootstrap,
        resources=[{"type": "topic", "name": topic, "set": {"retention.ms": "7200000"}}],
    )
    check_items(altered["resources"], "alter_configs")
    check_config(client, ctx, topic, "retention.ms", "7200000")
    grown = run(client, "create_partitions", ctx.bootstrap, topics=[{"name": topic, "count": 3}])
    check_items(grown["topics"], "create_partitions")
    meta = run(client, "metadata", ctx.bootstrap, topics=[topic])
    partitions = [p["partition"] for t in meta["topics"] for p in t["partitions"]]
    check(sorted(partitions) == [0, 1, 2], f"metadata after create_partitions: {partitions}")
    deleted = run(client, "delete_topics", ctx.bootstrap, topics=[topic])
    check_items(deleted["topics"], "delete_topics")


def check_items(items: list[dict[str, Any]], op: str) -> None:
    for item in items:
        check(item.get("error") is None, f"{op}: {item.get('error')}")


def check_config(
    client: str, ctx: Context, topic: str, name: str, value: str, broker: str | None = None
) -> None:
    resources = [{"type": "topic", "name": topic}]
    if broker is not None:
        resources.append({"type": "broker", "name": broker})
    described = run(client, "describe_configs", ctx.bootstrap, resources=resources)["resources"]
    check_items(described, "describe_configs")
    found = described[0]["configs"].get(name, {}).get("value")
    check(found == value, f"describe_configs: {name}={found}, expected {value}")
    if broker is not None:
        check(bool(described[1]["configs"]), "describe_configs: no broker configs")


def transactions(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("txn", client)
    tools.create_topic(ctx.bootstrap, topic)
    transactional_id = f"{topic}-tx"

    def in_transaction(names: list[bytes], outcome: str) -> None:
        sent = [record(None, name) | {"partition": 0} for name in names]
        produce(
            client,
            ctx.bootstrap,
            topic,
            sent,
            transactional_id=transactional_id,
            transaction=outcome,
        )

    in_transaction([b"c0", b"c1", b"c2"], "commit")
    in_transaction([b"a0", b"a1", b"a2"], "abort")
    in_transaction([b"c3", b"c4"], "commit")
    batches = tools.stored_batches(ctx.bootstrap, topic)
    check(
        any(batch.is_transactional for batch in batches),
        "produce with transactional_id stored no transactional batch",
    )
    got = consume(client, ctx.bootstrap, topic, 5, isolation="read_committed")["records"]
    expected = [b"c0", b"c1", b"c2", b"c3", b"c4"]
    check(values(got) == expected, f"read_committed read {values(got)}")
    everything = consume(client, ctx.bootstrap, topic, 8, isolation="read_uncommitted")
    expected = [b"c0", b"c1", b"c2", b"a0", b"a1", b"a2", b"c3", b"c4"]
    check(
        values(everything["records"]) == expected,
        f"read_uncommitted read {values(everything['records'])}",
    )


def hanging_transaction(ctx: Context, client: str) -> None:
    """A producer halts inside a transaction (long timeout): `kafka-transactions.sh abort`'s
    way (describeProducers, then abortTransaction, which sends WriteTxnMarkers to the partition
    leader) ends it, and read_committed readers get past it."""
    topic = tools.unique_topic("hanging", client)
    tools.create_topic(ctx.bootstrap, topic)
    sent = [record(None, b"h0") | {"partition": 0}]
    produce(
        client,
        ctx.bootstrap,
        topic,
        sent,
        transactional_id=f"{topic}-halted",
        transaction="open",
        transaction_timeout_ms=600_000,
    )
    committed = [record(None, b"c0") | {"partition": 0}]
    produce(client, ctx.bootstrap, topic, committed, transactional_id=f"{topic}-ok")
    held = consume(
        client,
        ctx.bootstrap,
        topic,
        1,
        isolation="read_committed",
        timeout_ms=2000,
        expect_timeout=True,
    )
    check(
        values(held["records"]) == [],
        f"read_committed read {values(held['records'])} past the open transaction",
    )
    run(client, "abort_hanging", ctx.bootstrap, topic=topic, partition=0, start_offset=0)
    got = consume(client, ctx.bootstrap, topic, 1, isolation="read_committed")["records"]
    check(values(got) == [b"c0"], f"read_committed read {values(got)} after the abort")


def streams_group_admin(ctx: Context, client: str) -> None:
    """A KIP-1071 streams group formed by raw StreamsGroupHeartbeat requests, as a Kafka
    Streams application's member sends them (no Kafka Streams client runs here): the client's
    admin lists it as a streams group and describes its topology, member and tasks."""
    app = tools.unique_topic("streams", client)
    source = f"{app}-in"
    with WireClient(ctx.bootstrap) as wire:
        streamshelp.create_topic(wire, source, 2)
        plan = streamshelp.topology(streamshelp.subtopology("0", [source]), epoch=1)
        member = streamshelp.Member(wire, app, plan, process_id="p1")
        deadline = time.monotonic() + 30
        while not member.active:  # past group.streams.initial.rebalance.delay.ms
            check(time.monotonic() < deadline, "the streams member never got its tasks")
            time.sleep(0.2)
            member.beat()
        listed = run(client, "list_streams_groups", ctx.bootstrap)["groups"]
        check(
            {"group": app, "state": "Stable", "type": "streams"} in listed,
            f"list_streams_groups: {app} not listed as a stable streams group in {listed}",
        )
        [group] = run(client, "describe_streams_groups", ctx.bootstrap, groups=[app])["groups"]
        check(group["error"] is None, f"describe_streams_groups: {group['error']}")
        [described] = group["members"]
        check(
            (described["member_id"], described["process_id"]) == (member.member_id, "p1"),
            f"describe_streams_groups: member {described}",
        )
        check(
            [sub["source_topics"] for sub in group["subtopologies"]] == [[source]],
            f"describe_streams_groups: subtopologies {group['subtopologies']}",
        )
        member.leave()


def delete_records(ctx: Context, client: str) -> None:
    topic = tools.unique_topic("delrec", client)
    tools.create_topic(ctx.bootstrap, topic)
    tools.put_records(ctx.bootstrap, topic, [SetupRecord(0, b"%d" % i) for i in range(10)])
    deleted = run(client, "delete_records", ctx.bootstrap, topic=topic, offsets={"0": 4})
    (answer,) = deleted["partitions"]
    check(answer.get("error") is None, f"delete_records: {answer.get('error')}")
    check(answer["low_watermark"] == 4, f"delete_records: low watermark {answer['low_watermark']}")
    got = consume(client, ctx.bootstrap, topic, 6)["records"]
    offsets = [r["offset"] for r in got]
    check(offsets == list(range(4, 10)), f"read offsets {offsets} after deleting before 4")


# ---- ACLs and client quotas (the matrix broker's MATRIX_SETTINGS, tests/compat/target.py) ----


def acl(resource_type: str, name: str, principal: str, operation: str, **fields: str):
    """A binding as the harness's ACL ops take it (Kafka's enum names)."""
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "principal": principal,
        "operation": operation,
        "pattern_type": "LITERAL",
        "host": "*",
        "permission_type": "ALLOW",
        **fields,
    }


ACL_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


def acl_keys(*bindings: dict[str, Any]) -> list[tuple[str, ...]]:
    return sorted(tuple(binding[field] for field in ACL_FIELDS) for binding in bindings)


def acls_scenario(ctx: Context, client: str) -> None:
    """A principal and names of the cell's own (no other cell's resources gain ACLs, which
    with allow.everyone.if.no.acl.found leaves them open): a literal topic, a prefixed topic
    and a group DENY binding are created, described by principal, by a MATCH filter on a
    topic name and by a PREFIXED one; the prefixed binding is deleted, then the rest."""
    name = tools.unique_topic("acls", client)
    principal = f"User:{name}"
    literal = acl("TOPIC", name, principal, "WRITE")
    prefixed = acl("TOPIC", f"{name}-", principal, "READ", pattern_type="PREFIXED")
    group = acl("GROUP", f"{name}-g", principal, "READ", permission_type="DENY")
    created = run(client, "create_acls", ctx.bootstrap, acls=[literal, prefixed, group])
    check_items(created["acls"], "create_acls")

    def described(**acl_filter: str) -> list[tuple[str, ...]]:
        answer = run(
            client, "describe_acls", ctx.bootstrap, filter={"principal": principal, **acl_filter}
        )
        check(answer.get("error") is None, f"describe_acls {acl_filter}: {answer.get('error')}")
        return acl_keys(*answer["acls"])

    check(described() == acl_keys(literal, prefixed, group), f"described {described()}")
    matched = described(resource_type="TOPIC", resource_name=f"{name}-1", pattern_type="MATCH")
    check(matched == acl_keys(prefixed), f"MATCH {name}-1 described {matched}")
    by_prefix = described(resource_type="TOPIC", pattern_type="PREFIXED")
    check(by_prefix == acl_keys(prefixed), f"PREFIXED described {by_prefix}")

    def deleted(acl_filter: dict[str, str]) -> list[tuple[str, ...]]:
        (answer,) = run(
            client, "delete_acls", ctx.bootstrap, filters=[{"principal": principal, **acl_filter}]
        )["filters"]
        check(answer.get("error") is None, f"delete_acls {acl_filter}: {answer.get('error')}")
        check_items(answer["acls"], "delete_acls")
        return acl_keys(*answer["acls"])

    removed = deleted({"resource_type": "TOPIC", "pattern_type": "PREFIXED"})
    check(removed == acl_keys(prefixed), f"delete_acls PREFIXED deleted {removed}")
    check(described() == acl_keys(literal, group), f"after deleting, described {described()}")
    removed = deleted({})
    check(removed == acl_keys(literal, group), f"delete_acls by principal deleted {removed}")
    check(described() == [], f"after deleting all, described {described()}")


QUOTA_BYTES_PER_S = 1 << 20
QUOTA_RECORD_BYTES = 100 << 10
QUOTA_RECORDS = 50  # about 5 MiB: 5 s at the quota, of which a window's worth may burst
CLIENT_ID_SETTING = {
    "java-4.3": "client.id",
    "java-3.9": "client.id",
    "kafka-python-3": "client_id",
    "kafka-python-2": "client_id",
    "aiokafka": "client_id",
    "confluent-kafka": "client.id",
    "kcat": "client.id",
    "kafkajs": "clientId",
}


def quota_throttle(ctx: Context, client: str) -> None:
    """A producer_byte_rate quota of 1 MiB/s on the cell's own client id slows a producer
    sending 5 MiB, one record at a time, to at least half the time the quota allows (a lower
    bound: the broker held it back; the first window's worth may pass at once), measured by
    the records' LogAppendTime where the client reports it (else around the client's run: kcat),
    and the client reports a throttle time where it exposes one
    (CAPABILITIES[client].throttle_time). kafkajs puts a send's records in one batch, hence
    one record per send (produce_paced) for every client."""
    caps = CAPABILITIES[client]
    topic = tools.unique_topic("quota", client)
    configs = {"max.message.bytes": str(2 << 20), "message.timestamp.type": "LogAppendTime"}
    tools.create_topic(ctx.bootstrap, topic, configs=configs)
    tools.set_produce_quota(ctx.bootstrap, topic, QUOTA_BYTES_PER_S)
    value = b"q" * QUOTA_RECORD_BYTES  # text: kcat sends one line per record
    sent = [record(None, value) | {"partition": 0} for _ in range(QUOTA_RECORDS)]
    started = time.monotonic()
    produced = run(
        client,
        "produce_paced",
        ctx.bootstrap,
        topic=topic,
        records=sent,
        interval_ms=0,
        config={CLIENT_ID_SETTING[client]: topic},
        timeout_ms=25_000,  # 5 s at the quota; a stuck client fails sooner
    )
    elapsed = time.monotonic() - started
    check(len(produced["results"]) == QUOTA_RECORDS, "produce: not every record acknowledged")
    if caps.ack_timestamps:
        appended = [r["timestamp"] for r in produced["results"]]
        elapsed = (max(appended) - min(appended)) / 1000
    at_quota = QUOTA_RECORDS * QUOTA_RECORD_BYTES / QUOTA_BYTES_PER_S
    check(elapsed >= at_quota / 2, f"sent {at_quota:.1f} s of quota in {elapsed:.1f} s")
    if caps.throttle_time:
        throttled = produced.get("throttle_time_ms_max")
        check(bool(throttled), f"the client reports a throttle time of {throttled} ms")


# Consumers commit as they go, and (as every client does with auto-commit on) before giving
# up their partitions in a rebalance: a client may rebalance when it loses every broker
# (Java 4's metadata rebootstrap), which must not replay records.
AUTO_COMMIT: dict[str, dict[str, Any]] = {
    "java-4.3": {"enable.auto.commit": "true", "auto.commit.interval.ms": "200"},
    "java-3.9": {"enable.auto.commit": "true", "auto.commit.interval.ms": "200"},
    "kafka-python-3": {"enable_auto_commit": True, "auto_commit_interval_ms": 200},
    "kafka-python-2": {"enable_auto_commit": True, "auto_commit_interval_ms": 200},
    "aiokafka": {"enable_auto_commit": True, "auto_commit_interval_ms": 200},
    "confluent-kafka": {"enable.auto.commit": True, "auto.commit.interval.ms": 200},
    "kcat": {"enable.auto.commit": "true", "auto.commit.interval.ms": "200"},
    "kafkajs": {},  # a group consumer commits automatically
}
RESTART_RECORDS = 60
RESTART_INTERVAL_MS = 50
WAIT_S = 60.0


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    """Poll `condition` until it holds; CellFailed naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise CellFailed(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.1)


def restart_mid_stream(ctx: Context, client: str) -> None:
    """A group consumer and an idempotent producer sending one record every 50 ms both run
    while the broker restarts (SIGTERM, then the same port and data): each record is stored
    once and read once."""
    if not ctx.own_broker:
        raise NotApplicable("needs the broker the matrix starts itself (not --bootstrap)")
    with OwnBroker(ctx.broker_overrides) as broker:
        bootstrap = broker.bootstrap
        topic = tools.unique_topic("restart", client)
        group = f"{topic}-g"
        tools.create_topic(bootstrap, topic, partitions=2)
        reader = Background(
            consume,
            client,
            bootstrap,
            topic,
            RESTART_RECORDS,
            group=group,
            config=AUTO_COMMIT[client],
            timeout_ms=120_000,
            keep_going=True,  # kcat's -E; without it kcat exits once all brokers are down
        )
        wait_until(lambda: tools.group_is_stable(bootstrap, group), "the consumer to join")
        sent = [record(b"k%d" % i, b"%d" % i) for i in range(RESTART_RECORDS)]
        writer = Background(
            run,
            client,
            "produce_paced",
            bootstrap,
            topic=topic,
            records=sent,
            interval_ms=RESTART_INTERVAL_MS,
            idempotent=True,
            timeout_ms=90_000,
        )
        wait_until(
            lambda: tools.stored_count(bootstrap, topic, 2) >= RESTART_RECORDS // 4,
            "the first records",
        )
        if not writer.running():
            raise CellFailed("inconclusive: the producer finished before the restart")
        broker.restart()
        produced, consumed = writer.result(), reader.result()
        stored = tools.stored_count(bootstrap, topic, 2)
    check(len(produced["results"]) == RESTART_RECORDS, "produce: not every record acknowledged")
    numbers = sorted(int(v or b"-1") for v in values(consumed["records"]))
    missing = sorted(set(range(RESTART_RECORDS)) - set(numbers))
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    if missing or twice:
        raise CellFailed(
            f"consumer: missing {missing}, read twice {twice}",
            f"consumer stderr:\n{consumed.get('stderr', '')}",
        )
    check(stored == RESTART_RECORDS, f"{stored} records stored for {RESTART_RECORDS} sent")


def crash_mid_stream(ctx: Context, client: str) -> None:
    """An idempotent producer sends a record every 50 ms while the broker is killed (SIGKILL,
    no clean shutdown) and started again on the same port and data: every acknowledged record
    is stored once, and the client reads each back once."""
    if not ctx.own_broker:
        raise NotApplicable("needs the broker the matrix starts itself (not --bootstrap)")
    with OwnBroker(ctx.broker_overrides) as broker:
        bootstrap = broker.bootstrap
        topic = tools.unique_topic("crash", client)
        tools.create_topic(bootstrap, topic, partitions=2)
        sent = [record(b"k%d" % i, b"%d" % i) for i in range(RESTART_RECORDS)]
        writer = Background(
            run,
            client,
            "produce_paced",
            bootstrap,
            topic=topic,
            records=sent,
            interval_ms=RESTART_INTERVAL_MS,
            idempotent=True,
            timeout_ms=90_000,
        )
        wait_until(
            lambda: tools.stored_count(bootstrap, topic, 2) >= RESTART_RECORDS // 4,
            "the first records",
        )
        if not writer.running():
            raise CellFailed("inconclusive: the producer finished before the crash")
        broker.restart(crash=True)
        produced = writer.result()
        stored = tools.stored_count(bootstrap, topic, 2)
        consumed = consume(client, bootstrap, topic, RESTART_RECORDS, expect_timeout=True)
    check(len(produced["results"]) == RESTART_RECORDS, "produce: not every record acknowledged")
    numbers = sorted(int(v or b"-1") for v in values(consumed["records"]))
    missing = sorted(set(range(RESTART_RECORDS)) - set(numbers))
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    if missing or twice:
        raise CellFailed(f"read back: missing {missing}, stored twice {twice}")
    check(stored == RESTART_RECORDS, f"{stored} records stored for {RESTART_RECORDS} sent")


REPLICATED_RECORDS = 40


def replication(ctx: Context, client: str) -> None:
    """An idempotent acks=all producer sends a record every 50 ms to an RF-3 topic
    (min.insync.replicas=2) of a 3-node cluster while the partition's leader stops: another
    in-sync replica leads, every record is acknowledged, stored once on both remaining
    replicas, and the client reads each back once, in order."""
    if not ctx.own_broker:
        raise NotApplicable("needs the 3-node cluster the matrix starts itself (not --bootstrap)")
    with own_cluster(ctx.broker_overrides) as cluster:
        bootstrap = cluster.bootstrap_servers
        topic = tools.unique_topic("replication", client)
        tools.create_topic(
            bootstrap, topic, configs={"min.insync.replicas": "2"}, replication_factor=3
        )
        cluster.wait_in_sync(topic)
        old_leader = cluster.leader(topic, 0)
        sent = [record(b"k", b"%d" % i) | {"partition": 0} for i in range(REPLICATED_RECORDS)]
        writer = Background(
            run,
            client,
            "produce_paced",
            bootstrap,
            topic=topic,
            records=sent,
            interval_ms=RESTART_INTERVAL_MS,
            idempotent=True,
            acks="all",
            timeout_ms=90_000,
        )
        wait_until(
            lambda: cluster.high_watermark(topic, 0) >= REPLICATED_RECORDS // 4,
            "the first records",
        )
        if not writer.running():
            writer.result()  # its failure, if it failed
            raise CellFailed("inconclusive: the producer finished before the leader stopped")
        cluster.stop_node(old_leader)
        new_leader = cluster.leader(topic, 0)
        produced = writer.result()
        offsets = [r["offset"] for r in produced["results"]]
        check(offsets == list(range(REPLICATED_RECORDS)), f"produce: offsets {offsets}")
        got = consume(client, cluster.bootstrap_servers, topic, REPLICATED_RECORDS)["records"]
        check_round_trip(client, sent, got)
        sent_values = values(sent)
        for node in sorted(set(cluster.replicas(topic, 0)) - {old_leader}):
            stored = [r.value for r in cluster.replica_records(node, topic, 0)]
            check(stored == sent_values, f"node {node} stores {len(stored)} records")
    check(new_leader not in (old_leader, -1), f"leader {new_leader} after node {old_leader}")


class Background:
    """Run `function(*args, **kwargs)` on a thread; `result()` joins and re-raises."""

    def __init__(self, function: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any):
        self._outcome: list[Any] = []
        self._thread = threading.Thread(target=self._run, args=(function, args, kwargs))
        self._thread.start()

    def _run(self, function: Callable[..., Any], args: Any, kwargs: Any) -> None:
        try:
            self._outcome.append(function(*args, **kwargs))
        except BaseException as exc:  # handed to the thread that calls result()
            self._outcome.append(exc)

    def running(self) -> bool:
        return self._thread.is_alive()

    def join(self) -> None:
        self._thread.join()

    def result(self) -> dict[str, Any]:
        self._thread.join()
        (outcome,) = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        return cast(dict[str, Any], outcome)


SCENARIOS: dict[str, tuple[str, Scenario]] = {
    "connect-metadata": ("connect and metadata", connect_and_metadata),
    **{
        f"codec-{codec}": (f"produce/consume {codec}", codec_scenario(codec))
        for codec in tools.CODEC_NAMES
    },
    "headers-keys-tombstones": ("headers, null keys, tombstones", headers_keys_tombstones),
    "large-values": ("1 MiB values", one_mebibyte_values),
    "log-append-time": ("LogAppendTime topic", log_append_time),
    "idempotent": ("idempotent producer", idempotent_producer),
    "group": ("group join, rebalance, commit, resume", consumer_group),
    "consumer-protocol": (
        "KIP-848 consumer group: join, rebalance, commit, resume",
        consumer_protocol_group,
    ),
    "consumer-protocol-admin": ("KIP-848 consumer group: list, describe", consumer_protocol_admin),
    "share-group": ("KIP-932 share group: shared partition, release", share_group_scenario),
    "share-group-admin": ("KIP-932 share group: list, describe, offsets", share_group_admin),
    "seek-timestamp": ("seek by timestamp", seek_by_timestamp),
    "admin": ("admin topics and configs", admin_topics_and_configs),
    "transactions": ("transactions commit/abort, read_committed", transactions),
    "hanging-transaction": ("abort a hanging transaction (admin)", hanging_transaction),
    "streams-group-admin": ("KIP-1071 streams group: list, describe", streams_group_admin),
    "delete-records": ("DeleteRecords", delete_records),
    "acls": ("ACLs: create, describe (MATCH, PREFIXED), delete", acls_scenario),
    "quota-throttle": ("produce quota throttles the producer", quota_throttle),
    "restart": ("broker restart mid-stream", restart_mid_stream),
    "crash": ("broker crash (SIGKILL) mid-stream", crash_mid_stream),
    "replication": ("RF-3 acks=all across a leader stop (3 nodes)", replication),
}
