"""Templates and safe rendering: Jinja2 with autoescape, bodies through the board's Markdown.

Bodies are hostile input; :mod:`..markdown` says how they are made safe.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ...shown import escaped_controls, last_line
from ..clock import parse_time
from ..markdown import first_line, markdown
from ..services.fleet import RECENT_ORDERS
from ..services.fleet_view import BADGES, PENDING, WAKE_OUTCOMES
from ..services.routines import RUN_STATES

#: A snippet's pieces: an escaped character (``\\*``, ``\\\\``), a mark (``**``), or text.
PIECE = re.compile(r"\\([\\*])|(\*\*)|([^\\*]+|[\\*])")


def highlight(snippet: str) -> Markup:
    """A search snippet (Markdown: hits in ``**``, the text's own ``*`` and ``\\`` escaped)
    with its hits marked, everything else escaped as HTML."""
    out, marked = [], False
    for found in PIECE.finditer(snippet):
        literal, mark, text = found.groups()
        if mark:
            out.append(Markup("</mark>" if marked else "<mark>"))
            marked = not marked
        else:
            out.append(escape(literal or text))
    if marked:
        out.append(Markup("</mark>"))
    return Markup("").join(out)


def heading_line(text: str, most: int = 80) -> str:
    """A message as one line of a heading: its first line without Markdown's marks (``# Design
    notes`` reads ``Design notes``), else, for a body that is a code block, its code on one line
    without the fence's backticks."""
    line = first_line(text, most)
    if line:
        return line
    flat = " ".join(text.replace("```", " ").split())
    return flat if len(flat) <= most else flat[: most - 1].rstrip() + "…"


def ago(stamp: str | None, now: datetime | None = None) -> str:
    """'12 min' for a time in the past, for claim and presence lines."""
    if not stamp:
        return ""
    seconds = max(0, int(((now or datetime.now(UTC)) - parse_time(stamp)).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def relative(at: datetime, now: datetime | None = None) -> str:
    """'3 min ago' or 'in 2 h': what a time is from now, in the words layout.js keeps current."""
    seconds = int(((now or datetime.now(UTC)) - at).total_seconds())
    size = abs(seconds)
    if size < 10:
        return "just now"
    if size >= 86400:
        words = f"{size // 86400} d"
    elif size >= 3600:
        words = f"{size // 3600} h"
    elif size >= 60:
        words = f"{size // 60} min"
    else:
        words = f"{size} s"
    return f"{words} ago" if seconds > 0 else f"in {words}"


@lru_cache(maxsize=4096)
def _exact(stamp: str) -> tuple[datetime, str]:
    """A stored time parsed, with its ``<time>`` attributes (a page repeats its times on every load)."""
    at = parse_time(stamp)
    return at, f'datetime="{at:%Y-%m-%dT%H:%M:%SZ}" title="{at:%Y-%m-%d %H:%M:%S} UTC"'


def when(stamp: str | None, empty: str = "") -> Markup:
    """A time as every page shows it: relative words in a ``<time>`` with the exact time on hover.

    The server writes UTC; layout.js rewrites the title in the browser's (or the chosen) time zone
    and keeps the words current as time passes, so a page left open does not go stale.
    """
    if not stamp:
        return escape(empty)
    at, exact = _exact(stamp)
    # Digits and our own words only, so nothing to escape: an f-string is five times quicker than
    # Markup.format, which counts on a thread page of 200 messages.
    return Markup(f"<time {exact}>{relative(at)}</time>")


def claim_line(claim: dict[str, Any] | None) -> str:
    """The claim state of a root as the board shows it: open, claimed by X for 12 min, done."""
    if not claim or claim.get("state") in (None, "open"):
        return "open"
    if claim["state"] == "done":
        return "done"
    since = claim.get("claimed_at") or claim.get("updated_at")
    held = ago(since)
    if held.endswith(" s") and int(held[:-2]) < 10:  # "for 0 s" right after a claim or hand-off
        return f"claimed by {claim.get('holder')} just now"
    return f"claimed by {claim.get('holder')} for {held}"


#: A log line's parts as shown: the time's text, a level and a message, each field's key and value.
LOG_WORD = 80
LOG_VALUE = 300
#: A line's own level, lower-cased, to the tone it is shown in (any other level shows untoned).
LOG_TONES = {
    "debug": "off",
    "info": "off",
    "warning": "warn",
    "warn": "warn",
    "error": "bad",
    "critical": "bad",
}


@dataclass(frozen=True)
class LogEntry:
    """One JSON line of a daemon's log, as a person reads it: when, how bad, what, and the rest."""

    at: str  # HH:MM:SS (UTC) when the time parses, else the text given
    stamp: str  # the whole time, for its tooltip
    level: str
    tone: str
    message: str
    fields: list[tuple[str, str]]


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, with no character kept unescaped: a line break in a
    value would start a line that reads as the daemon's own."""
    shown = escaped_controls(text[:limit], keep="")
    return shown if len(shown) <= limit and len(text) <= limit else shown[: limit - 1] + "…"


def _shown(value: Any) -> str:
    """A field's value in a line: a word as it is, anything else as compact JSON."""
    if isinstance(value, str) and value and value.isprintable() and not any(c in ' "=' for c in value):
        return _cut(value, LOG_VALUE)
    try:
        return _cut(json.dumps(value, ensure_ascii=False, separators=(",", ":")), LOG_VALUE)
    except RecursionError:  # parsed a frame or two shallower than this
        return "…"


def log_entry(line: str, handle: str) -> LogEntry | None:
    """A daemon's log line (``board/launcher/logs.py`` writes a JSON object a line) made readable;
    None for any other line, shown as it is. Every part is the keeper's text: the template escapes
    it, and each is cut short here (the line itself is bounded by the report's own cap). The
    ``bot`` field is left out when it names ``handle``, the bot whose log this is."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # nested past the parser's depth: not ours either
        return None
    if not isinstance(record, dict):
        return None
    given = record.pop("at", None) or record.pop("time", None)
    stamp = given if isinstance(given, str) else "" if given is None else _shown(given)
    try:
        at = f"{parse_time(stamp):%H:%M:%S}"
    except ValueError:
        at = _cut(stamp, LOG_WORD)
    level = record.pop("level", "")
    level = level if isinstance(level, str) else _shown(level)
    message = next((record.pop(k) for k in ("event", "message", "msg") if k in record), "")
    if record.get("bot") == handle:
        del record["bot"]
    return LogEntry(
        at=at,
        stamp=_cut(stamp, LOG_WORD),
        level=_cut(level, LOG_WORD),
        tone=LOG_TONES.get(level.lower(), ""),
        message=_cut(message if isinstance(message, str) else _shown(message), LOG_VALUE),
        fields=[(_cut(str(key), LOG_WORD), _shown(value)) for key, value in record.items()],
    )


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("board.server.pages", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["markdown"] = markdown
    env.filters["when"] = when
    env.filters["last_line"] = last_line
    env.filters["log_entry"] = log_entry
    env.filters["escaped_controls"] = escaped_controls
    env.filters["highlight"] = highlight
    env.filters["heading_line"] = heading_line
    env.globals["claim_line"] = claim_line
    env.globals["fleet_badges"] = BADGES
    env.globals["fleet_pending"] = PENDING
    env.globals["fleet_orders_cap"] = RECENT_ORDERS
    env.globals["wake_outcomes"] = WAKE_OUTCOMES
    env.globals["run_states"] = RUN_STATES
    return env
