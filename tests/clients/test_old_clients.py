"""Old clients against a broker emulating Kafka 2.8, as teams still run them: kafka-python 2
pinned to Kafka 0.10 (Produce v2 with message format v1, Fetch v2 down-converted, JoinGroup
v0), 0.11 and 2.5 (message format v2), and kcat with `api.version.request=false` and
`broker.version.fallback` 0.9.0 (no ApiVersions: Produce v1, message format v0), 0.10.0 and
0.11.0 (librdkafka still asks ApiVersions of a fallback release that had it) — each producing
with every codec it supports, then reading back in a consumer group that commits."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from minibroker.testing import ApiKey, KafkaBroker

from .install import install_kafka_python_2, install_kcat

pytestmark = pytest.mark.clients

MESSAGES = 20

# Produces MESSAGES records with the codec, then consumes them in a group and commits;
# prints what was read and what the group committed.
KAFKA_PYTHON_2_ROUND_TRIP = """
import json, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, version, topic, codec, count = sys.argv[1:6]
version, count = tuple(int(p) for p in version.split(".")), int(count)
producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=version,
                         compression_type=None if codec == "none" else codec, linger_ms=50)
for number in range(count):
    producer.send(topic, key=b"k%d" % number, value=b"v%d" % number)
producer.flush(30)
producer.close()
consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, api_version=version,
                         group_id="group-" + topic, auto_offset_reset="earliest",
                         enable_auto_commit=False, consumer_timeout_ms=15000)
read = []
for message in consumer:
    read.append([message.key.decode(), message.value.decode()])
    if len(read) == count:
        break
consumer.commit()
committed = consumer.committed(TopicPartition(topic, 0))
consumer.close()
print(json.dumps({"read": read, "committed": committed}))
"""


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(
        config={"minibroker.emulate.kafka.version": "2.8", "num.partitions": 1}
    ) as running:
        yield running


def _expected() -> list[list[str]]:
    return [[f"k{number}", f"v{number}"] for number in range(MESSAGES)]


@pytest.mark.parametrize(
    ("pinned", "codec"),
    [
        *(("0.10.0", codec) for codec in ("none", "gzip", "snappy", "lz4")),
        *(("0.11.0", codec) for codec in ("none", "gzip", "snappy", "lz4")),
        *(("2.5.0", codec) for codec in ("none", "gzip", "snappy", "lz4", "zstd")),
    ],
)
def test_kafka_python_2_pinned_produces_and_consumes_in_a_group(
    broker: KafkaBroker, pinned: str, codec: str
) -> None:
    python = install_kafka_python_2().argv[0]
    topic = f"kp2-{pinned.replace('.', '-')}-{codec}-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(
        [python, "-c", KAFKA_PYTHON_2_ROUND_TRIP, broker.bootstrap_servers, pinned, topic,
         codec, str(MESSAGES)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"read": _expected(), "committed": MESSAGES}
    assert broker.committed_offsets(f"group-{topic}") == {(topic, 0): MESSAGES}
    assert broker.values(topic) == [f"v{number}".encode() for number in range(MESSAGES)]
    produce_versions = {r.api_version for r in broker.requests(ApiKey.Produce, topic=topic)}
    fetch_versions = {r.api_version for r in broker.requests(ApiKey.Fetch, topic=topic)}
    if pinned == "0.10.0":  # message format v1 up-converted, v2 batches down-converted
        assert produce_versions == {2} and fetch_versions == {2}
    else:
        assert min(produce_versions) >= 3 and min(fetch_versions) >= 4


def _kcat(kcat: str, broker: KafkaBroker, fallback: str, *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [kcat, "-b", broker.bootstrap_servers, "-X", "api.version.request=false",
         "-X", f"broker.version.fallback={fallback}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("fallback", ["0.9.0", "0.10.0", "0.11.0"])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_kcat_without_api_versions_produces_and_consumes_in_a_group(
    broker: KafkaBroker, fallback: str, codec: str
) -> None:
    kcat = install_kcat().argv[-1]
    topic = f"kcat-{fallback.replace('.', '-')}-{codec}-{uuid.uuid4().hex[:6]}"
    lines = "".join(f"k{number}:v{number}\n" for number in range(MESSAGES))
    _kcat(kcat, broker, fallback, "-P", "-t", topic, "-K", ":", "-z", codec, stdin=lines)
    assert broker.values(topic) == [f"v{number}".encode() for number in range(MESSAGES)]
    [produce] = {r.api_version for r in broker.requests(ApiKey.Produce, topic=topic)}
    if fallback == "0.9.0":  # no ApiVersions in 0.9: Produce v1, message format v0
        assert produce == 1
    else:  # librdkafka asks ApiVersions of a fallback release that had it, then uses 2.8's
        assert 2 <= produce <= 9
    read = _kcat(
        kcat, broker, fallback, "-G", f"group-{topic}", "-o", "beginning", "-e",
        "-f", "%k=%s\n", "-X", "enable.auto.commit=true",
        "-X", "auto.commit.interval.ms=100", topic,
    )  # fmt: skip
    assert read.splitlines() == [f"k{number}=v{number}" for number in range(MESSAGES)]
    assert broker.committed_offsets(f"group-{topic}") == {(topic, 0): MESSAGES}
