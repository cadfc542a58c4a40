"""Set-up for the share-group scenarios (KIP-932), beside tools.py: a share group whose share
partitions start at the earliest offset (the group config `share.auto.offset.reset`, set with
confluent-kafka's admin in this process), and whether a share group has no members left (a
raw ShareGroupDescribe)."""

from __future__ import annotations

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from minibroker.protocol.api_keys import ApiKey
from tests.compat import tools
from tests.wire import WireClient


def share_group_from_earliest(bootstrap: str, topic: str, group: str) -> None:
    """A new one-partition `topic`; `group`'s share partitions start at its earliest offset."""
    tools.create_topic(bootstrap, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": tools.QUIET})
    earliest = ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[earliest])
    futures = admin.incremental_alter_configs([resource], request_timeout=tools.SETUP_TIMEOUT_S)
    try:
        futures[resource].result(timeout=tools.SETUP_TIMEOUT_S)
    except KafkaException as exc:
        raise tools.SetupFailed(f"share.auto.offset.reset of {group}: {exc}") from exc


def share_group_is_empty(bootstrap: str, group: str) -> bool:
    with WireClient(bootstrap) as wire:
        described = wire.call(
            ApiKey.ShareGroupDescribe, 1, group_ids=[group], include_authorized_operations=False
        ).groups[0]
    return bool(described.error_code == 0 and described.group_state == "Empty")


def put_numbers(bootstrap: str, topic: str, numbers: range) -> None:
    """The numbers as values, one record each, in partition 0."""
    tools.put_records(bootstrap, topic, [tools.SetupRecord(0, str(n).encode()) for n in numbers])
