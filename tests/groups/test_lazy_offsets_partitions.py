"""On disk, `__consumer_offsets` partitions get their directories when first used; the last
one at once (it carries the partition count and topic id across a restart)."""

from __future__ import annotations

from pathlib import Path

from minibroker.config import BrokerConfig
from minibroker.groups.coordinator import OffsetCommit
from minibroker.internal.topic import partition_for
from minibroker.log.lazy import is_created
from minibroker.protocol.errors import ErrorCode
from minibroker.server.broker import Broker

OFFSETS = "__consumer_offsets"
PARTITIONS = 10


async def started(data_dir: Path) -> Broker:
    values = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(data_dir),
        "offsets.topic.num.partitions": str(PARTITIONS),
    }
    broker = Broker(BrokerConfig(values))
    await broker.start()
    return broker


def offsets_directories(data_dir: Path) -> set[int]:
    return {int(p.name.rsplit("-", 1)[1]) for p in data_dir.glob(f"{OFFSETS}-*")}


async def test_partitions_are_created_when_first_used_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    broker = await started(data_dir)
    broker.cluster.create_topic("t", 1)
    broker.groups.ensure_offsets_topic()
    topic = broker.cluster.topics[OFFSETS]
    topic_id = topic.topic_id
    assert [p.index for p in topic.partitions] == list(range(PARTITIONS))
    assert offsets_directories(data_dir) == {PARTITIONS - 1}

    outcome = broker.groups.commit_offsets("g", "", None, -1, [OffsetCommit("t", 0, 7, -1, "")])
    assert outcome == [ErrorCode.NO_ERROR]
    used = partition_for("g", PARTITIONS)
    assert offsets_directories(data_dir) == {used, PARTITIONS - 1}
    await broker.stop()

    restarted = await started(data_dir)
    try:
        topic = restarted.cluster.topics[OFFSETS]
        assert topic.topic_id == topic_id
        assert [p.index for p in topic.partitions] == list(range(PARTITIONS))
        assert [is_created(p.log) for p in topic.partitions] == [
            index in (used, PARTITIONS - 1) for index in range(PARTITIONS)
        ]
        [fetched] = restarted.groups.fetch_offsets("g", [("t", [0])])
        assert fetched.offset == 7
        assert offsets_directories(data_dir) == {used, PARTITIONS - 1}
        # Any use of a partition's log creates its directory, as an eager creation would.
        other = next(i for i in range(PARTITIONS) if i not in (used, PARTITIONS - 1))
        assert topic.partitions[other].log.log_end_offset == 0
        assert other in offsets_directories(data_dir)
    finally:
        await restarted.stop()


async def test_in_memory_partitions_are_created_at_once() -> None:
    broker = Broker(BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"}), in_memory=True)
    await broker.start()
    try:
        broker.groups.ensure_offsets_topic()
        assert all(is_created(p.log) for p in broker.cluster.topics[OFFSETS].partitions)
    finally:
        await broker.stop()
