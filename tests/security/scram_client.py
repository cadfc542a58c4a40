"""The client half of SCRAM (RFC 5802), to drive the broker's server half in wire tests."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramClient:
    def __init__(self, mechanism: str, user: str, password: str, extensions: str = "") -> None:
        """`extensions`: appended to the client-first message, e.g. ",tokenauth=true"."""
        self.hash_name = HASHES[mechanism]
        self.user, self.password = user, password
        self.nonce = secrets.token_urlsafe(18)
        name = user.replace("=", "=3D").replace(",", "=2C")
        self.client_first_bare = f"n={name},r={self.nonce}{extensions}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.client_first_bare}".encode()

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash_name).digest()

    def final(self, server_first: bytes) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        assert fields["r"].startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac(
            self.hash_name, self.password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
        )
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        auth_message = f"{self.client_first_bare},{server_first.decode()},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
