"""Client telemetry (KIP-714): GetTelemetrySubscriptions / PushTelemetry over the wire with
hand-built OTLP payloads, the testing API, and Java 4.3's and librdkafka's producers pushing
their metrics once a subscription asks for them."""

from __future__ import annotations

import asyncio
import base64
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import response_class, struct_type
from minibroker.protocol.errors import ErrorCode
from minibroker.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, compress
from minibroker.telemetry.manager import subscription_id
from minibroker.telemetry.otlp import OtlpError, decode_metrics_data
from minibroker.telemetry.subscriptions import Subscription
from minibroker.testing import AsyncKafkaBroker, KafkaBroker
from tests.clients.runner import run_ok
from tests.wire import WireClient, encode_request, request_frame

ZERO = uuid.UUID(int=0)

# -- a small OTLP (protobuf) writer -----------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fixed64(number: int, value: int) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<Q", value)


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", value)


def _key_value(key: str, value: str) -> bytes:
    return _field(1, key.encode()) + _field(2, _field(1, value.encode()))


def metrics_data(
    gauges: dict[str, float], counters: dict[str, int], attributes: dict[str, str]
) -> bytes:
    """MetricsData with one resource, one scope, gauges (double) and monotonic sums (int)."""
    attrs = b"".join(_field(7, _key_value(k, v)) for k, v in attributes.items())
    metrics = b""
    for name, value in gauges.items():
        point = attrs + _fixed64(3, 1_700_000_000_000_000_000) + _double(4, value)
        metrics += _field(2, _field(1, name.encode()) + _field(5, _field(1, point)))
    for name, count in counters.items():
        point = attrs + _fixed64(3, 1_700_000_000_000_000_000) + _fixed64(6, count)
        data = _field(1, point) + _varint(2 << 3) + _varint(1) + _varint(3 << 3) + _varint(1)
        metrics += _field(2, _field(1, name.encode()) + _field(7, data))
    resource = _field(1, _field(1, _key_value("client_id", "wire")))
    return _field(1, resource + _field(2, metrics))


PAYLOAD = metrics_data(
    {"org.apache.kafka.producer.record.queue.time.avg": 1.5},
    {"org.apache.kafka.producer.record.send.total": 42},
    {"topic": "orders"},
)

# -- wire helpers -----------------------------------------------------------------------------


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory", config={"telemetry.max.bytes": 4096}) as running:
        yield running


@pytest.fixture
def default_kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(storage="memory") as running:
        yield running


@pytest.fixture
def client(kafka: KafkaBroker) -> Iterator[WireClient]:
    with WireClient(kafka.bootstrap_servers) as wire:
        yield wire


def get(client: WireClient, instance: uuid.UUID = ZERO) -> Any:
    return client.call(ApiKey.GetTelemetrySubscriptions, 0, client_instance_id=instance)


def push(
    client: WireClient,
    instance: uuid.UUID,
    subscription: int,
    payload: bytes = PAYLOAD,
    compression: int = NONE,
    terminating: bool = False,
) -> int:
    response = client.call(
        ApiKey.PushTelemetry,
        0,
        client_instance_id=instance,
        subscription_id=subscription,
        terminating=terminating,
        compression_type=compression,
        metrics=payload,
    )
    code: int = response.error_code
    return code


# -- no subscription (Kafka's default) --------------------------------------------------------


def test_no_subscription_by_default(client: WireClient) -> None:
    first = get(client)
    assert first.error_code == ErrorCode.NO_ERROR
    assert first.client_instance_id not in (None, ZERO)
    assert first.requested_metrics == []
    assert first.push_interval_ms == 300_000
    assert first.accepted_compression_types == [ZSTD, LZ4, GZIP, SNAPPY]
    assert (first.telemetry_max_bytes, first.delta_temporality) == (4096, True)
    assert first.subscription_id == subscription_id([], 300_000, first.client_instance_id)
    again = get(client, first.client_instance_id)
    assert again.error_code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert (again.client_instance_id, again.requested_metrics) in ((None, []), (ZERO, []))
    assert get(client).client_instance_id != first.client_instance_id


