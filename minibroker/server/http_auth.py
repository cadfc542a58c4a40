"""HTTP basic authentication for the web console and the Schema Registry, as the broker's SASL
mechanisms would accept the user, without costing the Kafka listeners anything.

When any listener uses SASL, a request needs `Authorization: Basic` credentials of a PLAIN
user of a listener's JAAS config (`user_<name>="<password>"`) or of a SCRAM credential
(`minibroker.scram.credentials`, AlterUserScramCredentials); without SASL every request is
`User:ANONYMOUS`. Checking a SCRAM password means deriving its salted password (PBKDF2,
thousands of HMAC rounds), so, per broker (one verifier shared by the console and registry):

- derivations run in one worker thread for the whole process (hashlib releases the GIL while
  deriving), never on the event loop; a burst of guesses queues behind it;
- a password that passed is remembered with the credential it was checked against, for as
  long as that is still the user's credential (changing or deleting it forgets the password);
- every check that is not remembered derives once per SCRAM mechanism, against the user's
  credential or, where the user has none, a dummy one: unknown users cost what known ones do;
- failed credentials are answered after `connection.failed.authentication.delay.ms` (as
  Kafka delays a failed SASL login), asleep on the loop, holding up nobody else.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hmac
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

from minibroker.security.scram import (
    DEFAULT_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramMechanism,
)
from minibroker.server.broker import Broker

ANONYMOUS = "User:ANONYMOUS"
MAX_REMEMBERED = 256
DERIVATION_WORKERS = 1

ScramCheck = tuple[ScramMechanism, ScramCredential]


def sasl_required(broker: Broker) -> bool:
    return any(
        security.sasl
        for node in broker.nodes.brokers.values()
        for security in node.security.values()
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


@functools.cache
def _derivation_executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(DERIVATION_WORKERS, thread_name_prefix="minibroker-http-auth")


@functools.cache
def _dummy_credential(mechanism: ScramMechanism) -> ScramCredential:
    """A credential no password derives (random keys), as costly to check as a real one."""
    size = len(mechanism.hash(b""))
    return ScramCredential(os.urandom(32), os.urandom(size), os.urandom(size), DEFAULT_ITERATIONS)


def _scram_matches(password: str, checks: list[ScramCheck]) -> list[bool]:
    """Whether the password derives each credential's stored key; every check derives (no
    early exit), so the cost does not depend on which credentials are real."""
    matches = []
    for mechanism, credential in checks:
        salted = mechanism.salted_password(password, credential.salt, credential.iterations)
        stored_key = mechanism.hash(mechanism.hmac(salted, b"Client Key"))
        matches.append(hmac.compare_digest(stored_key, credential.stored_key))
    return matches


class BasicAuthVerifier:
    """Checks basic credentials for one broker; `derivations` counts the SCRAM derivations
    started (one per mechanism for every check not answered from memory)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        # Passwords are remembered as keyed hashes, the key never leaving this process.
        self._tag_key = os.urandom(32)
        self._remembered: dict[tuple[str, str], tuple[ScramCredential, bytes]] = {}
        self.derivations = 0

    async def principal(self, authorization: str | None) -> str | None:
        """`User:<name>` for valid credentials (`User:ANONYMOUS` when no listener uses SASL);
        None when they are missing, or invalid (answered after the failed-login delay)."""
        if not sasl_required(self._broker):
            return ANONYMOUS
        if authorization is None:
            return None
        given = basic_credentials(authorization)
        if given is not None and await self.valid(*given):
            return f"User:{given[0]}"
        delay_ms = self._broker.config.get_int("connection.failed.authentication.delay.ms")
        await asyncio.sleep(delay_ms / 1000)
        return None

    async def valid(self, user: str, password: str) -> bool:
        if self._plain_valid(user, password):
            return True
        tag = hmac.new(self._tag_key, password.encode(), "sha256").digest()
        checks = self._scram_checks(user)
        if self._remembered_valid(user, tag, checks):
            return True
        self.derivations += len(checks)
        matches = await asyncio.get_running_loop().run_in_executor(
            _derivation_executor(), _scram_matches, password, [(m, c) for m, c, _ in checks]
        )
        for (mechanism, credential, real), matched in zip(checks, matches, strict=True):
            if real and matched:
                self._remember(user, mechanism.name, credential, tag)
                return True
        return False

    def _plain_valid(self, user: str, password: str) -> bool:
        for node in self._broker.nodes.brokers.values():
            for security in node.security.values():
                expected = security.plain_users.get(user)
                if expected is not None and hmac.compare_digest(
                    expected.encode(), password.encode()
                ):
                    return True
        return False

    def _scram_checks(self, user: str) -> list[tuple[ScramMechanism, ScramCredential, bool]]:
        """Per mechanism: the user's credential (True) or the dummy one (False)."""
        checks = []
        for name, mechanism in SCRAM_MECHANISMS.items():
            credential = self._broker.scram_credentials.get(user, name)
            if credential is None:
                checks.append((mechanism, _dummy_credential(mechanism), False))
            else:
                checks.append((mechanism, credential, True))
        return checks

    def _remembered_valid(
        self, user: str, tag: bytes, checks: list[tuple[ScramMechanism, ScramCredential, bool]]
    ) -> bool:
        for mechanism, credential, real in checks:
            key = (user, mechanism.name)
            remembered = self._remembered.get(key)
            if remembered is None:
                continue
            if not real or remembered[0] != credential:
                del self._remembered[key]  # the credential changed or was deleted since
            elif hmac.compare_digest(remembered[1], tag):
                return True
        return False

    def _remember(self, user: str, mechanism: str, credential: ScramCredential, tag: bytes) -> None:
        if len(self._remembered) >= MAX_REMEMBERED:
            self._remembered.clear()
        self._remembered[(user, mechanism)] = (credential, tag)


_verifiers: weakref.WeakKeyDictionary[Broker, BasicAuthVerifier] = weakref.WeakKeyDictionary()


def verifier_for(broker: Broker) -> BasicAuthVerifier:
    """The broker's one verifier, shared by its console and registry."""
    verifier = _verifiers.get(broker)
    if verifier is None:
        verifier = _verifiers[broker] = BasicAuthVerifier(broker)
    return verifier
