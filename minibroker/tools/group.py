"""`minibroker group list|describe|reset-offsets|delete`, as kafka-consumer-groups: members,
committed offsets, log end offsets and lag per partition; offset resets planned (dry run, the
default) or committed (`--execute`) while the group is inactive. Through kafka-python's
KafkaAdminClient."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec, OffsetTimestamp
from kafka.structs import OffsetAndMetadata

from minibroker.tools.common import (
    EXIT_OK,
    ToolError,
    admin_client,
    describe_existing_topics,
    leaf_parser,
    non_negative,
    note,
    print_table,
    timestamp_ms,
)

NO_LEADER_EPOCH = -1
EMPTY_STATES = ("Empty", "Dead")

EXAMPLES = {
    "list": "  minibroker group list",
    "describe": "  minibroker group describe audit",
    "reset-offsets": (
        "  minibroker group reset-offsets audit --topic events --to-earliest\n"
        "  minibroker group reset-offsets audit --all-topics --to-datetime 2024-05-01T00:00:00Z"
        " --execute"
    ),
    "delete": "  minibroker group delete audit",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser(
        "group",
        help="list, describe and delete consumer groups; reset their offsets",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + "\n".join(EXAMPLES.values()),
    )
    actions = group.add_subparsers(dest="action", required=True)
    listing = leaf_parser(actions, "list", "list groups and their states", EXAMPLES["list"])
    listing.set_defaults(run=run_list)
    describe = leaf_parser(
        actions,
        "describe",
        "members, committed offsets, log end offsets and lag of a group",
        EXAMPLES["describe"],
    )
    describe.add_argument("group", metavar="GROUP")
    describe.set_defaults(run=run_describe)
    _reset_parser(actions)
    delete = leaf_parser(actions, "delete", "delete inactive groups", EXAMPLES["delete"])
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    delete.set_defaults(run=run_delete)


def _reset_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reset = leaf_parser(
        actions,
        "reset-offsets",
        "move an inactive group's committed offsets (a dry run unless --execute)",
        EXAMPLES["reset-offsets"],
    )
    reset.add_argument("group", metavar="GROUP")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC", help="(repeatable)")
    scope.add_argument(
        "--all-topics", action="store_true", help="every topic the group has offsets for"
    )
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="each partition's start")
    target.add_argument("--to-latest", action="store_true", help="each partition's end")
    target.add_argument(
        "--to-offset", type=non_negative, metavar="N", help="N, kept within start and end"
    )
    target.add_argument(
        "--to-datetime",
        metavar="MS|ISO",
        help="the first record at or after this time (ISO without a zone: UTC)",
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the plan only (default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.set_defaults(run=run_reset)


def run_list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        groups = sorted(admin.list_groups(), key=lambda item: str(item["group_id"]))
    rows = [
        [item["group_id"], item.get("group_state") or "-", item.get("group_type") or "-"]
        for item in groups
    ]
    print_table(["GROUP", "STATE", "TYPE"], rows)
    return EXIT_OK


@dataclass(frozen=True)
class GroupView:
    """What kafka-python can tell of a group: its state and type as ListGroups reports them,
    and its members from DescribeGroups (classic groups only: a KIP-848 `consumer` group
    needs ConsumerGroupDescribe, which kafka-python's admin client does not send)."""

    state: str
    kind: str
    members: list[dict[str, Any]]


def _group_view(admin: KafkaAdminClient, group: str) -> GroupView | None:
    """None when the broker knows no such group."""
    described: dict[str, Any] = admin.describe_groups([group])[group]
    listed = next((item for item in admin.list_groups() if item["group_id"] == group), None)
    if listed is None:
        if described["group_state"] == "Dead":
            return None
        listed = {}
    return GroupView(
        state=listed.get("group_state") or described["group_state"],
        kind=listed.get("group_type") or "classic",
        members=described["members"],
    )


def _existing_group(admin: KafkaAdminClient, group: str) -> GroupView:
    view = _group_view(admin, group)
    if view is None:
        raise ToolError(f"group '{group}' does not exist")
    return view


def _committed(admin: KafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    offsets = admin.list_group_offsets(group)[group]
    return {tp: int(meta.offset) for tp, meta in offsets.items() if meta.offset >= 0}


def _owners(members: list[dict[str, Any]]) -> dict[TopicPartition, dict[str, Any]]:
    """Which member each partition is assigned to."""
    owners = {}
    for member in members:
        assignment = member.get("member_assignment")
        for topic in assignment.get("assigned_partitions", []) if assignment else []:
            for index in topic["partitions"]:
                owners[TopicPartition(topic["topic"], index)] = member
    return owners


def run_describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        view = _existing_group(admin, args.group)
        committed = _committed(admin, args.group)
        owners = _owners(view.members)
        partitions = sorted(set(committed) | set(owners))
        ends = _offsets(admin, partitions, OffsetSpec.LATEST)
    classic = view.kind == "classic"
    members = len(view.members) if classic else "-"
    print(f"Group: {args.group}  State: {view.state}  Type: {view.kind}  Members: {members}")
    if not classic:
        note(
            f"members of a '{view.kind}' group are not shown (kafka-python has no "
            "ConsumerGroupDescribe); offsets and lag are"
        )
    rows = [_lag_row(tp, committed.get(tp), ends[tp], owners.get(tp)) for tp in partitions]
    header = ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"]
    print_table([*header, "CLIENT-ID", "HOST"], rows)
    return EXIT_OK


def _lag_row(
    tp: TopicPartition, current: int | None, end: int, member: dict[str, Any] | None
) -> list[object]:
    """A kafka-consumer-groups line: no committed offset shows `-` as offset and lag."""
    lag: object = "-" if current is None else max(end - current, 0)
    who = [member["member_id"], member["client_id"], member["client_host"]] if member else ["-"] * 3
    return [tp.topic, tp.partition, "-" if current is None else current, end, lag, *who]


def run_delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        results = admin.delete_groups(args.groups)
    for group in args.groups:
        outcome = results.get(group, "OK")
        if outcome == "GroupIdNotFoundError":
            raise ToolError(f"group '{group}' does not exist")
        if outcome == "NonEmptyGroupError":
            raise ToolError(f"group '{group}' has active members; stop them first")
        if outcome != "OK":
            raise ToolError(f"group '{group}': {outcome}")
        note(f"deleted group '{group}'")
    return EXIT_OK


def run_reset(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        view = _group_view(admin, args.group)
        state = view.state if view else "Dead"
        if args.execute and state not in EMPTY_STATES:
            raise ToolError(
                f"group '{args.group}' is {state}: offsets can only be reset while it has no "
                "members"
            )
        committed = _committed(admin, args.group)
        partitions = _reset_partitions(admin, args, committed)
        plan = _targets(admin, args, partitions)
        if args.execute:
            _commit(admin, args.group, plan)
    rows = [[tp.topic, tp.partition, committed.get(tp, "-"), plan[tp]] for tp in partitions]
    print_table(["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"], rows)
    if args.execute:
        note(f"committed new offsets of group '{args.group}' for {len(plan)} partition(s)")
    else:
        note("dry run: nothing committed (add --execute to commit these offsets)")
    return EXIT_OK


def _reset_partitions(
    admin: KafkaAdminClient, args: argparse.Namespace, committed: dict[TopicPartition, int]
) -> list[TopicPartition]:
    if args.all_topics:
        return sorted(committed)
    return [
        TopicPartition(topic["name"], partition["partition_index"])
        for topic in describe_existing_topics(admin, args.topic)
        for partition in sorted(topic["partitions"], key=lambda item: int(item["partition_index"]))
    ]


def _targets(
    admin: KafkaAdminClient, args: argparse.Namespace, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The new offset of each partition, inside [earliest, latest] as Kafka's tool keeps it."""
    if not partitions:
        return {}
    earliest = _offsets(admin, partitions, OffsetSpec.EARLIEST)
    latest = _offsets(admin, partitions, OffsetSpec.LATEST)
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_datetime:
        wanted = _offsets(admin, partitions, OffsetTimestamp(timestamp_ms(args.to_datetime)))
    else:
        wanted = dict.fromkeys(partitions, args.to_offset)
    return {tp: _clamp(wanted[tp], earliest[tp], latest[tp]) for tp in partitions}


def _offsets(
    admin: KafkaAdminClient, partitions: list[TopicPartition], spec: int
) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    found = admin.list_partition_offsets(dict.fromkeys(partitions, spec))
    return {tp: int(found[tp].offset) for tp in partitions}


def _clamp(offset: int, earliest: int, latest: int) -> int:
    """An offset past the end (or not found: -1, a time after the last record) is the end."""
    if offset < 0 or offset > latest:
        return latest
    return max(offset, earliest)


def _commit(admin: KafkaAdminClient, group: str, plan: dict[TopicPartition, int]) -> None:
    offsets = {tp: OffsetAndMetadata(offset, "", NO_LEADER_EPOCH) for tp, offset in plan.items()}
    for tp, error in admin.alter_group_offsets(group, offsets).items():
        if error.errno:
            raise ToolError(f"group '{group}' {tp.topic}-{tp.partition}: {error.__name__}")