# -- a subscription, pushes and their checks ---------------------------------------------------


def test_push_is_decoded(kafka: KafkaBroker, client: WireClient) -> None:
    kafka.set_telemetry_subscription(["org.apache.kafka.producer."], interval_ms=60_000)
    answer = get(client)
    assert (answer.requested_metrics, answer.push_interval_ms) == (
        ["org.apache.kafka.producer."],
        60_000,
    )
    instance = answer.client_instance_id
    assert push(client, instance, answer.subscription_id, compress(ZSTD, PAYLOAD), ZSTD) == 0
    queue_time, send_total = kafka.telemetry_metrics()
    assert queue_time.client_instance_id == instance
    assert (queue_time.name, queue_time.metric.kind, queue_time.value) == (
        "org.apache.kafka.producer.record.queue.time.avg",
        "gauge",
        1.5,
    )
    assert (send_total.name, send_total.metric.kind, send_total.value) == (
        "org.apache.kafka.producer.record.send.total",
        "sum",
        42,
    )
    assert send_total.metric.monotonic
    assert send_total.metric.points[0].attributes == {"topic": "orders"}
    assert send_total.metric.points[0].time_unix_nano == 1_700_000_000_000_000_000
    assert send_total.metric.resource == {"client_id": "wire"}
    assert [m.name for m in kafka.telemetry_metrics("org.apache.kafka.producer.record.send")] == [
        "org.apache.kafka.producer.record.send.total"
    ]
    # before the interval: throttled; a terminating push is accepted, then nothing more
    assert push(client, instance, answer.subscription_id) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert push(client, instance, answer.subscription_id, terminating=True) == 0
    assert push(client, instance, answer.subscription_id) == ErrorCode.INVALID_REQUEST
    assert len(kafka.telemetry_metrics()) == 4


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
def test_every_codec(kafka: KafkaBroker, client: WireClient, codec: int) -> None:
    kafka.set_telemetry_subscription(["*"], interval_ms=100)
    answer = get(client)
    assert answer.requested_metrics == ["*"]
    code = push(
        client, answer.client_instance_id, answer.subscription_id, compress(codec, PAYLOAD), codec
    )
    assert code == ErrorCode.NO_ERROR
    assert [m.value for m in kafka.telemetry_metrics()] == [1.5, 42]


