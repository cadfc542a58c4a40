"""Topic and group names as Kafka validates them; no name reaches outside the data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from minibroker.log.partition import partition_directory_name
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.records.records import build_batch
from minibroker.testing.threaded import ThreadedBroker
from tests.wire import WireClient

HOSTILE_NAMES = [
    "../escape",
    "../../etc/passwd",
    "/tmp/absolute",
    "a/b",
    "a\\b",
    "nul\x00byte",
    ".",
    "..",
    "",
    "x" * 250,
    "x" * 10_000,
    "space name",
    "ünïcode",
]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    with ThreadedBroker(data_dir=tmp_path / "data") as running:
        yield tmp_path, running.bootstrap_servers


def _create(client: WireClient, *names: str) -> dict[str, int]:
    topics = [
        {"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        for n in names
    ]
    response = client.call(
        ApiKey.CreateTopics, 5, topics=topics, timeout_ms=5000, validate_only=False
    )
    return {topic.name: topic.error_code for topic in response.topics}


def _nothing_outside(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert not Path("/tmp/absolute-0").exists()
    for directory in (tmp_path / "data").iterdir():
        assert directory.resolve().parent == (tmp_path / "data").resolve()


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_create_topics_refuses_illegal_names(root: tuple[Path, str], name: str) -> None:
    tmp_path, address = root
    with WireClient(address) as client:
        assert _create(client, name) == {name: ErrorCode.INVALID_TOPIC_EXCEPTION}
    _nothing_outside(tmp_path)
    assert list((tmp_path / "data").glob("*-0")) == []


def test_metadata_does_not_auto_create_illegal_names(root: tuple[Path, str]) -> None:
    tmp_path, address = root
    with WireClient(address) as client:
        response = client.call(
            ApiKey.Metadata,
            4,
            topics=[{"name": name} for name in HOSTILE_NAMES],
            allow_auto_topic_creation=True,
        )
    assert {t.name: t.error_code for t in response.topics} == {
        name: ErrorCode.INVALID_TOPIC_EXCEPTION for name in HOSTILE_NAMES
    }
    _nothing_outside(tmp_path)
    assert list((tmp_path / "data").glob("*-0")) == []


def test_produce_to_an_illegal_name_creates_nothing(root: tuple[Path, str]) -> None:
    tmp_path, address = root
    batch = build_batch([(b"k", b"v", [], 0)])
    topic_data = [
        {"name": name, "partition_data": [{"index": 0, "records": batch}]}
        for name in ("../escape", "/tmp/absolute")
    ]
    with WireClient(address) as client:
        response = client.call(ApiKey.Produce, 7, acks=1, timeout_ms=1000, topic_data=topic_data)
    for topic in response.responses:
        assert topic.partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    _nothing_outside(tmp_path)


def test_longest_legal_name_is_accepted(root: tuple[Path, str]) -> None:
    tmp_path, address = root
    name = "n" * 249
    with WireClient(address) as client:
        assert _create(client, name) == {name: ErrorCode.NO_ERROR}
    assert (tmp_path / "data" / f"{name}-0").is_dir()


def test_period_and_underscore_collide_as_in_kafka(root: tuple[Path, str]) -> None:
    _, address = root
    with WireClient(address) as client:
        assert _create(client, "metrics.cpu") == {"metrics.cpu": ErrorCode.NO_ERROR}
        assert _create(client, "metrics_cpu") == {"metrics_cpu": ErrorCode.INVALID_TOPIC_EXCEPTION}
        assert _create(client, "metrics.cpu") == {"metrics.cpu": ErrorCode.TOPIC_ALREADY_EXISTS}
        response = client.call(
            ApiKey.Metadata, 4, topics=[{"name": "metrics_cpu"}], allow_auto_topic_creation=True
        )
    assert response.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("group_id", ["../../escape", "/tmp/absolute", "nul\x00byte", "g" * 5000])
def test_group_ids_are_not_paths(root: tuple[Path, str], group_id: str) -> None:
    """Kafka puts no limit on group id characters; they only ever key __consumer_offsets."""
    tmp_path, address = root
    with WireClient(address) as client:
        client.call(ApiKey.Metadata, 4, topics=[{"name": "t"}], allow_auto_topic_creation=True)
        partitions = [{"partition_index": 0, "committed_offset": 0, "committed_metadata": ""}]
        response = client.call(
            ApiKey.OffsetCommit,
            2,
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time_ms=-1,
            topics=[{"name": "t", "partitions": partitions}],
        )
        assert response.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        fetched = client.call(
            ApiKey.OffsetFetch,
            1,
            group_id=group_id,
            topics=[{"name": "t", "partition_indexes": [0]}],
        )
        assert fetched.topics[0].partitions[0].committed_offset == 0
    _nothing_outside(tmp_path)


def test_empty_group_id_is_invalid(root: tuple[Path, str]) -> None:
    _, address = root
    with WireClient(address) as client:
        response = client.call(
            ApiKey.JoinGroup,
            5,
            group_id="",
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[{"name": "range", "metadata": b""}],
        )
    assert response.error_code == ErrorCode.INVALID_GROUP_ID


@pytest.mark.parametrize("topic", ["..", ".", "", "a/b", "a\x00b"])
def test_the_log_layer_refuses_path_like_names(topic: str) -> None:
    with pytest.raises(ValueError):
        partition_directory_name(topic, 0)
