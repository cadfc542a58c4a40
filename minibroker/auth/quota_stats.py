"""Quota measurement and throttle times, as Kafka's ClientQuotaManager family computes them.

- `Rate` is Kafka's `Rate` over a `WindowedSum`: `samples` windows of `window_ms` (one extra
  slot for a sample overlapping the monitored window), samples without events for
  `samples * window_ms` reset, and the elapsed time never counted as less than `samples - 1`
  whole windows (Kafka's window-size rule).
- `TokenBucket` is Kafka's token bucket for `controller_mutation_rate`: refilled at the quota,
  holding at most `samples * window * quota`, exhausted below zero.
- `QuotaManager` is one quota type's ClientQuotaManager with its default callback: the
  entities with a quota, which entity applies to a (user, client id) and the metric tags that
  key its sensor, so clients matching the same entity at the same level share one rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

INACTIVE_SENSOR_EXPIRY_MS = 3_600_000
_SENSOR_PURGE_INTERVAL_MS = 60_000


class Default(Enum):
    """The default entity (a null entity name in Kafka's APIs)."""

    DEFAULT = "<default>"


DEFAULT = Default.DEFAULT
Name = str | Default | None
"""An entity name: a name, the default, or None when the entity has no such component."""
Tags = tuple[str, str]
"""Kafka's quota metric tags: (user, client id), "" where the level does not use it."""


def java_round(value: float) -> int:
    return math.floor(value + 0.5)


@dataclass(slots=True)
class _Sample:
    start_ms: int
    value: float = 0.0
    event_count: int = 0
    last_event_ms: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.event_count = 0


@dataclass(slots=True)
class Rate:
    samples: int
    window_ms: int
    _ring: list[_Sample] = field(default_factory=list)
    _current: int = 0
    last_record_ms: int = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms
        self.last_record_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Per second: the windowed sum over the window size."""
        self._purge(now_ms)
        total = sum(sample.value for sample in self._ring)
        return total / (self.window_size(now_ms) / 1000)

    def window_size(self, now_ms: int) -> int:
        self._purge(now_ms)
        if not self._ring:
            self._ring.append(_Sample(now_ms, last_event_ms=now_ms))
        elapsed = now_ms - min(sample.start_ms for sample in self._ring)
        full_windows = int(elapsed / self.window_ms)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms, last_event_ms=now_ms))
        return self._ring[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._ring):
            sample = _Sample(now_ms, last_event_ms=now_ms)
            self._ring.append(sample)
            return sample
        sample = self._ring[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._ring:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)


@dataclass(slots=True)
class TokenBucket:
    tokens: float = 0.0
    last_update_ms: int = 0
    last_record_ms: int = 0

    def measure(self, quota: float, burst: float, now_ms: int) -> float:
        self._refill(quota, burst, now_ms)
        return self.tokens

    def record(self, value: float, quota: float, burst: float, now_ms: int) -> None:
        self._refill(quota, burst, now_ms)
        self.tokens = min(burst, self.tokens - value)
        self.last_record_ms = now_ms

    def _refill(self, quota: float, burst: float, now_ms: int) -> None:
        self.tokens = min(burst, self.tokens + quota * (now_ms - self.last_update_ms) / 1000)
        self.last_update_ms = now_ms


_CLIENT_ID_QUOTAS, _USER_QUOTAS, _USER_CLIENT_ID_QUOTAS = 1, 2, 4


class QuotaManager:
    """One quota type (`producer_byte_rate`, ...): its quotas by (user, client id) entity."""

    def __init__(self, samples: int, window_seconds: int, max_throttle_ms: int | None = None):
        self.samples = samples
        self.window_ms = window_seconds * 1000
        self.max_throttle_ms = max_throttle_ms
        self.quotas: dict[tuple[Name, Name], float] = {}
        self._types = 0
        self._rates: dict[Tags, Rate] = {}
        self._buckets: dict[Tags, TokenBucket] = {}
        self._last_purge_ms = 0

    @property
    def enabled(self) -> bool:
        return self._types != 0

    def update(self, user: Name, client_id: Name, value: float | None) -> None:
        if value is None:
            self.quotas.pop((user, client_id), None)
        else:
            self.quotas[(user, client_id)] = value
        self._types = 0
        for quota_user, quota_client in self.quotas:
            if quota_user is not None:
                self._types |= _USER_CLIENT_ID_QUOTAS if quota_client is not None else _USER_QUOTAS
            else:
                self._types |= _CLIENT_ID_QUOTAS

    def metric_tags(self, user: str, client_id: str) -> Tags:
        """The level whose quota applies, as Kafka's DefaultQuotaCallback.quotaMetricTags."""
        types = self._types
        if types in (0, _CLIENT_ID_QUOTAS):
            return "", client_id
        if types == _USER_QUOTAS:
            return user, ""
        if types == _USER_CLIENT_ID_QUOTAS:
            return user, client_id
        quotas = self.quotas
        if (user, client_id) in quotas or (user, DEFAULT) in quotas:
            return user, client_id
        if (user, None) in quotas:
            return user, ""
        if (DEFAULT, client_id) in quotas or (DEFAULT, DEFAULT) in quotas:
            return user, client_id
        if (DEFAULT, None) in quotas:
            return user, ""
        return "", client_id

    def limit(self, tags: Tags) -> float | None:
        """The quota for a sensor's tags, in Kafka's order of precedence."""
        user, client_id = tags
        candidates: tuple[tuple[Name, Name], ...]
        if user and client_id:
            candidates = ((user, client_id), (user, DEFAULT), (DEFAULT, client_id))
            candidates += ((DEFAULT, DEFAULT),)
        elif user:
            candidates = ((user, None), (DEFAULT, None))
        elif client_id:
            candidates = ((None, client_id), (None, DEFAULT))
        else:
            return None
        for entity in candidates:
            if (found := self.quotas.get(entity)) is not None:
                return found
        return None

    def quota_for(self, user: str, client_id: str) -> float | None:
        return self.limit(self.metric_tags(user, client_id))

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` on the client's rate; the throttle time when over its quota."""
        tags = self.metric_tags(user, client_id)
        rate = self._rate(tags, now_ms)
        rate.record(value, now_ms)
        bound = self.limit(tags)
        if bound is None:
            return 0
        measured = rate.measure(now_ms)
        if measured <= bound:
            return 0
        throttle = java_round((measured - bound) / bound * rate.window_size(now_ms))
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        self._rate(self.metric_tags(user, client_id), now_ms).record(-value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most that can be recorded at once without a certain throttle (Kafka's
        getMaxValueInQuotaWindow); None without a quota."""
        bound = self.quota_for(user, client_id)
        if bound is None:
            return None
        return bound * (self.samples - 1) * self.window_ms / 1000

    def bucket(self, user: str, client_id: str, now_ms: int) -> tuple[TokenBucket, float] | None:
        """The client's token bucket and its quota (controller mutations), None without one."""
        tags = self.metric_tags(user, client_id)
        bound = self.limit(tags)
        if bound is None:
            return None
        self._purge(now_ms)
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket()
        return bucket, bound

    def burst(self, bound: float) -> float:
        return self.samples * self.window_ms / 1000 * bound

    def _rate(self, tags: Tags, now_ms: int) -> Rate:
        self._purge(now_ms)
        rate = self._rates.get(tags)
        if rate is None:
            rate = self._rates[tags] = Rate(self.samples, self.window_ms)
        return rate

    def _purge(self, now_ms: int) -> None:
        """Forget sensors unused for an hour, as Kafka expires them."""
        if now_ms - self._last_purge_ms < _SENSOR_PURGE_INTERVAL_MS:
            return
        self._last_purge_ms = now_ms
        oldest = now_ms - INACTIVE_SENSOR_EXPIRY_MS
        self._rates = {t: r for t, r in self._rates.items() if r.last_record_ms >= oldest}
        self._buckets = {t: b for t, b in self._buckets.items() if b.last_record_ms >= oldest}


class MutationQuota:
    """One request's controller mutation quota (Kafka's Strict/PermissiveControllerMutationQuota):
    strict (newer request versions) refuses partitions once the bucket is exhausted; permissive
    accepts them and only throttles."""

    def __init__(
        self,
        manager: QuotaManager,
        found: tuple[TokenBucket, float] | None,
        strict: bool,
        clock_ms: Callable[[], int],
    ) -> None:
        self._manager = manager
        self._found = found
        self._strict = strict
        self._clock_ms = clock_ms
        self._last_throttle_ms = 0
        self._last_recorded_ms = 0

    def record(self, partitions: int) -> bool:
        """Count `partitions` created or deleted; False when a strict quota refuses them."""
        if self._found is None:
            return True
        bucket, bound = self._found
        burst = self._manager.burst(bound)
        now_ms = self._clock_ms()
        if self._strict:
            tokens = bucket.measure(bound, burst, now_ms)
            if tokens < 0:
                self._throttled(tokens, bound, now_ms)
                return False
            bucket.record(partitions, bound, burst, now_ms)
            return True
        bucket.record(partitions, bound, burst, now_ms)
        tokens = bucket.measure(bound, burst, now_ms)
        if tokens < 0:
            self._throttled(tokens, bound, now_ms)
        return True

    def _throttled(self, tokens: float, bound: float, now_ms: int) -> None:
        self._last_throttle_ms = java_round(-tokens / bound * 1000)
        self._last_recorded_ms = now_ms

    def throttle_time_ms(self) -> int:
        """The throttle time left since it was recorded."""
        elapsed = self._clock_ms() - self._last_recorded_ms
        return max(0, self._last_throttle_ms - elapsed)