def test_push_errors(kafka: KafkaBroker, client: WireClient) -> None:
    kafka.set_telemetry_subscription(["org.apache."], interval_ms=60_000)

    def fresh() -> tuple[uuid.UUID, int]:
        answer = get(client)
        return answer.client_instance_id, answer.subscription_id

    instance, subscription = fresh()
    assert push(client, ZERO, subscription) == ErrorCode.INVALID_REQUEST
    assert push(client, uuid.UUID(int=1), subscription) == ErrorCode.INVALID_REQUEST
    assert push(client, instance, subscription + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    # after UNKNOWN_SUBSCRIPTION_ID the client may ask again at once (Kafka: the push timer
    # is not reset by that request, so pushing again still waits for the interval)
    assert get(client, instance).error_code == ErrorCode.NO_ERROR
    assert push(client, instance, subscription) == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert push(client, *fresh(), compression=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert push(client, *fresh(), payload=b"\x00" * 5000) == ErrorCode.TELEMETRY_TOO_LARGE
    bomb = compress(GZIP, b"\x00" * 100_000)
    assert len(bomb) < 4096
    assert push(client, *fresh(), bomb, GZIP) == ErrorCode.TELEMETRY_TOO_LARGE
    assert push(client, *fresh(), b"\x0a\x05ab") == ErrorCode.INVALID_RECORD
    assert kafka.telemetry_metrics() == []


def test_an_unknown_instance_has_no_subscription_id(kafka: KafkaBroker, client: WireClient) -> None:
    kafka.set_telemetry_subscription(["org."])
    assert push(client, uuid.uuid4(), 12345) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID


def test_subscription_changes_and_matching(kafka: KafkaBroker, client: WireClient) -> None:
    first = get(client)
    assert first.requested_metrics == []
    kafka.set_telemetry_subscription(
        ["org.apache.kafka.consumer."], match={"client_id": "other.*"}, name="c"
    )
    kafka.set_telemetry_subscription(
        ["org.apache.kafka.admin."],
        match={"client_id": "wi.e", "client_source_address": r"127\.0\.0\.1"},
        name="a",
    )
    kafka.set_telemetry_subscription(["org.apache.kafka.producer."], interval_ms=5000, name="p")
    kafka.set_telemetry_subscription(
        ["org.apache.kafka.producer.node."], interval_ms=2000, name="q"
    )
    # a change makes the next request re-evaluate at once (not throttled), with a new id
    changed = get(client, first.client_instance_id)
    assert changed.error_code == ErrorCode.NO_ERROR
    assert changed.requested_metrics == [
        "org.apache.kafka.admin.",
        "org.apache.kafka.producer.",
        "org.apache.kafka.producer.node.",
    ]
    assert changed.push_interval_ms == 2000
    assert changed.subscription_id != first.subscription_id
    for name in ("a", "p", "q"):
        kafka.remove_telemetry_subscription(name)
    assert get(client, first.client_instance_id).requested_metrics == []


def test_subscription_checks(kafka: KafkaBroker) -> None:
    with pytest.raises(ValueError, match="interval must be between 100 and 3600000"):
        kafka.set_telemetry_subscription(["org."], interval_ms=50)
    with pytest.raises(ValueError, match="Illegal client matching pattern: colour=blue"):
        kafka.set_telemetry_subscription(["org."], match={"colour": "blue"})
    assert Subscription("s", ("a",), match={"client_id": "ab.*"}).matches({"client_id": "abc"})


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_otlp_decoder_only_decodes_or_refuses(data: bytes) -> None:
    """Invariant: any bytes give a list of metrics or OtlpError, nothing else."""
    try:
        metrics = decode_metrics_data(data)
    except OtlpError:
        return
    assert all(isinstance(m.name, str) for m in metrics)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60), st.integers(min_value=0, max_value=len(PAYLOAD)))
def test_otlp_decoder_on_damaged_payloads(noise: bytes, cut: int) -> None:
    """Invariant: a real payload cut short or with bytes spliced in never crashes the decoder."""
    for data in (PAYLOAD[:cut], PAYLOAD[:cut] + noise + PAYLOAD[cut:]):
        try:
            metrics = decode_metrics_data(data)
        except OtlpError:
            continue
        assert all(isinstance(m.name, str) for m in metrics)


def test_malformed_otlp() -> None:
    with pytest.raises(OtlpError):
        decode_metrics_data(b"\x0a\x10short")
    with pytest.raises(OtlpError):
        decode_metrics_data(b"\x0b")
    assert decode_metrics_data(b"") == []


# -- real clients -----------------------------------------------------------------------------


def produce_paced(client_name: str, bootstrap: str, count: int) -> None:
    record: dict[str, Any] = {
        "key": None,
        "value": base64.b64encode(b"v").decode(),
        "headers": [],
        "partition": 0,
    }
    result = run_ok(
        client_name,
        {
            "op": "produce_paced",
            "interval_ms": 100,
            "bootstrap": bootstrap,
            "topic": "t",
            "records": [record] * count,
        },
    )
    assert len(result["results"]) == count


def test_java_producer_pushes_its_metrics(default_kafka: KafkaBroker) -> None:
    default_kafka.create_topic("t")
    default_kafka.set_telemetry_subscription(["org.apache.kafka.producer."], interval_ms=500)
    produce_paced("java-4.3", default_kafka.bootstrap_servers, 20)
    sent = default_kafka.telemetry_metrics("org.apache.kafka.producer.topic.record.send.total")
    assert sent
    assert {m.client_id for m in sent} == {"producer-1"}
    assert all(m.metric.kind == "sum" and m.metric.monotonic for m in sent)
    assert {tuple(p.attributes.items()) for m in sent for p in m.metric.points} == {
        (("topic", "t"),)
    }
    # delta temporality: the pushed deltas add up to at most the records sent
    total = sum(m.value or 0 for m in sent)
    assert 1 <= total <= 20
    assert all(
        m.name.startswith("org.apache.kafka.producer.") for m in default_kafka.telemetry_metrics()
    )


