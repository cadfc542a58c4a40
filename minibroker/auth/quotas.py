"""Client quotas: the entities and values AlterClientQuotas sets, and their enforcement.

Entities are Kafka's: `user`, `client-id` (alone or together) and `ip`, each with a name or
the default (a null name). Alterations are checked as Kafka's ClientQuotaControlManager checks
them (entity types and combinations, keys per entity, values by their config type), with its
messages; they are kept in `<log.dirs>/minibroker-client-quotas.json` (written atomically),
in memory for an in-memory broker.

Enforcement follows Kafka's quota managers (`quota_stats.py`): `producer_byte_rate` counts
produce request bytes, `consumer_byte_rate` consumer fetch response bytes, `request_percentage`
the time spent handling requests (percent of one thread, throttle at most one window), over
`quota.window.num` windows of `quota.window.size.seconds`; `controller_mutation_rate` counts
partitions created or deleted in a token bucket (`controller.quota.window.*`).
`connection_creation_rate` (ip entities) is stored and described but not enforced. With no
quota of a type, nothing is measured for it (`enabled` is the one check on the request path).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from minibroker.auth.quota_stats import DEFAULT, MutationQuota, Name, QuotaManager
from minibroker.config import BrokerConfig
from minibroker.log.checkpoints import write_atomically
from minibroker.protocol.errors import ErrorCode

QUOTAS_FILE = "minibroker-client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
_NANOS_TO_PERCENTAGE = 100.0 / 1_000_000_000


class ConfigType(Enum):
    LONG = "LONG"
    INT = "INT"
    DOUBLE = "DOUBLE"


USER_CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: ConfigType.LONG,
    CONSUMER_BYTE_RATE: ConfigType.LONG,
    REQUEST_PERCENTAGE: ConfigType.DOUBLE,
    CONTROLLER_MUTATION_RATE: ConfigType.DOUBLE,
}
IP_KEYS = {CONNECTION_CREATION_RATE: ConfigType.INT}
_INT_MAX = 2**31 - 1
_LONG_MAX = float(2**63 - 1)
# Java's HashMap iterates these keys in this order (their hash buckets), as Kafka prints them.
_JAVA_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}

Entity = tuple[tuple[str, str | None], ...]
"""(entity type, name or None for the default), in Kafka's printing order."""


class QuotaError(Exception):
    """A request Kafka refuses as a whole (DescribeClientQuotas): its error and message."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """An entity from (type, name) pairs; a type given twice keeps its last name, as Kafka's
    request parsing does."""
    by_type = dict(pairs)
    return tuple(sorted(by_type.items(), key=lambda item: _JAVA_ORDER.get(item[0], 3)))


def entity_text(entity: Entity) -> str:
    """As Kafka's ClientQuotaEntity.toString."""
    entries = ", ".join(f"{kind}={'null' if name is None else name}" for kind, name in entity)
    return f"ClientQuotaEntity(entries={{{entries}}})"


Result = tuple[ErrorCode, str | None]
OK: Result = (ErrorCode.NO_ERROR, None)


def _invalid(message: str) -> Result:
    return ErrorCode.INVALID_REQUEST, message


def _entity_error(entity: Entity) -> Result | None:
    if not entity:
        return _invalid("Invalid empty client quota entity")
    for kind, name in entity:
        if kind not in (USER, CLIENT_ID, IP):
            return _invalid(f"Unhandled client quota entity type: {kind}")
        if name == "":
            return _invalid(f"Empty {kind} not supported")
    return None


