"""What every server-side SASL mechanism provides, and the two ways authentication fails.

Kafka tells a client why authentication failed only when the reason gives nothing away
(`SaslAuthenticationException`, e.g. PLAIN's "Invalid username or password"); any other
failure (`SaslException`, e.g. SCRAM's bad proof or unknown user) is answered with one
generic message naming the mechanism, so that a client cannot probe which users exist.
"""

from __future__ import annotations

from typing import Protocol

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)


class SaslAuthenticationFailed(Exception):
    """A failure whose message goes to the client as it is."""


class SaslCredentialsRejected(Exception):
    """A failure the client learns only as "invalid credentials"; the reason is logged."""


def rejected_credentials_message(mechanism: str) -> str:
    """Kafka's answer to a SaslException: the same text whatever went wrong."""
    return (
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


class SaslServer(Protocol):
    """One authentication exchange on one connection (javax.security.sasl.SaslServer)."""

    mechanism: str

    def evaluate(self, response: bytes) -> bytes:
        """The challenge for the client's response; raises one of the two failures above."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str:
        """The authenticated user (valid once complete)."""
        ...
