"""A consumer group as Kafka's records (groups/consumer/persist.py): what `changes()` writes,
applied to a compacted log, always describes the group; `restore()` rebuilds it."""

from __future__ import annotations

import uuid

from minibroker.groups.consumer.model import ClassicInfo, ConsumerGroup, ConsumerMember, MemberState
from minibroker.groups.consumer.persist import changes, restore, snapshot, tombstones
from minibroker.groups.consumer_records import decode_consumer_group_record

T = uuid.UUID(int=7)


def apply(log: dict[bytes, bytes | None], records: list[tuple[bytes, bytes | None]]) -> None:
    """Compaction: the latest value per key, tombstones remove the key."""
    for key, value in records:
        if value is None:
            log.pop(key, None)
        else:
            log[key] = value


def group_of_two() -> ConsumerGroup:
    group = ConsumerGroup("g", group_epoch=3, assignment_epoch=3)
    for index, member_id in enumerate(("a", "b")):
        member = ConsumerMember(
            member_id, subscribed_topic_names=["t"], member_epoch=3, assigned={T: {index}}
        )
        group.add(member)
        group.target[member_id] = {T: {index}}
    return group


def test_changes_keep_the_log_equal_to_the_group() -> None:
    group = group_of_two()
    log: dict[bytes, bytes | None] = {}
    apply(log, changes(group))
    assert log == snapshot(group)
    a = group.members["a"]
    assert changes(group, a) == []  # a steady heartbeat writes nothing

    group.replace_owned(a, {T: {0}}, {T: {1}}, 3, MemberState.UNREVOKED_PARTITIONS)
    written = changes(group, a)
    assert len(written) == 1  # only a's current assignment
    apply(log, written)
    assert log == snapshot(group)

    group.remove("b")
    group.group_epoch = 4
    apply(log, changes(group, a))  # a member gone: everything compared, b tombstoned
    assert log == snapshot(group)

    apply(log, tombstones(group))
    assert log == {}


def test_restore_rebuilds_epochs_assignments_and_classic_members() -> None:
    group = group_of_two()
    group.members["b"].classic = ClassicInfo(10_000, [("range", b"\x00\x00")])
    group.members["b"].previous_member_epoch = 2
    records = {}
    for key, value in snapshot(group).items():
        decoded = decode_consumer_group_record(key, value)
        assert decoded.value is not None
        records[decoded.key] = decoded.value
    restored = restore("g", records)
    assert restored is not None
    assert (restored.group_epoch, restored.assignment_epoch) == (3, 3)
    assert {m: (x.member_epoch, x.assigned) for m, x in restored.members.items()} == {
        "a": (3, {T: {0}}),
        "b": (3, {T: {1}}),
    }
    assert restored.members["b"].previous_member_epoch == 2
    assert restored.members["b"].classic == ClassicInfo(10_000, [("range", b"\x00\x00")])
    assert restored.target == group.target
    assert restored.current_partition_epoch(T, 1) == 3
