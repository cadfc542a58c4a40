"""Test helpers for security: ACLs and users without a Kafka client.

Mixed into the brokers and clusters of `minibroker.testing.cluster`. ACLs need the broker to
run an authorizer: `KafkaBroker(config=AUTHORIZER_CONFIG)` (or `authorizer.class.name` set to
Kafka's StandardAuthorizer); principals are `User:<name>`, from SASL logins (`add_user`), TLS
client certificates, or `User:ANONYMOUS` on PLAINTEXT listeners.

    with KafkaBroker(config=secured_config()) as broker:  # SASL/SCRAM listener, ACLs on
        broker.add_user("alice", "alice-secret")            # SCRAM-SHA-256 and -512
        broker.add_acl("User:alice", "WRITE", topic="orders-", pattern="prefixed")
        broker.add_acl("User:alice", "READ", group="billing")
        broker.remove_acls(principal="User:alice")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from minibroker.auth.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from minibroker.auth.authorizer import STANDARD_AUTHORIZER, Authorizer
from minibroker.auth.quota_stats import DEFAULT as DEFAULT
from minibroker.auth.quota_stats import Default
from minibroker.auth.quotas import CLIENT_ID, IP, USER, Entity, entity_of
from minibroker.protocol.errors import ErrorCode
from minibroker.security.scram import DEFAULT_ITERATIONS, SCRAM_MECHANISMS, ScramCredential
from minibroker.server.broker import Broker

T = TypeVar("T")

AUTHORIZER_CONFIG = {"authorizer.class.name": STANDARD_AUTHORIZER}
"""Broker settings that turn ACL authorization on (add `super.users` as needed)."""


def secured_config(
    super_user: str = "admin", password: str = "admin-secret", host: str = "127.0.0.1"
) -> dict[str, str]:
    """Broker settings for authorization tests: one SASL_PLAINTEXT listener (free port) with
    SCRAM-SHA-256/512 and PLAIN, ACLs on, and `super_user` (a SCRAM user with `password`)
    allowed everything. Clients log in with `sasl.mechanism=SCRAM-SHA-256`; add the users a
    test needs with `add_user`."""
    return {
        **AUTHORIZER_CONFIG,
        "listeners": f"SASL_PLAINTEXT://{host}:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "super.users": f"User:{super_user}",
        "minibroker.scram.credentials": (
            f"SCRAM-SHA-256=[name={super_user},password={password}],"
            f"SCRAM-SHA-512=[name={super_user},password={password}]"
        ),
    }


def _resource(
    topic: str | None,
    group: str | None,
    transactional_id: str | None,
    cluster: bool,
    user: str | None = None,
) -> tuple[ResourceType, str] | None:
    named = [
        (kind, name)
        for kind, name in (
            (ResourceType.TOPIC, topic),
            (ResourceType.GROUP, group),
            (ResourceType.TRANSACTIONAL_ID, transactional_id),
            (ResourceType.CLUSTER, CLUSTER_NAME if cluster else None),
            (ResourceType.USER, user),
        )
        if name is not None
    ]
    if len(named) > 1:
        raise ValueError("name one resource: topic=, group=, transactional_id=, cluster= or user=")
    return named[0] if named else None


class SecurityHelpers:
    def _owner(self) -> Broker:
        raise NotImplementedError

    def _run(self, action: Callable[[], T]) -> T:
        raise NotImplementedError

    def _authorizer(self) -> Authorizer:
        authorizer = self._owner().authorizer
        if authorizer is None:
            raise RuntimeError(
                "no authorizer: start the broker with config=AUTHORIZER_CONFIG "
                f"(authorizer.class.name={STANDARD_AUTHORIZER})"
            )
        return authorizer

    def add_acl(
        self,
        principal: str,
        operation: str | AclOperation,
        *,
        topic: str | None = None,
        group: str | None = None,
        transactional_id: str | None = None,
        cluster: bool = False,
        user: str | None = None,
        pattern: str = "literal",
        permission: str = "allow",
        host: str = "*",
    ) -> AclBinding:
        """Add one binding (as CreateAcls would, refused with ValueError where Kafka refuses
        it): `operation` such as "READ" or "all"; one resource; `pattern` literal or prefixed;
        `permission` allow or deny."""
        resource = _resource(topic, group, transactional_id, cluster, user)
        if resource is None:
            raise ValueError(
                "name a resource: topic=, group=, transactional_id=, cluster= or user="
            )
        binding = AclBinding(
            resource[0],
            resource[1],
            PatternType[pattern.upper()],
            principal,
            host,
            AclOperation[operation.upper()] if isinstance(operation, str) else operation,
            PermissionType[permission.upper()],
        )
        binding.validate()
        self._run(lambda: self._authorizer().create([binding]))
        return binding

    def remove_acls(
        self,
        *,
        principal: str | None = None,
        topic: str | None = None,
        group: str | None = None,
        transactional_id: str | None = None,
        cluster: bool = False,
        user: str | None = None,
    ) -> int:
        """Remove the bindings for the principal and/or resource (all of them when nothing is
        named); returns how many were removed."""
        resource = _resource(topic, group, transactional_id, cluster, user)
        acl_filter = AclBindingFilter(
            resource_type=resource[0] if resource else ResourceType.ANY,
            resource_name=resource[1] if resource else None,
            principal=principal,
        )
        return self._run(lambda: len(self._authorizer().delete([acl_filter])[0]))

    def acls(self) -> list[AclBinding]:
        return self._run(lambda: self._authorizer().acls(AclBindingFilter()))

    def add_user(
        self,
        name: str,
        password: str,
        mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    ) -> None:
        """A SCRAM user who can log in on SASL listeners offering those mechanisms."""
        changes = [
            (
                name,
                mechanism,
                ScramCredential.from_password(
                    SCRAM_MECHANISMS[mechanism], password, DEFAULT_ITERATIONS
                ),
            )
            for mechanism in mechanisms
        ]
        self._run(lambda: self._owner().scram_credentials.apply(changes))

    def remove_user(self, name: str) -> None:
        def remove() -> None:
            store = self._owner().scram_credentials
            store.apply([(name, mechanism, None) for mechanism in store.of(name)])

        self._run(remove)

    def set_quota(
        self,
        *,
        user: str | Default | None = None,
        client_id: str | Default | None = None,
        ip: str | Default | None = None,
        **values: float,
    ) -> None:
        """Set client quota values (Kafka's keys: `producer_byte_rate=1024`,
        `consumer_byte_rate`, `request_percentage`, `controller_mutation_rate`; for `ip`,
        `connection_creation_rate`) for the entity named by `user`, `client_id` (or both) or
        `ip`. The default entity is `DEFAULT` (`from minibroker.testing.security import
        DEFAULT`), as kafka-configs' `--entity-default`: `set_quota(user=DEFAULT, ...)`.
        Refused with ValueError where AlterClientQuotas would refuse it."""
        self._alter_quota(_quota_entity(user, client_id, ip), list(values.items()))

    def remove_quota(
        self,
        *keys: str,
        user: str | Default | None = None,
        client_id: str | Default | None = None,
        ip: str | Default | None = None,
    ) -> None:
        """Remove the entity's quota `keys` (every key it has when none are named)."""
        entity = _quota_entity(user, client_id, ip)
        current = self._run(lambda: self._owner().client_quotas.entities().get(entity, {}))
        self._alter_quota(entity, [(key, None) for key in keys or current])

    def quotas(self) -> dict[Entity, dict[str, float]]:
        """Every entity with quotas: ((type, name or None for the default), ...) -> values."""
        return self._run(lambda: self._owner().client_quotas.entities())

    def _alter_quota(self, entity: Entity, ops: list[tuple[str, float | None]]) -> None:
        def alter() -> None:
            [(_entity, (error, message))] = self._owner().client_quotas.alter([(entity, ops)])
            if error != ErrorCode.NO_ERROR:
                raise ValueError(f"{error.name}: {message}")

        self._run(alter)


def _quota_entity(
    user: str | Default | None, client_id: str | Default | None, ip: str | Default | None
) -> Entity:
    named = {USER: user, CLIENT_ID: client_id, IP: ip}
    return entity_of(
        (kind, None if name is DEFAULT else name)
        for kind, name in named.items()
        if name is not None
    )
