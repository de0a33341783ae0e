"""A daemon's text as a person is shown it: on the fleet page, by ``board doctor`` and by
``board fleet ls``.

What a daemon printed reaches the board in a keeper's report, so it is hostile: a terminal
escape or a line break in it must not act on the terminal or the page, nor start a line that
reads as the board's own. Both sides import this module; it imports nothing of the board.
"""

from __future__ import annotations

import json


def last_line(text: str | None, limit: int = 400) -> str:
    """The last non-blank line of a daemon's output, cut to ``limit`` at a word: why it stopped,
    in one line (the fleet page's card, ``board fleet ls`` and ``board doctor`` say the same).
    The daemon's own refusals, with their advice, fit whole."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    line = lines[-1] if lines else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def escaped_controls(text: str, keep: str = "\t") -> str:
    """A daemon's text as it is but for what would not read as itself: each character that is
    not printable (a line break, a control, a bidirectional override) as its JSON escape; one
    in ``keep`` stays. An override would reverse the text, and what follows it on the page."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else json.dumps(c)[1:-1] for c in text)
