"""The handler registry: `@handles(ApiKey.X, min, max)` binds one coroutine per API.

ApiVersions is answered from this registry, so the advertised ranges and the served ranges
are one list. Each broker gates the registry by the Kafka release it emulates (`api_gates`): a
key is advertised and accepted only where the release had it, at the intersection of the two
ranges (and versions a release advertised but refused, as Kafka 4's Produce v0-2, get
UNSUPPORTED_VERSION).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.releases import KafkaRelease

if TYPE_CHECKING:
    from minibroker.server.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True)
class HandlerSpec:
    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, HandlerSpec] = {}


def handles(api_key: ApiKey, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        if api_key in REGISTRY:
            raise RuntimeError(f"two handlers for {api_key.name}")
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, handler)
        return handler

    return register


@dataclass(frozen=True, slots=True)
class ApiGate:
    """One API as one broker offers it: advertised `advertised_min`-`max_version`, accepted
    from `accepted_min` (higher only where the release refused versions it advertised)."""

    spec: HandlerSpec
    advertised_min: int
    accepted_min: int
    max_version: int


def api_gates(release: KafkaRelease) -> dict[int, ApiGate]:
    """The registry's advertised ranges intersected with the release's, key by key."""
    gates: dict[int, ApiGate] = {}
    for key, spec in sorted(REGISTRY.items()):
        released = release.api_ranges.get(key)
        if released is None:
            continue
        low = max(spec.min_version, released[0])
        high = min(spec.max_version, released[1])
        if low <= high:
            accepted = max(low, release.refused_below.get(key, low))
            gates[key] = ApiGate(spec, low, accepted, high)
    return gates
