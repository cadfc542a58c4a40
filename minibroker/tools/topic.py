"""`minibroker topic list|create|describe|delete|alter-config`, as kafka-topics and
kafka-configs do it: Metadata, CreateTopics, DeleteTopics, DescribeConfigs, ListOffsets and
IncrementalAlterConfigs through kafka-python's KafkaAdminClient."""

from __future__ import annotations

import argparse
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, OffsetSpec

from minibroker.tools.common import (
    EXIT_OK,
    EXIT_USAGE,
    ToolError,
    admin_client,
    broker_error,
    describe_existing_topics,
    key_values,
    leaf_parser,
    note,
    print_table,
)

TOPIC_ALREADY_EXISTS = 36

EXAMPLES = {
    "list": "  minibroker topic list",
    "create": "  minibroker topic create orders -p 3 -c retention.ms=86400000",
    "describe": "  minibroker topic describe orders\n  minibroker topic describe --all-configs",
    "delete": "  minibroker topic delete orders payments",
    "alter-config": (
        "  minibroker topic alter-config orders --set retention.ms=3600000 --delete cleanup.policy"
    ),
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topic = sub.add_parser(
        "topic",
        help="list, create, describe and delete topics; alter their configs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + "\n".join(EXAMPLES.values()),
    )
    actions = topic.add_subparsers(dest="action", required=True)
    leaf_parser(actions, "list", "list topic names", EXAMPLES["list"]).set_defaults(run=run_list)
    _create_parser(actions)
    _describe_parser(actions)
    delete = leaf_parser(actions, "delete", "delete topics", EXAMPLES["delete"])
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    delete.set_defaults(run=run_delete)
    _alter_config_parser(actions)


def _create_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    create = leaf_parser(actions, "create", "create a topic", EXAMPLES["create"])
    create.add_argument("topic", metavar="TOPIC")
    create.add_argument(
        "-p", "--partitions", type=int, default=-1, help="(default: the broker's num.partitions)"
    )
    create.add_argument(
        "-r",
        "--replication-factor",
        type=int,
        default=-1,
        help="(default: the broker's default.replication.factor)",
    )
    create.add_argument(
        "-c", "--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config"
    )
    create.set_defaults(run=run_create)


def _describe_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    describe = leaf_parser(
        actions,
        "describe",
        "partitions (leader, replicas, ISR, start and end offsets) and configs of topics",
        EXAMPLES["describe"],
    )
    describe.add_argument("topics", nargs="*", metavar="TOPIC", help="(default: every topic)")
    describe.add_argument(
        "--all-configs", action="store_true", help="every config, not only the changed ones"
    )
    describe.set_defaults(run=run_describe)


def _alter_config_parser(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    alter = leaf_parser(
        actions,
        "alter-config",
        "set or delete (back to the default) topic configs with IncrementalAlterConfigs",
        EXAMPLES["alter-config"],
    )
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    alter.add_argument("--delete", action="append", default=[], metavar="KEY")
    alter.set_defaults(run=run_alter_config)


def run_list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        for name in sorted(admin.list_topics()):
            print(name)
    return EXIT_OK


def run_create(args: argparse.Namespace) -> int:
    spec = {
        "num_partitions": args.partitions,
        "replication_factor": args.replication_factor,
        "configs": dict(key_values(args.config, "--config")),
    }
    with admin_client(args) as admin:
        result = admin.create_topics({args.topic: spec}, raise_errors=False)["topics"][0]
        if result["error_code"] == TOPIC_ALREADY_EXISTS:
            raise ToolError(f"topic '{args.topic}' already exists")
        if result["error_code"]:
            message = broker_error(result["error_code"], result["error_message"])
            raise ToolError(f"topic '{args.topic}': {message}")
        partitions = len(describe_existing_topics(admin, [args.topic])[0]["partitions"])
    note(f"created topic '{args.topic}' with {partitions} partition(s)")
    return EXIT_OK


def run_delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        describe_existing_topics(admin, args.topics)
        results = admin.delete_topics(args.topics, raise_errors=False)["topics"]
    for result in results:
        if result["error_code"]:
            message = broker_error(result["error_code"], result.get("error_message"))
            raise ToolError(f"topic '{result['name']}': {message}")
        note(f"deleted topic '{result['name']}'")
    return EXIT_OK


def run_alter_config(args: argparse.Namespace) -> int:
    changes: dict[str, tuple[AlterConfigOp, str | None]] = {
        key: (AlterConfigOp.SET, value) for key, value in key_values(args.set, "--set")
    }
    changes.update({key: (AlterConfigOp.DELETE, None) for key in args.delete})
    if not changes:
        raise ToolError("nothing to change: give --set KEY=VALUE or --delete KEY", EXIT_USAGE)
    with admin_client(args) as admin:
        describe_existing_topics(admin, [args.topic])
        resource = ConfigResource(ConfigResourceType.TOPIC, args.topic, changes)
        result = admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    outcome = result["topic"][args.topic]
    if outcome != "OK":
        raise ToolError(f"topic '{args.topic}': {outcome}")
    note(f"altered {len(changes)} config(s) of topic '{args.topic}'")
    return EXIT_OK


def run_describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        names = args.topics or sorted(admin.list_topics())
        topics = describe_existing_topics(admin, names)
        offsets = _offsets(admin, topics)
        configs = _configs(admin, names, "all" if args.all_configs else "modified")
    for index, topic in enumerate(topics):
        if index:
            print()
        _print_topic(topic, offsets, configs[topic["name"]])
    return EXIT_OK


def _offsets(
    admin: KafkaAdminClient, topics: list[dict[str, Any]]
) -> dict[TopicPartition, tuple[int, int]]:
    """(start, end) offsets of every partition of `topics`."""
    partitions = [
        TopicPartition(topic["name"], partition["partition_index"])
        for topic in topics
        for partition in topic["partitions"]
    ]
    if not partitions:
        return {}
    start = admin.list_partition_offsets(dict.fromkeys(partitions, OffsetSpec.EARLIEST))
    end = admin.list_partition_offsets(dict.fromkeys(partitions, OffsetSpec.LATEST))
    return {tp: (start[tp].offset, end[tp].offset) for tp in partitions}


def _configs(admin: KafkaAdminClient, names: list[str], which: str) -> dict[str, dict[str, Any]]:
    resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
    described = admin.describe_configs(resources, config_filter=which).get("topic", {})
    return {name: described.get(name, {}) for name in names}


def _print_topic(
    topic: dict[str, Any],
    offsets: dict[TopicPartition, tuple[int, int]],
    configs: dict[str, Any],
) -> None:
    partitions = sorted(topic["partitions"], key=lambda item: int(item["partition_index"]))
    replicas = len(partitions[0]["replica_nodes"]) if partitions else 0
    print(
        f"Topic: {topic['name']}  TopicId: {topic.get('topic_id')}  "
        f"Partitions: {len(partitions)}  ReplicationFactor: {replicas}"
    )
    rows = []
    for partition in partitions:
        start, end = offsets[TopicPartition(topic["name"], partition["partition_index"])]
        rows.append(
            [
                partition["partition_index"],
                partition["leader_id"],
                _nodes(partition["replica_nodes"]),
                _nodes(partition["isr_nodes"]),
                start,
                end,
            ]
        )
    print_table(["PARTITION", "LEADER", "REPLICAS", "ISR", "START-OFFSET", "END-OFFSET"], rows)
    if configs:
        print("Configs:")
    for key in sorted(configs):
        print(f"  {key}={configs[key]['value']}")


def _nodes(ids: list[int]) -> str:
    return ",".join(str(node) for node in ids) or "-"
