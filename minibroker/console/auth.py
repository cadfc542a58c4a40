"""Who may use the console.

When any listener uses SASL, every request needs HTTP basic credentials that the broker's
SASL would accept: a PLAIN user of a listener's JAAS config (`user_<name>="<password>"`), or
a SCRAM credential (`sasl.scram` users and AlterUserScramCredentials), the password checked
against the stored salted keys as SCRAM does. Without SASL the console is open (bound to
127.0.0.1 unless configured otherwise), its principal `User:ANONYMOUS`.

With an authorizer (`authorizer.class.name`), the console acts as `User:<name>` and needs
ALTER on the CLUSTER resource for everything (a super user, or an ACL granting it): it reads
every topic's records and changes topics and groups, which only a cluster administrator may.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from minibroker.auth.acls import CLUSTER_NAME, AclOperation, ResourceType
from minibroker.security.scram import SCRAM_MECHANISMS
from minibroker.server.broker import Broker

ANONYMOUS = "User:ANONYMOUS"
MAX_VERIFIED_CACHE = 256


def sasl_required(broker: Broker) -> bool:
    return any(
        security.sasl
        for node in broker.nodes.brokers.values()
        for security in (node.security.values())
    )


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an `Authorization: Basic ...` header, None if absent or malformed."""
    if header is None or not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, separator, password = decoded.partition(":")
    if not separator or not user:
        return None
    return user, password


class Credentials:
    """Checks a user name and password as the broker's SASL mechanisms would."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        # SCRAM checks cost a PBKDF2 run: remember what passed, keyed by what was checked.
        self._verified: set[tuple[str, bytes, bytes]] = set()

    def valid(self, user: str, password: str) -> bool:
        return self._plain_valid(user, password) or self._scram_valid(user, password)

    def _plain_valid(self, user: str, password: str) -> bool:
        for node in self._broker.nodes.brokers.values():
            for security in node.security.values():
                expected = security.plain_users.get(user)
                if expected is not None and hmac.compare_digest(
                    expected.encode(), password.encode()
                ):
                    return True
        return False

    def _scram_valid(self, user: str, password: str) -> bool:
        digest = hashlib.sha256(password.encode()).digest()
        for name, mechanism in SCRAM_MECHANISMS.items():
            credential = self._broker.scram_credentials.get(user, name)
            if credential is None:
                continue
            key = (user, digest, credential.stored_key)
            if key in self._verified:
                return True
            salted = mechanism.salted_password(password, credential.salt, credential.iterations)
            stored_key = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
            if hmac.compare_digest(stored_key, credential.stored_key):
                if len(self._verified) >= MAX_VERIFIED_CACHE:
                    self._verified.clear()
                self._verified.add(key)
                return True
        return False


def authorized(broker: Broker, principal: str, host: str) -> bool:
    """Whether the principal may use the console (always, without an authorizer)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(
        principal, host, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME
    )
