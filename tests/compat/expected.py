"""The one list of matrix cells that are not expected to pass, each with its reason.

- NOT_APPLICABLE: the client (or its harness program) cannot express the scenario; the cell
  is not run and shows `n/a` with the reason.
- KNOWN_FAILURES: the cell runs and is expected to fail (a minibroker gap, a client bug, or
  an interface another engineer is adding); it shows `fail (known)`. When one starts
  passing, the matrix reports it so that this list is kept current.

Every other cell must pass against minibroker (tests/compat/test_matrix.py).
"""

from __future__ import annotations

NO_CONSUMER_PROTOCOL = {
    "kafka-python-3": "kafka-python 3.0.12",
    "kafka-python-2": "kafka-python 2.3.3",
    "aiokafka": "aiokafka 0.14.0",
    "kcat": "kcat (Debian's librdkafka 2.0.2; librdkafka has it from 2.12)",
    "kafkajs": "kafkajs 2.2.4",
}

# KIP-932's share consumer: Java kafka-clients 4.x (KafkaShareConsumer) and confluent-kafka
# 2.16 (ShareConsumer) have one. kafka-clients 3.9 ships only the early-access
# KafkaShareConsumer of ShareGroupHeartbeat and ShareFetch v0, which Kafka 4.1+ (and
# minibroker) no longer serve.
NO_SHARE_CONSUMER = {
    "java-3.9": (
        "kafka-clients 3.9's KafkaShareConsumer is KIP-932's early access (ShareGroupHeartbeat "
        "and ShareFetch v0, which Kafka 4.1+ no longer serve)"
    ),
    "kafka-python-3": "kafka-python 3.0.12 has no share consumer",
    "kafka-python-2": "kafka-python 2.3.3 has no share consumer",
    "aiokafka": "aiokafka 0.14.0 has no share consumer",
    "kcat": "kcat (Debian's librdkafka 2.0.2) has no share consumer",
    "kafkajs": "kafkajs 2.2.4 has no share consumer",
}

# Aborting a hanging transaction (WriteTxnMarkers from an admin client, KIP-664): Java's Admin
# and kafka-python 3's admin have it; the harness's Java program for it (java/ClusterAdmin.java)
# is built for kafka-clients 4.x only.
NO_ABORT_TRANSACTION = {
    "java-3.9": "the harness's cluster-admin program (ClusterAdmin.java) is kafka-clients 4.x only",
    "kafka-python-2": "kafka-python 2.3.3 has no abort-transaction admin call",
    "aiokafka": "aiokafka 0.14.0 has no abort-transaction admin call",
    "confluent-kafka": "confluent-kafka 2.16.1 has no abort-transaction admin call",
    "kcat": "kcat has no admin API",
    "kafkajs": "kafkajs 2.2.4 has no abort-transaction admin call",
}

# Streams groups (KIP-1071) through an admin client: Java's Admin from 4.1 has the calls; the
# harness's program for them (java/StreamsClient.java) is built for kafka-clients 4.x only.
NO_STREAMS_GROUP_ADMIN = {
    "java-3.9": "kafka-clients 3.9 has no streams-group admin calls (Kafka 4.1+)",
    "kafka-python-3": "kafka-python 3.0.12 has no streams-group admin calls",
    "kafka-python-2": "kafka-python 2.3.3 has no streams-group admin calls",
    "aiokafka": "aiokafka 0.14.0 has no streams-group admin calls",
    "confluent-kafka": "confluent-kafka 2.16.1 has no streams-group admin calls",
    "kcat": "kcat has no admin API",
    "kafkajs": "kafkajs 2.2.4 has no streams-group admin calls",
}

