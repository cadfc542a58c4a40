"""Who may do what in the Schema Registry when the broker has an authorizer.

A subject is checked on the topic it names (Confluent's TopicNameStrategy: `orders-key` and
`orders-value` name `orders`), with the principal of the request's basic credentials:

    read a subject (its versions, schemas, lookups, compatibility checks)   DESCRIBE
    register a schema                                                         WRITE
    delete a version or the subject                                           DELETE
    read / change / delete its config or mode                DESCRIBE_CONFIGS / ALTER_CONFIGS

A subject naming no topic (RecordNameStrategy's `com.example.Order`) is checked on the
cluster: DESCRIBE, ALTER (for writes and deletes), DESCRIBE_CONFIGS, ALTER_CONFIGS. The global
config and mode need DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster. Listings (`/subjects`,
`/schemas`, an id's subjects and versions, `referencedby`) keep only what the principal may
describe, and a schema id is readable through any subject using it the principal may
describe. Refusals are 403 with Confluent's 40301 and its message (`User is denied operation
Write on Subject: orders-value`). Super users, and `allow.everyone.if.no.acl.found` without
ACLs, see everything; without an authorizer nothing is checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.auth.authorizer import Authorizer
from minibroker.registry.errors import RegistryError

DENIED = 40301
TOPIC_SUFFIXES = ("-key", "-value")
_CLUSTER_OPERATION = {
    AclOperation.DESCRIBE: AclOperation.DESCRIBE,
    AclOperation.WRITE: AclOperation.ALTER,
    AclOperation.DELETE: AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS: AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS: AclOperation.ALTER_CONFIGS,
}


def topic_of(subject: str) -> str | None:
    """The topic a subject names under TopicNameStrategy, None for other subjects."""
    for suffix in TOPIC_SUFFIXES:
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)]
    return None


def _operation_name(operation: AclOperation) -> str:
    return "".join(word.capitalize() for word in operation.name.split("_"))


def denied(operation: AclOperation, resource: str) -> RegistryError:
    return RegistryError(
        DENIED, f"User is denied operation {_operation_name(operation)} on {resource}"
    )


@dataclass(frozen=True)
class Access:
    """One request's rights: its principal and host, judged by the broker's authorizer."""

    authorizer: Authorizer | None
    principal: str
    host: str

    def may(self, subject: str, operation: AclOperation) -> bool:
        if self.authorizer is None:
            return True
        topic = topic_of(subject)
        if topic is None:
            return self._on_cluster(_CLUSTER_OPERATION[operation])
        return self.authorizer.authorize(
            self.principal, self.host, operation, ResourceType.TOPIC, topic
        )

    def require(self, subject: str, operation: AclOperation) -> None:
        if not self.may(subject, operation):
            raise denied(operation, f"Subject: {subject}")

    def require_global(self, operation: AclOperation) -> None:
        if not self._on_cluster(operation):
            raise denied(operation, f"Cluster: {CLUSTER_NAME}")

    def describable(self, subjects: Iterable[str]) -> list[str]:
        return [subject for subject in subjects if self.may(subject, AclOperation.DESCRIBE)]

    def _on_cluster(self, operation: AclOperation) -> bool:
        return self.authorizer is None or self.authorizer.authorize(
            self.principal, self.host, operation, ResourceType.CLUSTER, CLUSTER_NAME
        )
