"""SCRAM credentials: user -> mechanism -> salted credential, as Kafka keeps them.

They come from AlterUserScramCredentials and from the broker setting
`minibroker.scram.credentials`, written as `kafka-storage format --add-scram` takes them:
`SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-512=[name=bob,password=x,iterations=8192]`.
Configured users are (re)applied at every start. Everything is saved, salted, in
`<log.dirs>/minibroker-scram-credentials.json` (written atomically), so users created through
the admin API survive restarts; an in-memory broker keeps them in memory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from minibroker.config import BrokerConfig, ConfigError
from minibroker.log.checkpoints import fsync_directory
from minibroker.security.scram import (
    DEFAULT_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
)

CREDENTIALS_FILE = "minibroker-scram-credentials.json"
CONFIG_NAME = "minibroker.scram.credentials"

_ADD_SCRAM = re.compile(r"\s*(?P<mechanism>[A-Z0-9-]+)=\[(?P<fields>(?:[^\]\"]|\"[^\"]*\")*)\]\s*")
_FIELD = re.compile(r"\s*(?P<key>[a-z]+)=(?:\"(?P<quoted>[^\"]*)\"|(?P<bare>[^,]*))\s*")

Change = tuple[str, str, ScramCredential | None]  # user, mechanism, credential (None: delete)


class ScramCredentials:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._users: dict[str, dict[str, ScramCredential]] = {}

    @classmethod
    def open(cls, config: BrokerConfig, data_dir: Path | None) -> ScramCredentials:
        store = cls(None if data_dir is None else data_dir / CREDENTIALS_FILE)
        store._load()
        configured = parse_add_scram(config.raw(CONFIG_NAME) or "")
        if configured:
            store.apply(configured)
        return store

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._users)

    def of(self, user: str) -> dict[str, ScramCredential]:
        return dict(self._users.get(user, {}))

    def apply(self, changes: Iterable[Change]) -> None:
        """Upsert (credential) or delete (None) each entry, then save once."""
        for user, mechanism, credential in changes:
            mechanisms = self._users.setdefault(user, {})
            if credential is None:
                mechanisms.pop(mechanism, None)
            else:
                mechanisms[mechanism] = credential
            if not mechanisms:
                del self._users[user]
        self._save()

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        stored = json.loads(self._path.read_text())
        self._users = {
            user: {name: ScramCredential.from_text(text) for name, text in mechanisms.items()}
            for user, mechanisms in stored["credentials"].items()
        }

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "version": 1,
            "credentials": {
                user: {name: credential.to_text() for name, credential in mechanisms.items()}
                for user, mechanisms in self._users.items()
            },
        }
        temporary = self._path.with_name(self._path.name + ".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            json.dump(document, file, indent=1, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self._path)
        fsync_directory(self._path.parent)


def parse_add_scram(text: str) -> list[Change]:
    """`SCRAM-SHA-256=[name=alice,password=secret,iterations=8192],...` -> credentials."""
    changes: list[Change] = []
    position = 0
    text = text.strip()
    while position < len(text):
        entry = _ADD_SCRAM.match(text, position)
        if entry is None:
            raise ConfigError(
                f"{CONFIG_NAME}: expected SCRAM-SHA-256=[name=...,password=...] at "
                f"{text[position:]!r}"
            )
        changes.append(_credential_of(entry.group("mechanism"), entry.group("fields")))
        position = entry.end()
        if text[position : position + 1] == ",":
            position += 1
    return changes


def _credential_of(mechanism_name: str, fields_text: str) -> Change:
    mechanism = SCRAM_MECHANISMS.get(mechanism_name)
    if mechanism is None:
        raise ConfigError(f"{CONFIG_NAME}: unknown SCRAM mechanism {mechanism_name}")
    fields = {
        match.group("key"): match.group("quoted") or match.group("bare") or ""
        for match in _FIELD.finditer(fields_text)
    }
    if not fields.get("name") or not fields.get("password"):
        raise ConfigError(f"{CONFIG_NAME}: {mechanism_name} needs name= and password=")
    iterations = int(fields.get("iterations") or DEFAULT_ITERATIONS)
    if not mechanism.min_iterations <= iterations <= 16384:
        raise ConfigError(f"{CONFIG_NAME}: iterations {iterations} outside 4096..16384")
    credential = ScramCredential.from_password(mechanism, fields["password"], iterations)
    return fields["name"], mechanism_name, credential
