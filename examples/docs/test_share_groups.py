"""Share groups in a test (docs/features/share-groups.md): the broker's view of a share group
and of one share partition, and ending every lock at once to check redelivery."""

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)


def test_share_partition_view(kafka_broker):
    kafka_broker.create_topic("jobs")
    for n in range(3):
        kafka_broker.produce("jobs", b"job-%d" % n)
    # A share group starts at the log end (`share.auto.offset.reset=latest`); read from the start.
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap_servers})
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, "workers", incremental_configs=[earliest])
    admin.incremental_alter_configs([resource])[resource].result(30)

    consumer = ShareConsumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": "workers",
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe(["jobs"])
    held = []
    while len(held) < 3:  # take the records without acknowledging them
        held.extend(m for m in consumer.poll(1.0) if m.error() is None)

    group = kafka_broker.share_group("workers")  # state, epochs, members and their partitions
    assert len(group.members) == 1
    state = kafka_broker.share_partition("workers", "jobs", 0)
    assert (state.start_offset, state.end_offset) == (0, 3)  # SPSO, one past the last acquired
    assert state.records[0].state == "ACQUIRED" and state.records[0].delivery_count == 1

    assert kafka_broker.expire_share_locks("workers") == 3  # no waiting for the lock duration
    assert kafka_broker.share_partition("workers", "jobs", 0).records[0].state == "AVAILABLE"
    consumer.close()
