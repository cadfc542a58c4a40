"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer: one message, `authzid NUL user NUL pass`.

Users and passwords come from the listener's JAAS entry (`user_<name>="<password>"`).
Failures and their texts are Kafka's; the authorization id, if sent, must be the user name.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from minibroker.security.sasl import PLAIN, SaslAuthenticationFailed, SaslCredentialsRejected


class PlainServer:
    mechanism = PLAIN

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._user: str | None = None

    def evaluate(self, response: bytes) -> bytes:
        tokens = response.decode("utf-8", errors="replace").split("\0")
        if len(tokens) != 3:
            raise SaslCredentialsRejected(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}"
            )
        authorization_id, user, password = tokens
        if not user:
            raise SaslAuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != user:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._user = user
        return b""

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def authorization_id(self) -> str:
        return self._user or ""
