"""The ACL authorizer, deciding as Kafka's StandardAuthorizer decides.

Enabled by `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`
(empty: no authorizer, everything is allowed and the ACL APIs answer SECURITY_DISABLED).

A request's principal (`User:alice`) from host `h` may do operation `op` on a resource when:
1. the principal is one of `super.users` (`User:a;User:b`); otherwise
2. the bindings that apply to the resource (LITERAL with its name or `*`, PREFIXED with a
   prefix of its name) and to the request (principal itself or `User:*`, host `h` or `*`) are
   looked at: a DENY for `op` (or ALL) denies; else an ALLOW for `op` (or ALL, or, for
   DESCRIBE, one of READ/WRITE/DELETE/ALTER; for DESCRIBE_CONFIGS, ALTER_CONFIGS) allows;
3. with no binding on the resource at all (for anybody), `allow.everyone.if.no.acl.found`
   decides; with bindings for others only, it is denied.

`authorize_by_resource_type` is Kafka's `Authorizer.authorizeByResourceType`: may the
principal do `op` on some resource of the type (an ALLOW not dominated by a DENY), used where
Kafka asks that (idempotent InitProducerId without IDEMPOTENT_WRITE on the cluster).

Bindings are kept in `<log.dirs>/minibroker-acls.json` (written atomically); an in-memory
broker keeps them in memory. Kafka keeps them in its metadata log.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from minibroker.auth.acls import (
    IMPLIES_DESCRIBE,
    IMPLIES_DESCRIBE_CONFIGS,
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from minibroker.config import BrokerConfig, ConfigError
from minibroker.log.checkpoints import write_atomically

log = logging.getLogger(__name__)

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACLS_FILE = "minibroker-acls.json"


def cluster_denied_message(api_name: str, principal: str) -> str:
    """Kafka's ClusterAuthorizationException message for a request lacking a cluster
    permission ("Request <request> is not authorized."), the request named by API and principal
    where Kafka prints its internal request object."""
    return f"Request {api_name} from {principal} is not authorized."


def _super_users(text: str) -> frozenset[str]:
    return frozenset(item.strip() for item in text.split(";") if item.strip())


class Authorizer:
    def __init__(
        self,
        super_users: frozenset[str] = frozenset(),
        allow_if_no_acl: bool = False,
        path: Path | None = None,
    ) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self._path = path
        self._bindings: dict[AclBinding, None] = {}
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        # Moves on every change of the ACLs: a decision made at one generation holds while it
        # stays (fetch sessions re-check their partitions only when it moved).
        self.generation = 0

    @classmethod
    def from_config(cls, config: BrokerConfig, data_dir: Path | None) -> Authorizer | None:
        """The authorizer `authorizer.class.name` asks for, None when it is empty."""
        name = config.get_str("authorizer.class.name").strip()
        if not name:
            return None
        if name != STANDARD_AUTHORIZER:
            raise ConfigError(
                f"authorizer.class.name {name!r} is not served; minibroker implements "
                f"{STANDARD_AUTHORIZER}"
            )
        authorizer = cls(
            _super_users(config.get_str("super.users")),
            config.get_bool("allow.everyone.if.no.acl.found"),
            None if data_dir is None else data_dir / ACLS_FILE,
        )
        authorizer._load()
        return authorizer

    # -- decisions -----------------------------------------------------------------------

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        found_resource_acls = False
        allowed = False
        for binding in self._by_type.get(resource_type, ()):
            if not _applies_to(binding, name):
                continue
            found_resource_acls = True
            result = _result_for(binding, principal, host, operation)
            if result is PermissionType.DENY:
                return False
            allowed = allowed or result is PermissionType.ALLOW
        if allowed:
            return True
        return not found_resource_acls and self.allow_if_no_acl

    def authorized_operations(
        self, principal: str, host: str, resource_type: ResourceType, name: str
    ) -> set[AclOperation]:
        return {
            operation
            for operation in SUPPORTED_OPERATIONS[resource_type]
            if self.authorize(principal, host, operation, resource_type, name)
        }

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        denied: dict[PatternType, set[str]] = {
            PatternType.LITERAL: set(),
            PatternType.PREFIXED: set(),
        }
        allowed: list[AclBinding] = []
        wildcard_allowed = False
        for binding in self._by_type.get(resource_type, ()):
            if binding.host not in (host, WILDCARD) or binding.principal not in (
                principal,
                WILDCARD_PRINCIPAL,
            ):
                continue
            if binding.operation not in (operation, AclOperation.ALL):
                continue
            if binding.permission == PermissionType.DENY:
                if (
                    binding.pattern_type == PatternType.LITERAL
                    and binding.resource_name == WILDCARD
                ):
                    return False
                denied[binding.pattern_type].add(binding.resource_name)
            elif binding.pattern_type == PatternType.LITERAL and binding.resource_name == WILDCARD:
                # Not decided yet: a `*` DENY later in the list still wins.
                wildcard_allowed = True
            else:
                allowed.append(binding)
        return wildcard_allowed or any(_not_dominated(binding, denied) for binding in allowed)

    # -- bindings ------------------------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [binding for binding in self._bindings if acl_filter.matches(binding)]

    def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add bindings (present ones stay once), then save."""
        for binding in bindings:
            self._bindings[binding] = None
        self._changed()

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every binding each filter matches; the bindings removed, per filter (a
        binding two filters match is listed for both, as Kafka lists it)."""
        matched = [self.acls(acl_filter) for acl_filter in filters]
        for bindings in matched:
            for binding in bindings:
                self._bindings.pop(binding, None)
        if any(matched):
            self._changed()
        return matched

    def _changed(self) -> None:
        self.generation += 1
        self._index()
        self._save()

    def _index(self) -> None:
        """The bindings by resource type, as `authorize` looks them up."""
        by_type: dict[ResourceType, list[AclBinding]] = {}
        for binding in self._bindings:
            by_type.setdefault(binding.resource_type, []).append(binding)
        self._by_type = by_type

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        stored = json.loads(self._path.read_text())
        self._bindings = dict.fromkeys(AclBinding.from_json(item) for item in stored["acls"])
        self._index()

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        document = {"version": 1, "acls": [binding.to_json() for binding in self._bindings]}
        write_atomically(self._path, json.dumps(document, indent=1))


def _applies_to(binding: AclBinding, name: str) -> bool:
    if binding.pattern_type == PatternType.PREFIXED:
        return name.startswith(binding.resource_name)
    return binding.resource_name == name or binding.resource_name == WILDCARD


def _result_for(
    binding: AclBinding, principal: str, host: str, operation: AclOperation
) -> PermissionType | None:
    """ALLOW or DENY when the binding decides this request, None when it does not apply."""
    if binding.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if binding.host not in (WILDCARD, host):
        return None
    if binding.operation != AclOperation.ALL and not _covers(binding, operation):
        return None
    return binding.permission


def _covers(binding: AclBinding, operation: AclOperation) -> bool:
    if binding.permission == PermissionType.DENY:
        return binding.operation == operation
    if operation == AclOperation.DESCRIBE:
        return binding.operation in IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return binding.operation in IMPLIES_DESCRIBE_CONFIGS
    return binding.operation == operation


def _not_dominated(binding: AclBinding, denied: dict[PatternType, set[str]]) -> bool:
    name = binding.resource_name
    if binding.pattern_type == PatternType.LITERAL and name in denied[PatternType.LITERAL]:
        return False
    return not any(name[:end] in denied[PatternType.PREFIXED] for end in range(1, len(name) + 1))
