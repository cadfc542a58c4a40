"""`minibroker cluster`, as `rpk cluster info`: cluster id, controller, nodes, the Kafka
version kafka-python guesses from the ApiVersions answer, and the features (supported and
finalized) that answer carries. Through kafka-python's KafkaAdminClient."""

from __future__ import annotations

import argparse
from typing import Any

from minibroker.tools.common import EXIT_OK, admin_client, leaf_parser, print_table

EXAMPLES = """\
  minibroker cluster
  MINIBROKER_BOOTSTRAP=kafka:9092 minibroker cluster"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cluster = leaf_parser(
        sub, "cluster", "nodes, controller, cluster id, Kafka version and features", EXAMPLES
    )
    cluster.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        described = admin.describe_cluster()
        nodes = sorted(described["brokers"], key=lambda node: int(node["broker_id"]))
        version = admin.get_broker_version_data(nodes[0]["broker_id"]).broker_version_str
        features = admin.describe_features()
    print(f"Cluster id:  {described['cluster_id']}")
    print(f"Controller:  {described['controller_id']}")
    print(f"Kafka:       {version} (as kafka-python reads ApiVersions)")
    print()
    print_table(["NODE", "HOST", "PORT", "RACK"], [_node_row(node) for node in nodes])
    print()
    print_table(
        ["FEATURE", "FINALIZED", "SUPPORTED"],
        [_feature_row(name, features[name]) for name in sorted(features)],
    )
    return EXIT_OK


def _node_row(node: dict[str, Any]) -> list[object]:
    return [node["broker_id"], node["host"], node["port"], node.get("rack") or "-"]


def _feature_row(name: str, feature: dict[str, Any]) -> list[object]:
    return [name, _levels(feature.get("finalized")), _levels(feature.get("supported"))]


def _levels(levels: tuple[int, int] | None) -> str:
    """`3` for a single level, `0-2` for a range, `-` when absent."""
    if levels is None:
        return "-"
    low, high = levels
    return str(high) if low == high else f"{low}-{high}"
