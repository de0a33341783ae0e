"""How long a claim's lease runs: shared by claim transitions and by posting, which renews it."""

from __future__ import annotations

from datetime import timedelta

from ..clock import Clock, iso, parse_time
from ..store.rows import ClaimRow

DEFAULT_LEASE_MINUTES = 60


def lease_minutes(claim: ClaimRow) -> float:
    """The lease length the holder chose when it claimed (kept on renewal and handoff)."""
    if claim["claimed_at"] and claim["lease_until"]:
        span = parse_time(claim["lease_until"]) - parse_time(claim["progress_at"] or claim["claimed_at"])
        return max(1.0, span.total_seconds() / 60)
    return DEFAULT_LEASE_MINUTES


def lease_until(clock: Clock, minutes: float) -> str:
    return iso(clock.now() + timedelta(minutes=minutes))
