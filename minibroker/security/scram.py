"""SASL/SCRAM-SHA-256 and -512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer serves them.

A credential is what Kafka stores: salt, StoredKey = H(HMAC(SaltedPassword, "Client Key")),
ServerKey = HMAC(SaltedPassword, "Server Key") and the iteration count; never the password.
The exchange: client-first (`n,[a=authzid],n=user,r=nonce`) -> server-first
(`r=nonce+server nonce,s=salt,i=iterations`) -> client-final (`c=...,r=...,p=proof`) ->
server-final (`v=server signature`). An unknown user, a bad proof or a bad nonce is a
SaslCredentialsRejected (the client gets Kafka's generic "invalid credentials" text).

Extensions in the client-first message (`,name=value` after the nonce) are read as Kafka's
ScramExtensions: `tokenauth=true` (any case) logs in with a delegation token (the user name is
the token id, the password the token's HMAC in base64) and authenticates the token's owner
(`token_authenticated`); other extensions are ignored, as Kafka ignores them.

The client-final nonce must be the combined nonce, or the client nonce followed by it: older
librdkafka (Debian's 2.0.2, kcat) sends the latter, which Kafka accepted until it compared
nonces exactly (it checked `endsWith`); the proof still covers the nonce as sent.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from minibroker.security.sasl import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslAuthenticationFailed,
    SaslCredentialsRejected,
)

MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True)
class ScramMechanism:
    name: str
    hash_name: str
    type_code: int  # the admin protocol's ScramMechanism byte
    min_iterations: int = 4096

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


SCRAM_MECHANISMS = {
    SCRAM_SHA_256: ScramMechanism(SCRAM_SHA_256, "sha256", 1),
    SCRAM_SHA_512: ScramMechanism(SCRAM_SHA_512, "sha512", 2),
}
MECHANISM_BY_TYPE = {m.type_code: m for m in SCRAM_MECHANISMS.values()}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        client_key = mechanism.hmac(salted_password, b"Client Key")
        server_key = mechanism.hmac(salted_password, b"Server Key")
        return cls(salt, mechanism.hash(client_key), server_key, iterations)

    @classmethod
    def from_password(
        cls, mechanism: ScramMechanism, password: str, iterations: int = DEFAULT_ITERATIONS
    ) -> ScramCredential:
        salt = os.urandom(32)
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_text(self) -> str:
        """Kafka's ScramCredentialUtils text: `salt=..,stored_key=..,server_key=..,iterations=N`."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        fields = dict(item.split("=", 1) for item in text.split(","))
        return cls(
            base64.b64decode(fields["salt"]),
            base64.b64decode(fields["stored_key"]),
            base64.b64decode(fields["server_key"]),
            int(fields["iterations"]),
        )


CredentialLookup = Callable[[str, str], ScramCredential | None]
# (token id, mechanism) -> (the token owner's name, the token's credential), None if unknown.
TokenLookup = Callable[[str, str], tuple[str, ScramCredential] | None]
TOKEN_AUTH = "tokenauth"

_CLIENT_FIRST = re.compile(
    r"(?P<gs2>[ny],(?:a=(?P<authzid>[^,]*))?,)n=(?P<saslname>[^,]*),r=(?P<nonce>[^,]+)"
    r"(?P<extensions>(?:,[A-Za-z]+=[^,]*)*)"
)
# Whole base64 only, as Kafka's ScramMessages: other text fails the match (invalid credentials).
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)?"
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>[^,]+)(?:,[A-Za-z]+=[^,]*)*)"
    rf",p=(?P<proof>{_BASE64})"
)


def sasl_name_to_user(sasl_name: str) -> str:
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


def _extensions(text: str) -> dict[str, str]:
    """`,a=1,b=2` -> {"a": "1", "b": "2"} (Kafka's Utils.parseMap)."""
    return dict(item.split("=", 1) for item in text.split(",") if item)


class ScramServer:
    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: CredentialLookup,
        token_lookup: TokenLookup | None = None,
    ) -> None:
        self.mechanism = mechanism.name
        self._scram = mechanism
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._token_authenticated = False
        self._user: str | None = None
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._client_nonce = ""
        self._nonce = ""
        self._complete = False

    def evaluate(self, response: bytes) -> bytes:
        try:
            text = response.decode()
        except UnicodeDecodeError as exc:
            raise SaslCredentialsRejected("SCRAM message is not UTF-8") from exc
        if self._credential is None:
            return self._server_first_message(text)
        if not self._complete:
            return self._server_final_message(text)
        raise SaslCredentialsRejected("SCRAM exchange already complete")

    def _server_first_message(self, client_first: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(client_first)
        if match is None:
            raise SaslCredentialsRejected(f"Invalid SCRAM client first message: {client_first!r}")
        user = sasl_name_to_user(match.group("saslname"))
        extensions = _extensions(match.group("extensions"))
        credential: ScramCredential | None
        if extensions.get(TOKEN_AUTH, "").lower() == "true":
            owner, credential = self._token_credential(user)
        else:
            owner, credential = user, self._lookup(user, self.mechanism)
        if credential is None:
            raise SaslCredentialsRejected("Authentication failed: Invalid user credentials")
        authorization_id = match.group("authzid") or ""
        if authorization_id and authorization_id != user:
            raise SaslAuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        if credential.iterations < self._scram.min_iterations:
            raise SaslCredentialsRejected(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self._scram.min_iterations} for {self.mechanism}"
            )
        self._user, self._credential = owner, credential
        self._gs2_header = match.group("gs2")
        self._client_first_bare = client_first[len(self._gs2_header) :]
        self._client_nonce = match.group("nonce")
        self._nonce = self._client_nonce + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def _token_credential(self, token_id: str) -> tuple[str, ScramCredential]:
        found = None if self._token_lookup is None else self._token_lookup(token_id, self.mechanism)
        if found is None:
            raise SaslCredentialsRejected(
                f"Token Authentication failed: Invalid tokenId : {token_id}"
            )
        self._token_authenticated = True
        return found

    def _server_final_message(self, client_final: str) -> bytes:
        assert self._credential is not None
        match = _CLIENT_FINAL.fullmatch(client_final)
        if match is None:
            raise SaslCredentialsRejected("Invalid SCRAM client final message format")
        if match.group("nonce") not in (self._nonce, self._client_nonce + self._nonce):
            raise SaslCredentialsRejected("Invalid client nonce in the final client message.")
        channel_binding = base64.b64encode(self._gs2_header.encode()).decode()
        if match.group("channel") != channel_binding:
            raise SaslCredentialsRejected("Invalid channel binding in the final client message.")
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match.group("without_proof"))
        ).encode()
        client_signature = self._scram.hmac(self._credential.stored_key, auth_message)
        proof = base64.b64decode(match.group("proof"))
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=False))
        if len(proof) != len(client_signature) or not hmac.compare_digest(
            self._scram.hash(client_key), self._credential.stored_key
        ):
            raise SaslCredentialsRejected("Invalid client credentials")
        server_signature = self._scram.hmac(self._credential.server_key, auth_message)
        self._complete = True
        return b"v=" + base64.b64encode(server_signature)

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        """The user, or for a delegation token the token owner's name."""
        return self._user or ""

    @property
    def token_authenticated(self) -> bool:
        """Whether the login used a delegation token (`tokenauth=true`)."""
        return self._complete and self._token_authenticated
