"""Delegation tokens (KIP-48), kept and checked as Kafka 4.3's DelegationTokenControlManager
and DelegationTokenManager keep and check them.

A token is its information (Kafka's TokenInformation: id, owner, requester, renewers, issue,
expiry and max timestamps) and its HMAC, HmacSHA512 of the token id keyed by
`delegation.token.secret.key` (UTF-8). The HMAC is never stored: it is computed again from the
key, as every Kafka broker computes it from the metadata log's DelegationTokenRecords, so a
changed key changes every token's HMAC. Without a key (unset or empty) tokens are disabled:
every token API answers DELEGATION_TOKEN_AUTH_DISABLED and no token logs in.

- Create: max timestamp = now + min(`delegation.token.max.lifetime.ms`, the request's max
  lifetime when positive); expiry = min(max, now + `delegation.token.expiry.time.ms`).
- Renew (owner or renewer): expiry = min(max, now + min(expiry time, the renew period when
  positive)); an unknown HMAC is DELEGATION_TOKEN_NOT_FOUND, an expired token
  DELEGATION_TOKEN_EXPIRED, anybody else DELEGATION_TOKEN_OWNER_MISMATCH.
- Expire (owner or renewer): a negative period removes the token now (expiry = now); else
  expiry = min(max, now + period), DELEGATION_TOKEN_EXPIRED for an expired token.
- Expired tokens (past their expiry or max timestamp) are removed by `sweep`, which the broker
  runs every `delegation.token.expiry.check.interval.ms` (Kafka's controller sweep); until
  then they still log in and are described, as in Kafka.
- Login: SCRAM with the token id as user name, the HMAC in base64 as password and the
  `tokenauth=true` extension (`scram_login`); the credential is made from the HMAC with the
  mechanism's minimum iterations (4096), as Kafka's DelegationTokenManager makes it.
- Requests over PLAINTEXT, over SSL without a client certificate (User:ANONYMOUS) or over a
  connection authenticated with a token are refused (`token_requests_allowed`).

Tokens are saved in `<log.dirs>/minibroker-delegation-tokens.json` (written atomically), so
they survive restarts; an in-memory broker keeps them in memory. Kafka keeps them in its
metadata log.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minibroker.auth.acls import ANONYMOUS
from minibroker.config import BrokerConfig, ConfigError
from minibroker.log.checkpoints import write_atomically
from minibroker.protocol.errors import ErrorCode
from minibroker.security.scram import SCRAM_MECHANISMS, ScramCredential

TOKENS_FILE = "minibroker-delegation-tokens.json"
SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME = "delegation.token.max.lifetime.ms"
EXPIRY_TIME = "delegation.token.expiry.time.ms"
EXPIRY_CHECK_INTERVAL = "delegation.token.expiry.check.interval.ms"
_POSITIVE_SETTINGS = (MAX_LIFETIME, EXPIRY_TIME, EXPIRY_CHECK_INTERVAL)
_LONG_MAX = (1 << 63) - 1
USER_TYPE = "User"


def token_requests_allowed(protocol: str, principal: str, token_authenticated: bool) -> bool:
    """Kafka's `allowTokenRequests`: no token request over a token-authenticated connection,
    PLAINTEXT, or SSL without a client certificate."""
    return not (
        token_authenticated
        or protocol == "PLAINTEXT"
        or (protocol == "SSL" and principal == ANONYMOUS)
    )


def split_principal(principal: str) -> tuple[str, str]:
    """`User:alice` -> ("User", "alice"), as Kafka's KafkaPrincipal type and name."""
    kind, _, name = principal.partition(":")
    return kind, name


def _sum(now: int, duration: int) -> int:
    """now + duration, capped at Long.MAX_VALUE as Kafka caps it."""
    return _LONG_MAX if now > _LONG_MAX - duration else now + duration