NOT_APPLICABLE: dict[tuple[str, str], str] = {
    **{(client, "hanging-transaction"): reason for client, reason in NO_ABORT_TRANSACTION.items()},
    **{(client, "streams-group-admin"): why for client, why in NO_STREAMS_GROUP_ADMIN.items()},
    ("kcat", "transactions"): "kcat has no transactional producer",
    ("kcat", "acls"): "kcat has no admin API",
    ("aiokafka", "acls"): "aiokafka 0.14.0's AIOKafkaAdminClient has no ACL calls",
    ("kcat", "delete-records"): "kcat has no admin API",
    ("kcat", "replication"): (
        "kcat 1.7.1 cannot stream through the leader stop: fed one line every 50 ms on a pipe "
        "(the harness's produce_paced), it sends nothing until its stdin closes, then every "
        "record at once, so no record is in flight when the leader stops"
    ),
    ("kcat", "admin"): "kcat has no admin API",
    # KIP-848's consumer group protocol (ConsumerGroupHeartbeat): Java 4.x and librdkafka
    # 2.12+ have it; these clients speak only the classic JoinGroup/SyncGroup protocol.
    **{
        (client, "consumer-protocol"): f"{name} has no KIP-848 consumer group protocol"
        for client, name in NO_CONSUMER_PROTOCOL.items()
    },
    **{
        (client, "consumer-protocol-admin"): f"{name} has no KIP-848 consumer group protocol"
        for client, name in NO_CONSUMER_PROTOCOL.items()
        if client != "kafka-python-3"
    },
    **{(client, "share-group"): reason for client, reason in NO_SHARE_CONSUMER.items()},
    **{(client, "share-group-admin"): reason for client, reason in NO_SHARE_CONSUMER.items()},
    ("confluent-kafka", "share-group-admin"): (
        "confluent-kafka 2.16's AdminClient has no share-group calls (DescribeShareGroups, "
        "List/Alter/DeleteShareGroupOffsets), and its list_consumer_groups leaves share groups out"
    ),
    ("kafka-python-3", "consumer-protocol-admin"): (
        "kafka-python 3.0.12 has no KIP-848 admin: it describes groups with DescribeGroups only "
        "(no ConsumerGroupDescribe), which Kafka answers GROUP_ID_NOT_FOUND ('Group g is not a "
        "classic group.') for a consumer-protocol group, and lists no group types"
    ),
}

KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("java-3.9", "consumer-protocol"): (
        "Java 3.9's early-access consumer protocol (intermittent): a member sends OffsetFetch "
        "with the epoch it had before its last heartbeat's answer (STALE_MEMBER_EPOCH, as "
        "Kafka answers it), "
        "treats that as final ('the consumer is not part of the group anymore') and reads the "
        "partition from auto.offset.reset (earliest), not the commit: records read twice"
    ),
    ("kafka-python-2", "quota-throttle"): (
        "kafka-python 2.3.3: after Produce answers with a throttle time (it throttles itself, "
        "KIP-219) its sender sends nothing more: flush times out with records unsent, both "
        "socket queues empty (kafka-python 3 resumes)"
    ),
    ("kafka-python-3", "restart"): (
        "kafka-python 3.0.12 (intermittent): a group consumer's poll() raises "
        "KafkaConnectionError (111 ECONNREFUSED) when its coordinator lookup refreshes "
        "metadata while the broker is down"
    ),
}


# Scenarios that need what an emulated Kafka release (`--kafka-version`) did not serve to
# clients: (first release that served it, what).
NEEDS_RELEASE: dict[str, tuple[str, str]] = {
    "consumer-protocol": ("4.0", "the KIP-848 consumer group protocol"),
    "consumer-protocol-admin": ("4.0", "the KIP-848 consumer group protocol"),
    "share-group": ("4.1", "KIP-932 share groups"),
    "share-group-admin": ("4.1", "KIP-932 share groups"),
}


# Cells expected to fail against an emulated release older than the one named: (release,
# reason). A client bug that a real broker of those releases shows the same way.
_DESCRIBE_CLUSTER_V0 = (
    "3.7",
    "kafka-python 3.0.12's describe_cluster() reads DescribeCluster v1's EndpointType, which "
    "Kafka before 3.7 (DescribeCluster v0 only) does not send: KeyError",
)
KNOWN_FAILURES_BEFORE: dict[tuple[str, str], tuple[str, str]] = {
    ("kafka-python-3", "connect-metadata"): _DESCRIBE_CLUSTER_V0,
    ("kafka-python-3", "admin"): _DESCRIBE_CLUSTER_V0,
}


def _release_key(name: str) -> tuple[int, int]:
    major, minor = name.split(".")
    return int(major), int(minor)


def expectation(client: str, scenario: str, kafka_version: str | None = None) -> tuple[str, str]:
    """("pass" | "fail" | "n/a", reason) for one cell, against minibroker emulating
    `kafka_version` (None: the default, the newest)."""
    needed = NEEDS_RELEASE.get(scenario)
    if kafka_version and needed and _release_key(kafka_version) < _release_key(needed[0]):
        return "n/a", f"Kafka {kafka_version} did not serve {needed[1]} ({needed[0]}+)"
    before = KNOWN_FAILURES_BEFORE.get((client, scenario))
    if kafka_version and before and _release_key(kafka_version) < _release_key(before[0]):
        return "fail", before[1]
    if (client, scenario) in NOT_APPLICABLE:
        return "n/a", NOT_APPLICABLE[client, scenario]
    if (client, scenario) in KNOWN_FAILURES:
        return "fail", KNOWN_FAILURES[client, scenario]
    return "pass", ""