def _valid_ip_entity(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return True


def _keys_for(entity: Entity) -> dict[str, ConfigType] | Result:
    types = dict(entity)
    if IP in types:
        if USER in types or CLIENT_ID in types:
            # Kafka's message, missing space included.
            return _invalid(
                "Invalid quota entity combination, IP entity shouldnot be combined with User "
                "or ClientId"
            )
        if not _valid_ip_entity(types[IP]):
            return _invalid(f"{types[IP]} is not a valid IP or resolvable host.")
        return IP_KEYS
    return USER_CLIENT_KEYS


def _value_error(keys: dict[str, ConfigType], key: str, value: float) -> Result | None:
    config_type = keys.get(key)
    if config_type is None:
        return _invalid(f"Invalid configuration key {key}")
    if value <= 0.0:
        return _invalid(f"Quota {key} must be greater than 0")
    if config_type is ConfigType.DOUBLE:
        return None
    if config_type is ConfigType.INT and value > _INT_MAX:
        return _invalid(f"Proposed value for {key} is too large for an INT.")
    if config_type is ConfigType.LONG and value > _LONG_MAX:
        return _invalid(f"Proposed value for {key} is too large for a LONG.")
    if abs(value % 1.0) > 1e-6:
        return _invalid(f"{key} cannot be a fractional value.")
    return None


Change = tuple[Entity, str, float | None]  # entity, key, value (None: remove)
Alteration = tuple[Entity, Sequence[tuple[str, float | None]]]  # entity, ops


@dataclass(frozen=True)
class ComponentFilter:
    entity_type: str
    match_type: int  # 0 exact, 1 default, 2 any specified
    match: str | None


MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def _filter_maps(components: Sequence[ComponentFilter]) -> tuple[dict[str, str | None], set[str]]:
    """Kafka's ClientQuotasImage.describe checks, in its order; exact and type matches."""
    exact: dict[str, str | None] = {}
    any_of: set[str] = set()
    for component in components:
        kind = component.entity_type
        if not kind:
            raise QuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
        if kind in exact or kind in any_of:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {kind} cannot appear more than once in the filter.",
            )
        if kind not in (IP, USER, CLIENT_ID):
            raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
        _add_component(component, exact, any_of)
    if (IP in exact or IP in any_of) and ({USER, CLIENT_ID} & (exact.keys() | any_of)):
        raise QuotaError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return exact, any_of


def _add_component(
    component: ComponentFilter, exact: dict[str, str | None], any_of: set[str]
) -> None:
    kind, match = component.entity_type, component.match
    if component.match_type == MATCH_EXACT:
        if match is None:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            )
        exact[kind] = match
    elif component.match_type == MATCH_DEFAULT:
        if match is not None:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            )
        exact[kind] = None
    elif component.match_type == MATCH_SPECIFIED:
        if match is not None:
            raise QuotaError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            )
        any_of.add(kind)
    else:
        raise QuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {component.match_type}")


