"""Replication in an in-process cluster (docs/guides/clusters.md): the Python API of
`KafkaCluster` for replicas, the ISR, leaders and faults between nodes."""

from minibroker.testing import KafkaCluster


def test_replication_api():
    with KafkaCluster(nodes=3, config={"replica.lag.time.max.ms": 1000}) as cluster:
        cluster.create_topic(
            "orders", partitions=3, replication_factor=3, config={"min.insync.replicas": 2}
        )
        replicas = cluster.replicas("orders", 0)  # e.g. [2, 3, 1]: the preferred leader first
        assert sorted(replicas) == [1, 2, 3]
        cluster.wait_in_sync("orders")  # every live replica in the ISR at the log end
        assert cluster.leader("orders", 0) == replicas[0]
        assert sorted(cluster.isr("orders", 0)) == [1, 2, 3]

        cluster.produce("orders", b"created", partition=0)
        cluster.wait_in_sync("orders")
        assert cluster.high_watermark("orders", 0) == 1
        follower = replicas[-1]
        assert [r.value for r in cluster.replica_records(follower, "orders", 0)] == [b"created"]
        assert cluster.replica_end_offsets("orders", 0) == {1: 1, 2: 1, 3: 1}  # {node: log end}

        cluster.pause_replication(follower, "orders")  # stops fetching: falls out of the ISR
        cluster.resume_replication(follower, "orders")
        cluster.isolate_node(follower)  # cut off from the other nodes: fenced, ISRs shrink
        cluster.reconnect_node(follower)
        cluster.cut_link(replicas[0], follower)  # a partial partition: only these two
        cluster.heal_link(replicas[0], follower)
        cluster.crash_node(follower)  # power loss: what it had not fsynced is gone
        cluster.start_node(follower)  # back as after an unclean shutdown: it catches up
        cluster.wait_in_sync("orders")
        assert cluster.replica_end_offsets("orders", 0)[follower] == 1
