"""ACL bindings and filters as Kafka defines them (`org.apache.kafka.common.acl`,
`org.apache.kafka.common.resource`): the codes clients send, what each resource type
supports, how a filter matches a binding, and what a new binding must satisfy.

- Resource types: TOPIC, GROUP, CLUSTER (named `kafka-cluster`), TRANSACTIONAL_ID,
  DELEGATION_TOKEN, USER. Pattern types: LITERAL (`*` is the wildcard) and PREFIXED.
- A filter (DescribeAcls, DeleteAcls) matches a binding field by field: ANY (or a null name,
  principal or host) matches everything, a concrete value only itself, and pattern type
  MATCH matches every binding that applies to the named resource: LITERAL with that name or
  `*`, PREFIXED with a prefix of it.
- A new binding (CreateAcls) needs concrete types (not ANY/MATCH), a non-empty resource
  name (`kafka-cluster` for CLUSTER) and a `Type:name` principal; Kafka's messages otherwise.
- Codes: 0 (UNKNOWN) in a request fails Kafka's request parsing (the connection closes);
  any other code Kafka does not know reads as UNKNOWN, which a new binding or a DeleteAcls
  filter refuses with INVALID_REQUEST and a DescribeAcls filter matches nothing with.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"
WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
# Kafka's `AclEntry.supportedOperations`: what `authorized_operations` reports per type.
SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER}
        | {_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
    ),
    ResourceType.GROUP: frozenset(
        {_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
    ),
    ResourceType.CLUSTER: frozenset(
        {_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}
        | {_O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE}
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_O.DESCRIBE, _O.WRITE, _O.TWO_PHASE_COMMIT}),
    ResourceType.DELEGATION_TOKEN: frozenset({_O.DESCRIBE}),
    ResourceType.USER: frozenset({_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS}),
}
# An ALLOW for one of these also allows DESCRIBE (or DESCRIBE_CONFIGS); a DENY implies nothing.
IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})


class InvalidAcl(ValueError):
    """A binding or filter Kafka refuses with INVALID_REQUEST and this message."""


class UnknownAclElement(ValueError):
    """A code 0 (UNKNOWN) in a request: Kafka's request fails to parse and the connection
    closes."""


def _enum_of(kind: type[IntEnum], code: int, what: str) -> IntEnum:
    """The value of `code`, UNKNOWN for codes Kafka does not know (`fromCode`); a request
    that sends code 0 itself fails Kafka's parsing."""
    if code == 0:
        raise UnknownAclElement(f"{what} code 0 (UNKNOWN)")
    try:
        return kind(code)
    except ValueError:
        return kind(0)


Codes = tuple[ResourceType, PatternType, AclOperation, PermissionType]


def _codes(resource_type: int, pattern_type: int, operation: int, permission: int) -> Codes:
    """A request's four ACL codes as Kafka reads them (`_enum_of`)."""
    return (
        ResourceType(_enum_of(ResourceType, resource_type, "resource type")),
        PatternType(_enum_of(PatternType, pattern_type, "pattern type")),
        AclOperation(_enum_of(AclOperation, operation, "operation")),
        PermissionType(_enum_of(PermissionType, permission, "permission type")),
    )


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    @classmethod
    def of_codes(
        cls,
        resource_type: int,
        resource_name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> AclBinding:
        """From a CreateAcls creation's codes; UnknownAclElement for a code 0."""
        kind, pattern, acl_operation, acl_permission = _codes(
            resource_type, pattern_type, operation, permission
        )
        return cls(kind, resource_name, pattern, principal, host, acl_operation, acl_permission)

    @property
    def has_filter_codes(self) -> bool:
        """ANY (or MATCH) somewhere: Kafka cannot build such a binding (`ResourcePattern` and
        `AccessControlEntry` refuse them), so its CreateAcls fails as a whole."""
        return (
            self.resource_type == ResourceType.ANY
            or self.pattern_type in (PatternType.ANY, PatternType.MATCH)
            or self.operation == AclOperation.ANY
            or self.permission == PermissionType.ANY
        )

    def validate(self) -> None:
        """Kafka's checks on a new binding (AclApis and AclControlManager.validateNewAcl)."""
        if self.resource_type == ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.resource_name:
            raise InvalidAcl("Invalid empty resource name")
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            raise InvalidAcl(f"Invalid permissionType {self.permission.name}")
        if ":" not in self.principal:
            raise InvalidAcl(
                f"Could not parse principal from `{self.principal}` (no colon is present "
                "separating the principal type from the principal name)"
            )

    def to_json(self) -> dict[str, str]:
        return {
            "resourceType": self.resource_type.name,
            "resourceName": self.resource_name,
            "patternType": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permissionType": self.permission.name,
        }

    @classmethod
    def from_json(cls, item: dict[str, str]) -> AclBinding:
        return cls(
            ResourceType[item["resourceType"]],
            item["resourceName"],
            PatternType[item["patternType"]],
            item["principal"],
            item["host"],
            AclOperation[item["operation"]],
            PermissionType[item["permissionType"]],
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """None for a name, principal or host matches any value."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    @classmethod
    def of_codes(
        cls,
        resource_type: int,
        resource_name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> AclBindingFilter:
        kind, pattern, acl_operation, acl_permission = _codes(
            resource_type, pattern_type, operation, permission
        )
        return cls(kind, resource_name, pattern, principal, host, acl_operation, acl_permission)

    def validate(self) -> None:
        """Kafka's check on a DeleteAcls filter (AclControlManager.validateFilter)."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            raise InvalidAcl("Unknown patternFilter.")
        if self.operation == AclOperation.UNKNOWN or self.permission == PermissionType.UNKNOWN:
            raise InvalidAcl("Unknown entryFilter.")

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if self.pattern_type == PatternType.MATCH:
            return self._applies_to_named_resource(binding)
        if self.pattern_type not in (PatternType.ANY, binding.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == binding.resource_name

    def _applies_to_named_resource(self, binding: AclBinding) -> bool:
        name = self.resource_name
        if name is None:
            return True
        if binding.pattern_type == PatternType.LITERAL:
            return binding.resource_name in (name, WILDCARD)
        return name.startswith(binding.resource_name)

    def _matches_entry(self, binding: AclBinding) -> bool:
        return (
            self.principal in (None, binding.principal)
            and self.host in (None, binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission in (PermissionType.ANY, binding.permission)
        )


def operations_bitfield(operations: frozenset[AclOperation] | set[AclOperation]) -> int:
    """Kafka's `Utils.to32BitField` of the operation codes."""
    field = 0
    for operation in operations:
        field |= 1 << int(operation)
    return field
