"""The handler registry: `@handles(ApiKey.X, min, max)` binds one coroutine per API.

ApiVersions is answered from this registry, so the advertised ranges and the served ranges
are one list. `advertise_from` lets a handler advertise versions below the ones it serves,
as Kafka does for Produce v0-2 (librdkafka's feature probe); those get UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from minibroker.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from minibroker.server.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True)
class HandlerSpec:
    api_key: ApiKey
    min_version: int
    max_version: int
    advertised_min: int
    handler: Handler

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def advertises(self, version: int) -> bool:
        return self.advertised_min <= version <= self.max_version


REGISTRY: dict[int, HandlerSpec] = {}


def handles(
    api_key: ApiKey, min_version: int, max_version: int, *, advertise_from: int | None = None
) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        if api_key in REGISTRY:
            raise RuntimeError(f"two handlers for {api_key.name}")
        advertised_min = min_version if advertise_from is None else advertise_from
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, advertised_min, handler)
        return handler

    return register


def advertised_ranges() -> list[tuple[int, int, int]]:
    return sorted(
        (spec.api_key, spec.advertised_min, spec.max_version) for spec in REGISTRY.values()
    )
