"""Old clients' offset requests against a broker emulating Kafka 2.8, as those clients run:
kafka-python 2 pinned to Kafka 0.8.1 (OffsetCommit v0, OffsetFetch v0, ListOffsets v0,
Metadata v0, no ApiVersions) and to 0.8.2 (OffsetCommit/OffsetFetch v1), and kcat with
`api.version.request=false` and `broker.version.fallback=0.9.0` (ListOffsets v0)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from minibroker.testing import KafkaBroker

from .install import install_kafka_python_2, install_kcat

pytestmark = pytest.mark.clients

TOPIC = "old-offsets"

# Commits offset 2 on partition 1 for the group, reads it back and the end offset; prints JSON.
KAFKA_PYTHON_2_COMMIT = """
import json, sys
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
bootstrap, version = sys.argv[1], tuple(int(p) for p in sys.argv[2].split("."))
consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kp2-" + sys.argv[2],
                         api_version=version, enable_auto_commit=False)
tp = TopicPartition(sys.argv[3], 1)
consumer.assign([tp])
consumer.commit({tp: OffsetAndMetadata(2, "", -1)})
print(json.dumps({"committed": consumer.committed(tp),
                  "end": consumer.end_offsets([tp])[tp]}))
consumer.close()
"""


@pytest.fixture(scope="module")
def broker() -> Iterator[KafkaBroker]:
    with KafkaBroker(
        config={"minibroker.emulate.kafka.version": "2.8"}, storage="memory"
    ) as running:
        running.create_topic(TOPIC, partitions=2)
        for value in ("a", "b", "c"):
            running.produce(TOPIC, value, partition=1)
        yield running


@pytest.mark.parametrize("pinned", ["0.8.1", "0.8.2"])
def test_kafka_python_2_commits_and_reads_offsets(broker: KafkaBroker, pinned: str) -> None:
    python = install_kafka_python_2().argv[0]
    done = subprocess.run(
        [python, "-c", KAFKA_PYTHON_2_COMMIT, broker.bootstrap_servers, pinned, TOPIC],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"committed": 2, "end": 3}
    group = f"kp2-{pinned}"
    # v0 commits went to the emulated ZooKeeper, v1 commits to the group coordinator
    assert broker.committed_offsets(group) == ({} if pinned == "0.8.1" else {(TOPIC, 1): 2})


def test_kcat_queries_offsets_with_list_offsets_v0(broker: KafkaBroker) -> None:
    kcat = install_kcat().argv[-1]
    done = subprocess.run(
        [
            kcat,
            "-b",
            broker.bootstrap_servers,
            "-X",
            "api.version.request=false",
            "-X",
            "broker.version.fallback=0.9.0",
            "-d",
            "protocol",
            "-Q",
            "-t",
            f"{TOPIC}:1:-1",
            "-t",
            f"{TOPIC}:0:-2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Sent ListOffsetsRequest (v0" in done.stderr
    assert sorted(done.stdout.split("\n")) == ["", f"{TOPIC} [0] offset 0", f"{TOPIC} [1] offset 3"]
