"""`minibroker acl list|add|remove`, as kafka-acls: ACL bindings listed (filtered by principal,
resource and pattern type), added (one per operation) and removed by filter. Through
kafka-python's KafkaAdminClient; the broker needs an authorizer, and the CLI's user (`--user`)
ALTER (add, remove) or DESCRIBE (list) on the cluster."""

from __future__ import annotations

import argparse

from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

from minibroker.tools.common import (
    EXIT_OK,
    EXIT_USAGE,
    ToolError,
    admin_client,
    leaf_parser,
    note,
    print_table,
)

CLUSTER_NAME = "kafka-cluster"
OPERATIONS = [op.name for op in ACLOperation if op not in (ACLOperation.UNKNOWN, ACLOperation.ANY)]

EXAMPLES = {
    "list": (
        "  minibroker acl list\n"
        "  minibroker acl list --principal User:alice --topic orders --pattern match"
    ),
    "add": (
        "  minibroker acl add --principal User:alice --operation WRITE --operation DESCRIBE"
        " --topic orders- --pattern prefixed\n"
        "  minibroker acl add --principal User:bob --operation READ --group billing --deny"
    ),
    "remove": "  minibroker acl remove --principal User:alice --topic orders- --pattern prefixed",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    acl = sub.add_parser(
        "acl",
        help="list, add and remove ACL bindings",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n" + "\n".join(EXAMPLES.values()),
    )
    actions = acl.add_subparsers(dest="action", required=True)
    listing = leaf_parser(actions, "list", "ACL bindings, filtered", EXAMPLES["list"])
    _filter_arguments(listing, default_pattern="any")
    listing.set_defaults(run=run_list)
    adding = leaf_parser(actions, "add", "add ACL bindings", EXAMPLES["add"])
    adding.add_argument("--principal", required=True, help="User:name, or User:* for anyone")
    adding.add_argument(
        "--operation", action="append", required=True, choices=OPERATIONS, type=str.upper
    )
    adding.add_argument("--deny", action="store_true", help="a DENY binding (default ALLOW)")
    adding.add_argument("--host", default="*", help="the client address it applies to")
    _resource_arguments(adding, default_pattern="literal", patterns=("literal", "prefixed"))
    adding.set_defaults(run=run_add)
    removing = leaf_parser(
        actions, "remove", "remove the bindings a filter matches", EXAMPLES["remove"]
    )
    _filter_arguments(removing, default_pattern="literal")
    removing.set_defaults(run=run_remove)


def _resource_arguments(
    parser: argparse.ArgumentParser,
    default_pattern: str,
    patterns: tuple[str, ...] = ("any", "match", "literal", "prefixed"),
) -> None:
    resource = parser.add_mutually_exclusive_group()
    resource.add_argument("--topic")
    resource.add_argument("--group")
    resource.add_argument("--transactional-id")
    resource.add_argument("--cluster", action="store_true")
    parser.add_argument(
        "--pattern",
        choices=patterns,
        default=default_pattern,
        help="the resource pattern type (default: %(default)s)",
    )


def _filter_arguments(parser: argparse.ArgumentParser, default_pattern: str) -> None:
    parser.add_argument("--principal", help="only this principal's bindings")
    parser.add_argument("--operation", choices=OPERATIONS, type=str.upper)
    _resource_arguments(parser, default_pattern)


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    return ResourceType.ANY, None


def _binding_filter(args: argparse.Namespace) -> ACLFilter:
    resource_type, name = _resource(args)
    pattern = ACLResourcePatternType[args.pattern.upper()]
    if name is None and pattern != ACLResourcePatternType.ANY:
        pattern = ACLResourcePatternType.ANY
    return ACLFilter(
        principal=args.principal,
        host=None,
        operation=ACLOperation[args.operation] if args.operation else ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(resource_type, name, pattern),
    )


def _row(acl: ACL) -> list[object]:
    pattern = acl.resource_pattern
    return [
        acl.principal,
        acl.host,
        acl.operation.name,
        acl.permission_type.name,
        pattern.resource_type.name,
        pattern.resource_name,
        pattern.pattern_type.name,
    ]


HEADER = ["PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE", "NAME", "PATTERN"]


def run_list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        found, _ = admin.describe_acls(_binding_filter(args))
    print_table(HEADER, sorted(_row(acl) for acl in found))
    return EXIT_OK


def run_add(args: argparse.Namespace) -> int:
    resource_type, name = _resource(args)
    if name is None:
        raise ToolError(
            "name a resource: --topic, --group, --transactional-id or --cluster", EXIT_USAGE
        )
    pattern = ResourcePattern(resource_type, name, ACLResourcePatternType[args.pattern.upper()])
    permission = ACLPermissionType.DENY if args.deny else ACLPermissionType.ALLOW
    acls = [
        ACL(args.principal, args.host, ACLOperation[operation], permission, pattern)
        for operation in args.operation
    ]
    with admin_client(args) as admin:
        result = admin.create_acls(acls)
    if result["failed"]:
        error = result["failed"][0]
        raise ToolError(f"{error.message}: {error.description}")
    note(f"added {len(acls)} ACL binding(s)")
    return EXIT_OK


def run_remove(args: argparse.Namespace) -> int:
    if args.principal is None and _resource(args)[1] is None:
        raise ToolError("name a --principal or a resource to remove bindings of", EXIT_USAGE)
    with admin_client(args) as admin:
        [(_filter, removed, error)] = admin.delete_acls([_binding_filter(args)])
    if error.errno:
        raise ToolError(f"{error.message}: {error.description}")
    print_table(HEADER, sorted(_row(acl) for acl in removed))
    note(f"removed {len(removed)} ACL binding(s)")
    return EXIT_OK