def test_librdkafka_producer_pushes_its_metrics(default_kafka: KafkaBroker) -> None:
    default_kafka.create_topic("t")
    default_kafka.set_telemetry_subscription(["org.apache.kafka.producer.node."], interval_ms=500)
    produce_paced("confluent-kafka", default_kafka.bootstrap_servers, 20)
    latency = default_kafka.telemetry_metrics("org.apache.kafka.producer.node.request.latency.avg")
    assert latency
    assert all(m.metric.kind == "gauge" for m in latency)
    assert {p.attributes["node.id"] for m in latency for p in m.metric.points} == {1}
    assert {m.name for m in default_kafka.telemetry_metrics()} <= {
        "org.apache.kafka.producer.node.request.latency.avg",
        "org.apache.kafka.producer.node.request.latency.max",
    }


@pytest.mark.parametrize("client_name", ["java-4.3", "confluent-kafka"])
def test_clients_without_a_subscription_push_nothing(
    default_kafka: KafkaBroker, client_name: str
) -> None:
    default_kafka.create_topic("t")
    produce_paced(client_name, default_kafka.bootstrap_servers, 5)
    assert default_kafka.requests(ApiKey.GetTelemetrySubscriptions)
    assert default_kafka.requests(ApiKey.PushTelemetry) == []
    assert default_kafka.telemetry_metrics() == []


# -- CLIENT_METRICS config resources (how Kafka's tools set subscriptions) ----------------------

