"""Every real client against minibroker: codecs, keys, tombstones, headers, 1 MiB values,
many partitions, LogAppendTime, and a broker restart between produce and consume.

Each client produces with its own program and reads its records back with the same client
(clients by scenarios; the installs are cached outside the repository).
"""

from __future__ import annotations

import base64
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minibroker.testing.threaded import ThreadedBroker
from tests.clients.runner import CAPABILITIES, CLIENTS, run_ok
from tests.wire import WireClient

pytestmark = pytest.mark.clients

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
LARGE_VALUE_BYTES = 1 << 20
LARGE_LIMIT = str(3 * LARGE_VALUE_BYTES)
_topic_numbers = itertools.count()


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _topic(prefix: str, client: str) -> str:
    return f"{prefix}-{client.replace('.', '_')}-{next(_topic_numbers)}"


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    settings = {"message.max.bytes": LARGE_LIMIT, "num.partitions": "1"}
    data_dir = tmp_path_factory.mktemp("clients") / "data"
    with ThreadedBroker(data_dir=data_dir, settings=settings) as running:
        yield running


def _create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    from minibroker.protocol.api_keys import ApiKey
    from minibroker.protocol.errors import ErrorCode

    with WireClient(bootstrap) as client:
        response = client.call(
            ApiKey.CreateTopics,
            5,
            topics=[
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            timeout_ms=5000,
            validate_only=False,
        )
    assert response.topics[0].error_code == ErrorCode.NO_ERROR


def _sample_records(client: str) -> list[dict[str, Any]]:
    caps = CAPABILITIES[client]
    records: list[dict[str, Any]] = [
        {"key": b64(b"key-1"), "value": b64(b"plain value"), "headers": []},
        {"key": None, "value": b64(b"no key"), "headers": []},
        {"key": b64(b"deleted"), "value": None, "headers": []},
        {
            "key": b64(b"with-headers"),
            "value": b64(b"\x00\x01binary\xff" * 20),
            "headers": [["trace", b64(b"abc")], ["span", b64(b"1")]],
        },
        {"key": b64(b"k" * 100), "value": b64(b"compressible " * 200), "headers": []},
    ]
    if caps.null_header_values:
        records[3]["headers"].append(["empty", None])
    return records


def _produce(client: str, bootstrap: str, topic: str, records: list[dict[str, Any]], **job: Any):
    return run_ok(
        client,
        {"op": "produce", "bootstrap": bootstrap, "topic": topic, "records": records, **job},
    )


def _consume(client: str, bootstrap: str, topic: str, count: int, **job: Any) -> dict[str, Any]:
    return run_ok(
        client,
        {
            "op": "consume",
            "bootstrap": bootstrap,
            "topic": topic,
            "count": count,
            "from": "earliest",
            "timeout_ms": 20_000,
            "group": None if CAPABILITIES[client].consume_without_group else f"g-{topic}",
            **job,
        },
    )


def _comparable(record: dict[str, Any], client: str) -> tuple[Any, ...]:
    headers = [tuple(h) for h in record["headers"]]
    if not CAPABILITIES[client].header_order:
        headers.sort()
    return record["key"], record["value"], headers


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", CLIENTS)
def test_produce_and_consume_with_codec(
    shared_broker: ThreadedBroker, client: str, codec: str
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic(f"codec-{codec}", client)
    _create_topic(bootstrap, topic)
    records = _sample_records(client)
    produced = _produce(client, bootstrap, topic, records, compression=codec)
    offsets = sorted(result["offset"] for result in produced["results"])
    assert offsets == list(range(len(records)))
    consumed = _consume(client, bootstrap, topic, len(records))["records"]
    assert [r["offset"] for r in consumed] == list(range(len(records)))
    assert [_comparable(r, client) for r in consumed] == [
        _comparable({"headers": [], **r}, client) for r in records
    ]
    # A client may leave a batch uncompressed when compression would not shrink it
    # (librdkafka does), but the compressible record's batch must carry the codec.
    stored_codecs = _stored_codecs(shared_broker, topic) - {"none"}
    assert stored_codecs == ({codec} - {"none"}), f"{client} stored {stored_codecs}"


def _stored_codecs(broker: ThreadedBroker, topic: str) -> set[str]:
    from minibroker.records.batch import BatchHeader, split_batches

    assert broker.broker is not None
    partition = broker.broker.cluster.partition(topic, 0)
    assert partition is not None
    data = partition.log.read(0, 1 << 24)
    names = ["none", "gzip", "snappy", "lz4", "zstd"]
    return {names[BatchHeader.parse(batch).compression] for batch in split_batches(data)}


LARGE_CONFIGS: dict[str, dict[str, Any]] = {
    "java-4.3": {"max.request.size": LARGE_LIMIT},
    "java-3.9": {"max.request.size": LARGE_LIMIT},
    "kafka-python-3": {"max_request_size": int(LARGE_LIMIT)},
    "kafka-python-2": {"max_request_size": int(LARGE_LIMIT)},
    "aiokafka": {"max_request_size": int(LARGE_LIMIT)},
    "confluent-kafka": {"message.max.bytes": LARGE_LIMIT},
    "kcat": {"message.max.bytes": LARGE_LIMIT},
    "kafkajs": {},
}


@pytest.mark.parametrize("client", CLIENTS)
def test_one_mebibyte_values(shared_broker: ThreadedBroker, client: str) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic("large", client)
    _create_topic(bootstrap, topic)
    values = [bytes([i]) * LARGE_VALUE_BYTES for i in (1, 2)]
    records = [{"key": b64(b"big"), "value": b64(v), "headers": []} for v in values]
    _produce(client, bootstrap, topic, records, config=LARGE_CONFIGS[client])
    consumed = _consume(client, bootstrap, topic, 2)["records"]
    assert [base64.b64decode(r["value"]) for r in consumed] == values


@pytest.mark.parametrize("client", CLIENTS)
def test_many_partitions(shared_broker: ThreadedBroker, client: str) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic("parts", client)
    partitions = 8
    _create_topic(bootstrap, topic, partitions)
    records = [
        {"key": b64(b"k%d" % i), "value": b64(b"v%d" % i), "headers": [], "partition": i % 8}
        for i in range(40)
    ]
    produced = _produce(client, bootstrap, topic, records)
    assert [r["partition"] for r in produced["results"]] == [i % 8 for i in range(40)]
    consumed = _consume(client, bootstrap, topic, 40)["records"]
    by_partition: dict[int, list[int]] = {}
    for record in consumed:
        by_partition.setdefault(record["partition"], []).append(record["offset"])
        assert base64.b64decode(record["value"]) == b"v%d" % (
            record["partition"] + 8 * record["offset"]
        )
    assert {p: sorted(o) for p, o in by_partition.items()} == {p: list(range(5)) for p in range(8)}


@pytest.mark.parametrize("client", CLIENTS)
def test_log_append_time_topic(shared_broker: ThreadedBroker, client: str) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = _topic("lat", client)
    _create_topic(bootstrap, topic, **{"message.timestamp.type": "LogAppendTime"})
    records = [{"key": None, "value": b64(b"stamped"), "headers": []} for _ in range(3)]
    if CAPABILITIES[client].record_timestamps:
        for record in records:
            record["timestamp"] = 1_000_000
    before = int(time.time() * 1000)
    produced = _produce(client, bootstrap, topic, records)
    after = int(time.time() * 1000)
    if CAPABILITIES[client].ack_timestamps:
        for result in produced["results"]:
            assert before <= result["timestamp"] <= after
    consumed = _consume(client, bootstrap, topic, 3)["records"]
    for record in consumed:
        assert before <= record["timestamp"] <= after
        assert record["timestamp_type"] in ("LogAppendTime", None)
        if client.startswith(("java", "confluent", "kafka-python", "aiokafka")):
            assert record["timestamp_type"] == "LogAppendTime"


@pytest.mark.parametrize("client", CLIENTS)
def test_restart_between_produce_and_consume(tmp_path: Path, client: str) -> None:
    with ThreadedBroker(data_dir=tmp_path / "data") as running:
        topic = _topic("restart", client)
        _create_topic(running.bootstrap_servers, topic, 2)
        records = [
            {"key": b64(b"k%d" % i), "value": b64(b"v%d" % i), "headers": [], "partition": i % 2}
            for i in range(20)
        ]
        produced = _produce(client, running.bootstrap_servers, topic, records, compression="gzip")
        running.restart()
        consumed = _consume(client, running.bootstrap_servers, topic, 20)["records"]
    sent = {(r["partition"], r["offset"]): r for r in produced["results"]}
    assert len(sent) == 20
    got = {(r["partition"], r["offset"]): base64.b64decode(r["value"]) for r in consumed}
    assert got == {
        (result["partition"], result["offset"]): b"v%d" % index
        for index, result in enumerate(produced["results"])
    }
