"""Rate limits: a token bucket per key (a principal's writes, an address's sign-ins), in memory."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..errors import RateLimited


class RateLimiter:
    """``rate`` writes per second with bursts of ``burst``; refuses with the wait needed.

    At most ``MAX_KEYS`` buckets are kept: sign-ins are keyed by address, and a board reached
    from a whole network would otherwise keep one for every address that ever tried.
    """

    MAX_KEYS = 10_000

    def __init__(self, rate: float, burst: int, monotonic: Callable[[], float], what: str = "writes") -> None:
        self.rate = rate
        self.what = what
        self.burst = burst
        self._monotonic = monotonic
        self._buckets: dict[Hashable, tuple[float, float]] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def check(self, key: Hashable) -> None:
        now = self._monotonic()
        if key not in self._buckets and len(self._buckets) >= self.MAX_KEYS:
            self._forget(now)
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            raise RateLimited(round((1.0 - tokens) / self.rate, 3), self.what)
        self._buckets[key] = (tokens - 1.0, now)

    def _forget(self, now: float) -> None:
        """Drop the buckets full again (as good as never used); while every one is still
        refilling, the older half of them too (first seen first)."""
        self._buckets = {
            k: (tokens, last)
            for k, (tokens, last) in self._buckets.items()
            if tokens + (now - last) * self.rate < self.burst
        }
        if len(self._buckets) >= self.MAX_KEYS:
            self._buckets = dict(list(self._buckets.items())[len(self._buckets) // 2 :])
