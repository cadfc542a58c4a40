"""Several log directories per node (`log.dirs`): placement, DescribeLogDirs, and moving a
partition (or a replica) between them with AlterReplicaLogDirs, from kafka-python 3's admin
client and over the wire."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.errors import ErrorCode
from minibroker.testing import KafkaBroker, KafkaCluster
from tests.wire import WireClient


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "a", tmp_path / "b"


def _partitions_by_dir(address: str) -> dict[str, set[tuple[str, int]]]:
    with WireClient(address) as client:
        response = client.call(ApiKey.DescribeLogDirs, 4, topics=None)
    return {
        result.log_dir: {
            (topic.name, partition.partition_index)
            for topic in result.topics
            for partition in topic.partitions
        }
        for result in response.results
    }


def _alter(address: str, path: str, topic: str, partition: int) -> int:
    with WireClient(address) as client:
        response = client.call(
            ApiKey.AlterReplicaLogDirs,
            2,
            dirs=[{"path": path, "topics": [{"name": topic, "partitions": [partition]}]}],
        )
    code: int = response.results[0].partitions[0].error_code
    return code


def _admin(bootstrap: str) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap)


def test_partitions_spread_over_log_dirs_and_move_between_them(tmp_path: Path) -> None:
    first, second = _dirs(tmp_path)
    config = {"log.dirs": f"{first},{second}"}
    with KafkaBroker(config=config) as broker:
        broker.create_topic("spread", partitions=4)
        for index in range(4):
            broker.produce("spread", f"v{index}", partition=index)
        placed = _partitions_by_dir(broker.bootstrap_servers)
        assert set(placed) == {str(first.resolve()), str(second.resolve())}
        assert len(placed[str(first.resolve())]) == 2
        assert len(placed[str(second.resolve())]) == 2
        source = next(path for path, held in placed.items() if ("spread", 0) in held)
        target = next(path for path in placed if path != source)

        admin = _admin(broker.bootstrap_servers)
        try:
            admin.alter_replica_log_dirs({("spread", 0, 1): target})
        finally:
            admin.close()
        moved = _partitions_by_dir(broker.bootstrap_servers)
        assert ("spread", 0) in moved[target]
        assert ("spread", 0) not in moved[source]
        assert (Path(target) / "spread-0").is_dir()
        assert not (Path(source) / "spread-0").exists()
        broker.produce("spread", "after-move", partition=0)
        assert broker.values("spread", partition=0) == [b"v0", b"after-move"]
        broker.restart()
        assert broker.values("spread", partition=0) == [b"v0", b"after-move"]
        assert ("spread", 0) in _partitions_by_dir(broker.bootstrap_servers)[target]


def test_alter_replica_log_dirs_refusals(tmp_path: Path) -> None:
    first, second = _dirs(tmp_path)
    with KafkaBroker(config={"log.dirs": f"{first},{second}"}) as broker:
        broker.create_topic("kept")
        address = broker.bootstrap_servers
        assert _alter(address, str(tmp_path / "elsewhere"), "kept", 0) == (
            ErrorCode.LOG_DIR_NOT_FOUND
        )
        assert _alter(address, str(second), "missing", 0) == ErrorCode.REPLICA_NOT_AVAILABLE
        held = _partitions_by_dir(address)
        here = next(path for path, partitions in held.items() if ("kept", 0) in partitions)
        assert _alter(address, here, "kept", 0) == ErrorCode.NO_ERROR
        assert ("kept", 0) in _partitions_by_dir(address)[here]


def test_a_replica_moves_between_its_nodes_replica_dirs(tmp_path: Path) -> None:
    first, second = _dirs(tmp_path)
    config = {"log.dirs": f"{first},{second}", "replica.lag.time.max.ms": 1000}
    with KafkaCluster(nodes=3, config=config) as cluster:
        cluster.create_topic("moving", partitions=2, assignments=[[1, 2], [1, 2]])
        for index in range(2):
            cluster.produce("moving", f"r{index}", partition=index)
        cluster.wait_in_sync("moving")
        node_dirs = [str((path / "nodes" / "2").resolve()) for path in (first, second)]
        held = _partitions_by_dir(cluster.address(2))
        assert set(node_dirs) <= set(held)
        source = next(path for path in node_dirs if ("moving", 0) in held[path])
        target = next(path for path in node_dirs if path != source)
        assert _alter(cluster.address(2), target, "moving", 0) == ErrorCode.NO_ERROR
        assert ("moving", 0) in _partitions_by_dir(cluster.address(2))[target]
        # the moved follower keeps replicating
        cluster.produce("moving", "later", partition=0)
        cluster.wait_in_sync("moving")
        assert [r.value for r in cluster.replica_records(2, "moving", 0)] == [b"r0", b"later"]
        # node 3 holds no replica of it
        assert _alter(cluster.address(3), target, "moving", 0) == ErrorCode.REPLICA_NOT_AVAILABLE