def _new_token_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 of a random UUID, never one
    starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class TokenInformation:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        """Kafka's TokenInformation.ownerOrRenewer (the requester counts too)."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def may_renew(self, principal: str) -> bool:
        """Kafka's allowedToRenew: the owner or a renewer (not the requester)."""
        return principal == self.owner or principal in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_ms < now or self.expiry_ms < now

    def with_expiry(self, expiry_ms: int) -> TokenInformation:
        return TokenInformation(
            self.token_id,
            self.owner,
            self.requester,
            self.renewers,
            self.issue_ms,
            self.max_ms,
            expiry_ms,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "token_id": self.token_id,
            "owner": self.owner,
            "requester": self.requester,
            "renewers": list(self.renewers),
            "issue_ms": self.issue_ms,
            "max_ms": self.max_ms,
            "expiry_ms": self.expiry_ms,
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> TokenInformation:
        return cls(
            item["token_id"],
            item["owner"],
            item["requester"],
            tuple(item["renewers"]),
            item["issue_ms"],
            item["max_ms"],
            item["expiry_ms"],
        )


@dataclass(frozen=True)
class TokenSettings:
    secret_key: str
    max_lifetime_ms: int
    expiry_time_ms: int
    expiry_check_interval_ms: int

    @classmethod
    def of(cls, config: BrokerConfig) -> TokenSettings:
        for name in _POSITIVE_SETTINGS:
            value = config.get_int(name)
            if value < 1:
                raise ConfigError(
                    f"Invalid value {value} for configuration {name}: Value must be at least 1"
                )
        return cls(
            config.get_str(SECRET_KEY),
            config.get_int(MAX_LIFETIME),
            config.get_int(EXPIRY_TIME),
            config.get_int(EXPIRY_CHECK_INTERVAL),
        )


class DelegationTokens:
    def __init__(self, settings: TokenSettings, path: Path | None = None) -> None:
        self.settings = settings
        self._path = path
        self._tokens: dict[str, TokenInformation] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    @classmethod
    def open(cls, config: BrokerConfig, data_dir: Path | None) -> DelegationTokens:
        tokens = cls(TokenSettings.of(config), None if data_dir is None else data_dir / TOKENS_FILE)
        tokens._load()
        return tokens

    @property
    def enabled(self) -> bool:
        return bool(self.settings.secret_key)

    def hmac(self, token_id: str) -> bytes:
        key = self.settings.secret_key.encode()
        return hmac.new(key, token_id.encode(), hashlib.sha512).digest()

    def tokens(self) -> list[TokenInformation]:
        return list(self._tokens.values())

    def by_hmac(self, token_hmac: bytes) -> TokenInformation | None:
        token_id = self._by_hmac.get(token_hmac)
        return None if token_id is None else self._tokens.get(token_id)

    # -- changes (the caller has checked `enabled`) ---------------------------------------

    def create(
        self,
        owner: str,
        requester: str,
        renewers: Iterable[str],
        max_lifetime_ms: int,
        now: int,
    ) -> TokenInformation:
        lifetime = self.settings.max_lifetime_ms
        if max_lifetime_ms > 0:
            lifetime = min(lifetime, max_lifetime_ms)
        max_ms = _sum(now, lifetime)
        expiry_ms = min(max_ms, _sum(now, self.settings.expiry_time_ms))
        token = TokenInformation(
            _new_token_id(), owner, requester, tuple(renewers), now, max_ms, expiry_ms
        )
        self._put(token)
        self._save()
        return token

    def renew(
        self, token_hmac: bytes, principal: str, renew_period_ms: int, now: int
    ) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp) as Kafka's renewDelegationToken answers."""
        token = self.by_hmac(token_hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if token.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        if not token.may_renew(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        period = self.settings.expiry_time_ms
        if renew_period_ms > 0:
            period = min(period, renew_period_ms)
        expiry_ms = min(token.max_ms, now + period)
        self._put(token.with_expiry(expiry_ms))
        self._save()
        return ErrorCode.NO_ERROR, expiry_ms

    def expire(
        self, token_hmac: bytes, principal: str, expiry_period_ms: int, now: int
    ) -> tuple[ErrorCode, int]:
        """(error, new expiry timestamp) as Kafka's expireDelegationToken answers."""
        token = self.by_hmac(token_hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if not token.may_renew(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        if expiry_period_ms < 0:
            self._remove(token.token_id)
            self._save()
            return ErrorCode.NO_ERROR, now
        if token.expired(now):
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        expiry_ms = min(token.max_ms, _sum(now, expiry_period_ms))
        self._put(token.with_expiry(expiry_ms))
        self._save()
        return ErrorCode.NO_ERROR, expiry_ms

    def sweep(self, now: int) -> list[TokenInformation]:
        """Remove the expired tokens; those removed."""
        expired = [token for token in self._tokens.values() if token.expired(now)]
        for token in expired:
            self._remove(token.token_id)
        if expired:
            self._save()
        return expired

    # -- login ----------------------------------------------------------------------------

    def scram_login(self, token_id: str, mechanism: str) -> tuple[str, ScramCredential] | None:
        """(owner name, SCRAM credential) for a `tokenauth` login with this token id, None for
        an unknown token (or tokens disabled)."""
        token = self._tokens.get(token_id) if self.enabled else None
        if token is None:
            return None
        key = (token_id, mechanism)
        credential = self._credentials.get(key)
        if credential is None:
            scram = SCRAM_MECHANISMS[mechanism]
            password = base64.b64encode(self.hmac(token_id)).decode()
            credential = ScramCredential.from_password(scram, password, scram.min_iterations)
            self._credentials[key] = credential
        return split_principal(token.owner)[1], credential

    # -- storage --------------------------------------------------------------------------

    def _put(self, token: TokenInformation) -> None:
        self._tokens[token.token_id] = token
        if self.enabled:
            self._by_hmac[self.hmac(token.token_id)] = token.token_id

    def _remove(self, token_id: str) -> None:
        self._tokens.pop(token_id, None)
        self._by_hmac = {key: tid for key, tid in self._by_hmac.items() if tid != token_id}
        for mechanism in SCRAM_MECHANISMS:
            self._credentials.pop((token_id, mechanism), None)

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        stored = json.loads(self._path.read_text())
        for item in stored["tokens"]:
            self._put(TokenInformation.from_json(item))

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        document = {"version": 1, "tokens": [t.to_json() for t in self._tokens.values()]}
        write_atomically(self._path, json.dumps(document, indent=1))
