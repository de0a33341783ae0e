"""Templates and safe rendering: Jinja2 with autoescape, bodies through the board's Markdown.

Bodies are hostile input; :mod:`..markdown` says how they are made safe.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jinja2

from ..clock import parse_time
from ..markdown import markdown
from ..services.fleet_view import BADGES, PENDING, last_line


def ago(stamp: str | None, now: datetime | None = None) -> str:
    """'12 min' for a time in the past, for claim and presence lines."""
    if not stamp:
        return ""
    seconds = max(0, int(((now or datetime.now(UTC)) - parse_time(stamp)).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def claim_line(claim: dict[str, Any] | None) -> str:
    """The claim state of a root as the board shows it: open, claimed by X for 12 min, done."""
    if not claim or claim.get("state") in (None, "open"):
        return "open"
    if claim["state"] == "done":
        return "done"
    since = claim.get("claimed_at") or claim.get("updated_at")
    return f"claimed by {claim.get('holder')} for {ago(since)}"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("board.server.pages", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["ago"] = ago
    env.filters["last_line"] = last_line
    env.globals["claim_line"] = claim_line
    env.globals["fleet_badges"] = BADGES
    env.globals["fleet_pending"] = PENDING
    return env