def _matches(entity: Entity, exact: dict[str, str | None], any_of: set[str], strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(any_of):
        return False
    for kind, name in exact.items():
        if kind not in names or names[kind] != name:
            return False
    return all(kind in names for kind in any_of)


def _manager_name(name: str | None) -> Name:
    return DEFAULT if name is None else name


class ClientQuotas:
    def __init__(self, config: BrokerConfig, path: Path | None = None) -> None:
        self._path = path
        self._values: dict[Entity, dict[str, float]] = {}
        samples = config.get_int("quota.window.num")
        window = config.get_int("quota.window.size.seconds")
        self.produce = QuotaManager(samples, window)
        self.fetch = QuotaManager(samples, window)
        self.request = QuotaManager(samples, window, max_throttle_ms=window * 1000)
        self.controller_mutation = QuotaManager(
            config.get_int("controller.quota.window.num"),
            config.get_int("controller.quota.window.size.seconds"),
        )
        self._managers = {
            PRODUCER_BYTE_RATE: self.produce,
            CONSUMER_BYTE_RATE: self.fetch,
            REQUEST_PERCENTAGE: self.request,
            CONTROLLER_MUTATION_RATE: self.controller_mutation,
        }
        self.enabled = False
        """Whether any user or client-id quota is set: the request path's only check."""

    @classmethod
    def open(cls, config: BrokerConfig, data_dir: Path | None) -> ClientQuotas:
        quotas = cls(config, None if data_dir is None else data_dir / QUOTAS_FILE)
        quotas._load()
        return quotas

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000

    # -- the entities and values -----------------------------------------------------------

    def entities(self) -> dict[Entity, dict[str, float]]:
        return {entity: dict(values) for entity, values in self._values.items()}

    def describe(
        self, components: Sequence[ComponentFilter], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities the filter matches; QuotaError for a filter Kafka refuses."""
        exact, any_of = _filter_maps(components)
        return [
            (entity, dict(values))
            for entity, values in self._values.items()
            if _matches(entity, exact, any_of, strict)
        ]

    def alter(
        self, alterations: Sequence[Alteration], validate_only: bool = False
    ) -> list[tuple[Entity, Result]]:
        """Kafka's ClientQuotaControlManager.alterClientQuotas: one result per distinct entity
        (in request order); the changes of entities that passed apply unless `validate_only`."""
        results: dict[Entity, Result] = {}
        changes: list[Change] = []
        for entity, ops in alterations:
            keys = [key for key, _value in ops]
            if len(set(keys)) != len(keys) or entity in results:
                # A duplicate key is recorded under the entity first, so Kafka answers both
                # cases alike.
                results[entity] = _invalid(f"Ignoring duplicate entity {entity_text(entity)}")
                continue
            results[entity] = self._check_alteration(entity, ops, changes)
        if not validate_only and changes:
            self.apply(changes)
        return list(results.items())

    def _check_alteration(
        self, entity: Entity, ops: Sequence[tuple[str, float | None]], changes: list[Change]
    ) -> Result:
        error = _entity_error(entity)
        if error is not None:
            return error
        keys = _keys_for(entity)
        if not isinstance(keys, dict):
            return keys
        current = self._values.get(entity, {})
        wanted: list[Change] = []
        for key, value in ops:
            if value is None:
                if key in current:
                    wanted.append((entity, key, None))
                continue
            error = _value_error(keys, key, value)
            if error is not None:
                return error
            if current.get(key) != value:
                wanted.append((entity, key, value))
        changes.extend(wanted)
        return OK

    def apply(self, changes: Iterable[Change]) -> None:
        """Set (a value) or remove (None) each entity's key, then save once."""
        for entity, key, value in changes:
            values = self._values.setdefault(entity, {})
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
            if not values:
                del self._values[entity]
            self._update_manager(entity, key, value)
        self.enabled = any(manager.enabled for manager in self._managers.values())
        self._save()

    def _update_manager(self, entity: Entity, key: str, value: float | None) -> None:
        manager = self._managers.get(key)
        names = dict(entity)
        if manager is None or IP in names:
            return
        user = _manager_name(names[USER]) if USER in names else None
        client_id = _manager_name(names[CLIENT_ID]) if CLIENT_ID in names else None
        manager.update(user, client_id, value)

    # -- enforcement -----------------------------------------------------------------------

    def record_produce(self, principal: str, client_id: str, size: int) -> int:
        if not self.produce.enabled:
            return 0
        return self.produce.record(_user(principal), client_id, size, self.now_ms())

    def record_fetch(self, principal: str, client_id: str, size: int, now_ms: int) -> int:
        if not self.fetch.enabled:
            return 0
        return self.fetch.record(_user(principal), client_id, size, now_ms)

    def unrecord_fetch(self, principal: str, client_id: str, size: int, now_ms: int) -> None:
        if self.fetch.enabled:
            self.fetch.unrecord(_user(principal), client_id, size, now_ms)

    def max_fetch_bytes(self, principal: str, client_id: str) -> int | None:
        """The most one fetch may return without a certain throttle; None without a quota."""
        if not self.fetch.enabled:
            return None
        found = self.fetch.max_value_in_window(_user(principal), client_id)
        return None if found is None else int(min(found, _INT_MAX))

    def record_request_time(self, principal: str, client_id: str, nanos: int) -> int:
        if not self.request.enabled:
            return 0
        value = nanos * _NANOS_TO_PERCENTAGE
        return self.request.record(_user(principal), client_id, value, self.now_ms())

    def mutation_quota(self, principal: str, client_id: str, strict: bool) -> MutationQuota:
        """The quota one CreateTopics/CreatePartitions/DeleteTopics request counts against."""
        manager = self.controller_mutation
        found = (
            manager.bucket(_user(principal), client_id, self.now_ms()) if manager.enabled else None
        )
        return MutationQuota(manager, found, strict, self.now_ms)

    # -- persistence -----------------------------------------------------------------------

    def _load(self) -> None:
        if self._path is None or not self._path.exists():
            return
        stored = json.loads(self._path.read_text())
        changes: list[Change] = []
        for item in stored["quotas"]:
            entity = entity_of((kind, name) for kind, name in item["entity"])
            changes.extend((entity, key, float(value)) for key, value in item["values"].items())
        path, self._path = self._path, None
        self.apply(changes)
        self._path = path

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "version": 1,
            "quotas": [
                {"entity": [list(pair) for pair in entity], "values": values}
                for entity, values in self._values.items()
            ],
        }
        write_atomically(self._path, json.dumps(document, indent=1))


def _user(principal: str) -> str:
    """The principal's name, as Kafka's quotas use it ("User:alice" -> "alice")."""
    return principal.partition(":")[2] or principal
