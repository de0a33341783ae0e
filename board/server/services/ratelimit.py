"""Rate limits: a token bucket per key (a principal's writes, an address's sign-ins), in memory."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..errors import RateLimited


class RateLimiter:
    """``rate`` writes per second with bursts of ``burst``; refuses with the wait needed."""

    def __init__(self, rate: float, burst: int, monotonic: Callable[[], float], what: str = "writes") -> None:
        self.rate = rate
        self.what = what
        self.burst = burst
        self._monotonic = monotonic
        self._buckets: dict[Hashable, tuple[float, float]] = {}

    def check(self, key: Hashable) -> None:
        now = self._monotonic()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            raise RateLimited(round((1.0 - tokens) / self.rate, 3), self.what)
        self._buckets[key] = (tokens - 1.0, now)
