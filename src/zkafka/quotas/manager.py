"""`QuotaManager`: Kafka's ClientQuotaManager without I/O. The caller says who sent how much when; the
answer is how long to throttle the response (KIP-219: the broker sends it with `throttle_time_ms` and
mutes the connection that long; the client is never disconnected for exceeding a quota).

    throttle_ms = round((observed rate - bound) / bound * window span)

with the window span of `rate.SampledRate`. Byte-rate throttles are not capped (Kafka's
ClientQuotaManager does not cap them: a client far over its quota waits until its average is back
at the bound); the request-time quota caps them at one window, as Kafka's ClientRequestQuotaManager
does (`QuotaUtils.boundedThrottleTime`), because request time is recorded after the fact and one
slow request must not silence a client for the whole measurement.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from zkafka.config.broker import BrokerConfig
from zkafka.quotas.entities import ClientEntity, QuotaLimit
from zkafka.quotas.rate import SampledRate
from zkafka.quotas.types import QuotaType

__all__ = ["INACTIVE_EXPIRY_MS", "LimitSource", "QuotaManager", "QuotaWindows", "RequestQuotaManager"]

INT32_MAX = 2**31 - 1
INACTIVE_EXPIRY_MS = 3_600_000
"""Kafka drops a client's quota sensors after an hour without traffic."""

LimitSource = Callable[[QuotaType, ClientEntity], QuotaLimit | None]
"""Usually `QuotaConfigCache.limit`."""


@dataclass(frozen=True, slots=True)
class QuotaWindows:
    num: int = 11
    """`quota.window.num`."""
    size_s: int = 1
    """`quota.window.size.seconds`."""

    @classmethod
    def from_config(cls, config: BrokerConfig) -> QuotaWindows:
        return cls(config.quota_window_num, config.quota_window_size_seconds)


class QuotaManager:
    def __init__(
        self,
        quota: QuotaType,
        limits: LimitSource,
        windows: QuotaWindows = QuotaWindows(),
        *,
        max_throttle_ms: int | None = None,
    ) -> None:
        self.quota = quota
        self.limits = limits
        self.windows = windows
        self.max_throttle_ms = max_throttle_ms
        self._rates: dict[tuple[str, str], SampledRate] = {}
        # Keyed (quota label, user, client id): the registry renders them as they are.
        self.throttle_time_ms: dict[tuple[str, str, str], int] = {}
        self.throttled: dict[tuple[str, str, str], int] = {}

    def record(self, who: ClientEntity, value: float, now_ms: int) -> int:
        """Count `value` (bytes, or request-time percentage) for `who`; the throttle time in ms (0 within
        the quota, and always 0 for clients no quota applies to: they are not even measured)."""
        limit = self.limits(self.quota, who)
        if limit is None:
            return 0
        rate = self._rates.get(limit.sensor)
        if rate is None:
            rate = self._rates[limit.sensor] = SampledRate(self.windows.num, self.windows.size_s * 1000)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= limit.bound:
            return 0
        throttle = (observed - limit.bound) / limit.bound * rate.window_span_ms(now_ms)
        throttle_ms = min(math.floor(throttle + 0.5), INT32_MAX)  # Java's Math.round, then an int field
        if self.max_throttle_ms is not None:
            throttle_ms = min(throttle_ms, self.max_throttle_ms)
        key = (self.quota.label, *limit.sensor)
        self.throttle_time_ms[key] = self.throttle_time_ms.get(key, 0) + throttle_ms
        self.throttled[key] = self.throttled.get(key, 0) + 1
        return throttle_ms

    def rate(self, who: ClientEntity, now_ms: int) -> float | None:
        """The measured rate of `who`'s sensor (None when no quota applies or nothing was recorded)."""
        limit = self.limits(self.quota, who)
        rate = None if limit is None else self._rates.get(limit.sensor)
        return None if rate is None else rate.measure(now_ms)

    def max_value_in_window(self, who: ClientEntity) -> float | None:
        """The most a response may carry (Kafka's getMaxValueInQuotaWindow): what the bound allows over
        the measured windows, so a fetch response can be sized to the quota; None = unlimited."""
        limit = self.limits(self.quota, who)
        if limit is None:
            return None
        return limit.bound * (self.windows.num - 1) * self.windows.size_s

    def expire_idle(self, now_ms: int, idle_ms: int = INACTIVE_EXPIRY_MS) -> int:
        """Forget measurements idle for `idle_ms` (client ids come and go); returns how many."""
        idle = [k for k, r in self._rates.items() if now_ms - _last(r, now_ms) >= idle_ms]
        for key in idle:
            del self._rates[key]
        return len(idle)


def _last(rate: SampledRate, now_ms: int) -> int:
    last = rate.last_recorded_ms()
    return now_ms if last is None else last


class RequestQuotaManager(QuotaManager):
    """`request_percentage`: time spent on a client's requests, as a percentage of one event loop's time
    (Kafka: of one request-handler thread; zkafka runs one loop per broker, so 100 = the whole broker)."""

    NANOS_TO_PERCENT_SECONDS = 100 / 1e9

    def __init__(self, limits: LimitSource, windows: QuotaWindows = QuotaWindows()) -> None:
        super().__init__(QuotaType.REQUEST, limits, windows, max_throttle_ms=windows.size_s * 1000)

    def record_request_time(self, who: ClientEntity, thread_time_ns: int, now_ms: int) -> int:
        return self.record(who, thread_time_ns * self.NANOS_TO_PERCENT_SECONDS, now_ms)