_IncResource = struct_type(ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource")
_IncConfig = struct_type(
    ApiKey.IncrementalAlterConfigs, "request", "AlterConfigsResource", "AlterableConfig"
)
_Describe = struct_type(ApiKey.DescribeConfigs, "request", "DescribeConfigsResource")
CLIENT_METRICS = 16
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def alter_subscription(
    client: WireClient, name: str, ops: list[tuple[str, int, str | None]]
) -> tuple[int, str | None]:
    response = client.call(
        ApiKey.IncrementalAlterConfigs,
        1,
        resources=[
            _IncResource(
                resource_type=CLIENT_METRICS,
                resource_name=name,
                configs=[_IncConfig(name=n, config_operation=op, value=v) for n, op, v in ops],
            )
        ],
        validate_only=False,
    )
    (result,) = response.responses
    return result.error_code, result.error_message


def describe_subscription(client: WireClient, name: str) -> Any:
    response = client.call(
        ApiKey.DescribeConfigs,
        4,
        resources=[
            _Describe(resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=None)
        ],
        include_synonyms=True,
        include_documentation=False,
    )
    (result,) = response.results
    return result


def test_client_metrics_resources(kafka: KafkaBroker, client: WireClient) -> None:
    ok = (ErrorCode.NO_ERROR, None)
    assert (
        alter_subscription(
            client,
            "producers",
            [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000")],
        )
        == ok
    )
    assert (
        alter_subscription(
            client, "producers", [("metrics", APPEND, "org.apache.kafka.consumer.,*x")]
        )
        == ok
    )
    assert alter_subscription(client, "producers", [("metrics", SUBTRACT, "*x")]) == ok
    answer = get(client)
    assert answer.requested_metrics == ["org.apache.kafka.consumer.", "org.apache.kafka.producer."]
    assert answer.push_interval_ms == 1000
    described = describe_subscription(client, "producers")
    assert described.error_code == ErrorCode.NO_ERROR
    assert [(c.name, c.value, c.config_source, c.read_only) for c in described.configs] == [
        ("interval.ms", "1000", 7, False),
        ("match", "", 5, False),
        ("metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.", 7, False),
    ]
    assert [c.value for c in describe_subscription(client, "none-such").configs] == [
        "300000",
        "",
        "",
    ]
    # deleting every config removes the subscription
    assert (
        alter_subscription(
            client, "producers", [("metrics", DELETE, None), ("interval.ms", DELETE, None)]
        )
        == ok
    )
    assert kafka.telemetry_metrics() == []
    assert get(client, answer.client_instance_id).requested_metrics == []


@pytest.mark.parametrize(
    ("name", "ops", "expected"),
    [
        (
            "",
            [("metrics", SET, "a")],
            (ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"),
        ),
        (
            "s",
            [("colour", SET, "blue")],
            (ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: colour"),
        ),
        (
            "s",
            [("interval.ms", SET, "10")],
            (
                ErrorCode.INVALID_REQUEST,
                "Invalid value 10 for interval.ms, interval must be between 100 and 3600000 "
                "(1 hour)",
            ),
        ),
        (
            "s",
            [("interval.ms", SET, "soon")],
            (
                ErrorCode.INVALID_CONFIG,
                "Invalid value soon for configuration interval.ms: Not a number of type INT",
            ),
        ),
        (
            "s",
            [("match", SET, "client_id")],
            (ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id"),
        ),
        (
            "s",
            [("interval.ms", APPEND, "5")],
            (
                ErrorCode.INVALID_CONFIG,
                "Can't APPEND to key interval.ms because its type is not LIST.",
            ),
        ),
    ],
)
def test_client_metrics_refusals(
    kafka: KafkaBroker,
    client: WireClient,
    name: str,
    ops: list[tuple[str, int, str | None]],
    expected: tuple[int, str],
) -> None:
    assert alter_subscription(client, name, ops) == expected
    assert get(client).requested_metrics == []


def test_subscriptions_survive_a_restart() -> None:
    with KafkaBroker() as kafka:
        kafka.set_telemetry_subscription(
            ["org.apache.kafka."], interval_ms=2000, match={"client_id": "wi.*"}
        )
        kafka.restart()
        with WireClient(kafka.bootstrap_servers) as wire:
            answer = get(wire)
    assert (answer.requested_metrics, answer.push_interval_ms) == (["org.apache.kafka."], 2000)


def test_java_admin_client_sets_a_subscription(default_kafka: KafkaBroker) -> None:
    default_kafka.create_topic("t")
    bootstrap = default_kafka.bootstrap_servers
    resource = {"type": "client_metrics", "name": "java-subscription"}
    changed = run_ok(
        "java-4.3",
        {
            "op": "alter_configs",
            "bootstrap": bootstrap,
            "resources": [
                {**resource, "set": {"metrics": "org.apache.kafka.producer.", "interval.ms": "500"}}
            ],
        },
    )
    assert changed["resources"][0]["error"] is None
    described = run_ok(
        "java-4.3", {"op": "describe_configs", "bootstrap": bootstrap, "resources": [resource]}
    )
    configs = described["resources"][0]["configs"]
    assert configs["interval.ms"] == {
        "value": "500",
        "source": "DYNAMIC_CLIENT_METRICS_CONFIG",
        "read_only": False,
        "sensitive": False,
    }
    produce_paced("java-4.3", bootstrap, 20)
    assert default_kafka.telemetry_metrics("org.apache.kafka.producer.record.send.total")


async def test_async_broker_api() -> None:
    """The same API on the event-loop flavour: a subscription set there reaches a client."""
    async with AsyncKafkaBroker(storage="memory") as kafka:
        kafka.set_telemetry_subscription(["org.apache.kafka.consumer."], interval_ms=1000)
        host, _, port = kafka.bootstrap_servers.partition(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        body = encode_request(ApiKey.GetTelemetrySubscriptions, 0, client_instance_id=ZERO)
        writer.write(request_frame(ApiKey.GetTelemetrySubscriptions, 0, 1, body))
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        frame = await reader.readexactly(size)
        writer.close()
        await writer.wait_closed()
        answer = response_class(ApiKey.GetTelemetrySubscriptions).decode(frame[5:], version=0)
        assert (answer.requested_metrics, answer.push_interval_ms) == (
            ["org.apache.kafka.consumer."],
            1000,
        )
        assert kafka.telemetry_metrics() == []
